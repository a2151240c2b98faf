"""The Model Context Protocol on the wire: JSON-RPC 2.0 messages, and how one becomes an entry.

An MCP connection carries four kinds of message, each a JSON object:

- a request: ``{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {...}}``;
- a notification: a request without ``id`` (no answer is ever sent);
- a result: ``{"jsonrpc": "2.0", "id": 1, "result": {...}}``;
- an error: ``{"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "...", "data": ...}}``.

Either side may send requests and notifications: the client asks for ``tools/call``, the server
asks for ``sampling/createMessage`` or ``roots/list`` while it works on it.

A client request is one entry (``provider: mcp``): ``request.method`` is the JSON-RPC method,
``request.path`` the server (:func:`stdio_server`, :func:`http_server`), ``request.body`` the
``params`` (never the ``id``, which is the client's own counter); its response is ``200 {result}``
or ``400 {error}``, and its ``stream`` holds what arrived while it was in flight, each
``{"event": "server" | "client", "data": message, "t": ms after the request}``. A message that
arrived while no request was in flight is kept on the next request's stream with a negative ``t``.
"""

from __future__ import annotations

import importlib.util
import os
import re
from typing import Any
from urllib.parse import urlsplit

from ..cassette.entries import Entry, Request, Response

NAME = "mcp"
JSON = dict[str, Any]

# requests that read and change nothing on the server
READ_ONLY = frozenset(
    {"initialize", "tools/list", "resources/list", "resources/templates/list", "prompts/list"}
)
RESULT, ERROR = 200, 400
SERVER, CLIENT = "server", "client"


def is_mcp(entry: Entry) -> bool:
    """Whether ``entry`` is an MCP message (``provider: mcp``), not a model call."""
    return entry.provider == NAME


def kind(message: Any) -> str:
    """``"request"``, ``"notification"``, ``"result"``, ``"error"`` or ``"invalid"``."""
    if not isinstance(message, dict):
        return "invalid"
    if isinstance(message.get("method"), str):
        return "request" if "id" in message else "notification"
    if "id" in message and "error" in message:
        return "error"
    if "id" in message and "result" in message:
        return "result"
    return "invalid"


def request_of(server: str, message: JSON) -> Request:
    """The entry request of a client request: its method, the server, and its params (never its id)."""
    params = message.get("params")
    return Request(str(message["method"]), server, body=params if params is not None else None)


def response_of(answer: JSON, stream: list[JSON]) -> Response:
    """The entry response of a server's answer, with what arrived while the request was in flight."""
    if "error" in answer:
        return Response(ERROR, {}, body={"error": answer["error"]}, stream=stream or None)
    return Response(RESULT, {}, body={"result": answer.get("result")}, stream=stream or None)


def answer_of(response: Response, request_id: Any) -> JSON:
    """The JSON-RPC answer a recorded response makes to the request ``request_id`` asked now."""
    body = response.body if isinstance(response.body, dict) else {}
    if response.status >= 400 or "error" in body:
        error = body.get("error") or {"code": -32603, "message": "recorded error without a body"}
        return {"jsonrpc": "2.0", "id": request_id, "error": error}
    return {"jsonrpc": "2.0", "id": request_id, "result": body.get("result", {})}


def error_answer(request_id: Any, message: str, code: int = -32603) -> JSON:
    """A JSON-RPC error answer carrying an llmvcr error's message to the client."""
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


# -- naming a server as it stays the same from one machine to the next ----------------------------
_PYTHON = re.compile(r"^python[0-9.]*(?:\.exe)?$", re.IGNORECASE)
_KEY_WORD = re.compile(r"(?i)(key|token|secret|passw(?:or)?d|credential|auth)")
_ABSOLUTE = re.compile(r"^(?:/|[A-Za-z]:[\\/])")
REDACTED = "<REDACTED>"


def _file_name(value: str) -> str:
    name = os.path.basename(value.replace("\\", "/").rstrip("/")) or value
    return "python" if _PYTHON.match(name) else name


def stdio_server(command: str, args: list[str] | tuple[str, ...]) -> str:
    """A stdio server's name: its command's file name and its arguments, an absolute path by its file
    name (``/opt/venv/bin/python3.12 /home/me/server.py`` -> ``python server.py``), and the value of
    an argument that names a key (``--api-key X``, ``--token=X``) replaced. The environment is never
    part of it."""
    words = [_file_name(command)]
    secret_next = False
    for arg in args:
        arg = str(arg)
        if secret_next:
            words.append(REDACTED)
            secret_next = False
            continue
        flag, eq, _ = arg.partition("=")
        if arg.startswith("-") and _KEY_WORD.search(flag):
            if eq:
                words.append(f"{flag}={REDACTED}")
            else:
                words.append(arg)
                secret_next = True
            continue
        words.append(_file_name(arg) if _ABSOLUTE.match(arg) else arg)
    return "stdio:" + " ".join(words)


def http_server(url: str) -> str:
    """An HTTP server's name: its scheme, host and path, never its port (a test server's is random),
    query or credentials."""
    parts = urlsplit(str(url))
    return f"{parts.scheme}://{parts.hostname or ''}{parts.path or '/'}"


def sdk_installed() -> bool:
    """Whether the ``mcp`` SDK can be imported here (its client, not merely a folder named ``mcp``)."""
    try:
        return importlib.util.find_spec("mcp.client") is not None
    except (ImportError, ValueError):
        return False
