"""The header vocabulary: which request and response headers carry meaning and are kept, and which
carry credentials and never reach a cassette (redaction reads the latter). A provider's own headers
come from its wire description (``meaning_headers``, ``credential_headers``)."""

from __future__ import annotations

import re
from typing import Any

from .builtin import BUILT_IN

REQUEST_HEADERS = frozenset({"content-type"}.union(*(fmt.meaning_headers for fmt in BUILT_IN)))

RESPONSE_HEADERS = frozenset(
    {"content-type", "request-id", "x-request-id", "retry-after", "retry-after-ms", "x-should-retry"}
)

CREDENTIAL_HEADERS = frozenset(
    {"authorization", "x-api-key", "api-key", "cookie", "set-cookie", "proxy-authorization"}.union(
        *(fmt.credential_headers for fmt in BUILT_IN)
    )
)

_CREDENTIAL_WORDS = re.compile(r"auth|key|token|secret|signature|cookie|password", re.I)


def body_credentials(body: Any) -> list[str]:
    """The credentials a request body hands to a server the provider calls for the caller: the
    ``authorization_token`` of each of Anthropic's MCP-connector servers (``mcp_servers[]``), and the
    ``authorization`` and credential headers of each of OpenAI's remote MCP tools (``tools[type=mcp]``).
    Redaction learns them so they are replaced wherever they appear, whatever their shape."""
    if not isinstance(body, dict):
        return []
    servers = body.get("mcp_servers") or ()
    found: list[Any] = [s.get("authorization_token") for s in servers if isinstance(s, dict)]
    for tool in body.get("tools") or ():
        if isinstance(tool, dict) and tool.get("type") == "mcp":
            found.append(tool.get("authorization"))
            headers = tool.get("headers")
            if isinstance(headers, dict):
                found += [v for k, v in headers.items() if isinstance(k, str) and is_credential_header(k)]
    return [value for value in found if isinstance(value, str) and value]


def is_credential_header(name: str) -> bool:
    """A header that carries a credential: a known one, or one whose name says so (``X-Custom-Auth``)."""
    lower = name.lower()
    return lower in CREDENTIAL_HEADERS or bool(_CREDENTIAL_WORDS.search(lower))
