"""The header vocabulary: which request and response headers carry meaning and are kept, and which
carry credentials and never reach a cassette (redaction reads the latter). A provider's own headers
come from its wire description (``meaning_headers``, ``credential_headers``)."""

from __future__ import annotations

import re

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


def is_credential_header(name: str) -> bool:
    """A header that carries a credential: a known one, or one whose name says so (``X-Custom-Auth``)."""
    lower = name.lower()
    return lower in CREDENTIAL_HEADERS or bool(_CREDENTIAL_WORDS.search(lower))
