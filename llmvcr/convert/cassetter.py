"""cassetter's cassettes: vcrpy's ``interactions`` list with typed bodies and integer statuses.

::

    - request: {method, uri, headers: {name: [values]}, body: {type: json, content: {...}}}
      response: {status: 200, headers: {...}, body: {type: json|text|binary|none, content: ...}}
      recorded_at: '2026-01-01T00:00:00Z'

``binary`` content is hex; cassetter decompresses bodies before it stores them.
"""

from __future__ import annotations

from typing import Any

from ..errors import CassetteFormatError
from ..wire.http_request import Parsed
from .encodings import hex_bytes
from .http_import import Body, Exchange, header_items

BODY_TYPES = ("json", "text", "binary", "none")


def is_cassetter(interactions: list[Any]) -> bool:
    """Whether an ``interactions`` list holds cassetter's typed bodies."""
    for raw in interactions:
        if not isinstance(raw, dict):
            continue
        for side in ("request", "response"):
            part = raw.get(side)
            body = part.get("body") if isinstance(part, dict) else None
            if isinstance(body, dict) and "type" in body and "string" not in body:
                return True
    return False


def _body(body: Any, path: str, position: int, side: str) -> Body:
    if body is None:
        return None
    kind = body.get("type") if isinstance(body, dict) else None
    if kind not in BODY_TYPES:
        raise CassetteFormatError(
            path,
            f"the {side} body type is {kind!r}, not one of cassetter's {', '.join(BODY_TYPES)}; "
            "restore the file or re-record it",
            entry=position,
        )
    content = body.get("content")
    if kind == "json":
        return Parsed(content)
    if kind == "text":
        return str(content or "").encode("utf-8")
    if kind == "binary":
        return hex_bytes(content, path, position)
    return None


def exchange_of(raw: dict[str, Any], position: int, path: str) -> Exchange:
    """One cassetter interaction (already checked to have a request and a response mapping)."""
    req, res = raw["request"], raw["response"]
    status = res.get("status")
    return Exchange(
        method=str(req.get("method", "GET")),
        uri=str(req.get("uri", "")),
        request_headers=header_items(req.get("headers")),
        request_body=_body(req.get("body"), path, position, "request"),
        status=status.get("code") if isinstance(status, dict) else status,
        response_headers=header_items(res.get("headers")),
        response_body=_body(res.get("body"), path, position, "response"),
    )
