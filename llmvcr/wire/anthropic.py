"""Anthropic's Messages API on the wire.

A call is ``POST /v1/messages`` (``/count_tokens`` counts) with ``anthropic-version``; ``"stream":
true`` in the body asks for server-sent events, each named (``event: message_start``) with a JSON
``data`` whose ``type`` repeats the name::

    message_start, (content_block_start, content_block_delta*, content_block_stop)*,
    message_delta, message_stop            (ping anywhere; an ``error`` event ends a failed stream)

An error is ``{"type": "error", "error": {"type": ..., "message": ...}}`` with its HTTP status.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..cassette.entries import Request
from .format import ApiKey, WireFormat

TERMINAL = frozenset({"message_stop", "error"})

JSON = dict[str, Any]


def asks_stream(request: Request) -> bool:
    """The body says ``"stream": true``."""
    return isinstance(request.body, dict) and request.body.get("stream") is True


def plain_request(request: Request) -> Request:
    """The same call without ``stream``."""
    if not isinstance(request.body, dict) or "stream" not in request.body:
        return request
    body = {k: v for k, v in request.body.items() if k != "stream"}
    return Request(request.method, request.path, body, request.query, request.headers)


def finished(events: list[JSON]) -> bool:
    """The stream reached ``message_stop`` (or the ``error`` event that ends a failed one)."""
    return any(
        isinstance(e.get("data"), dict) and e["data"].get("type") in TERMINAL for e in reversed(events)
    )


def events_of(request: Request, body: Any) -> list[JSON]:
    """The event stream the API sends for a final Message ``body``."""
    return events(body if isinstance(body, dict) else {})


def events(body: JSON, pieces: dict[int, list[str]] | None = None, *, done: bool = True) -> list[JSON]:
    """A Message body as the event stream that builds it, its text split as ``pieces`` says (one
    piece per block by default); ``done=False`` leaves out the closing ``message_delta``/``message_stop``."""
    usage = body.get("usage") or {}
    start = {**body, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 0}}
    out: list[JSON] = [{"event": "message_start", "data": {"type": "message_start", "message": start}}]

    def add(kind: str, **data: Any) -> None:
        out.append({"event": kind, "data": {"type": kind, **data}})

    for index, block in enumerate(body.get("content") or []):
        kind = block["type"]
        split = (pieces or {}).get(index)
        if kind == "text":
            add("content_block_start", index=index, content_block={"type": "text", "text": ""})
            for piece in split if split is not None else [block["text"]]:
                add("content_block_delta", index=index, delta={"type": "text_delta", "text": piece})
        elif kind == "thinking":
            add(
                "content_block_start",
                index=index,
                content_block={"type": "thinking", "thinking": "", "signature": ""},
            )
            for piece in split if split is not None else [block["thinking"]]:
                add("content_block_delta", index=index, delta={"type": "thinking_delta", "thinking": piece})
            if block.get("signature"):
                add(
                    "content_block_delta",
                    index=index,
                    delta={"type": "signature_delta", "signature": block["signature"]},
                )
        elif kind == "tool_use":
            add("content_block_start", index=index, content_block={**block, "input": {}})
            arguments = split[0] if split else json.dumps(block.get("input") or {})
            add(
                "content_block_delta",
                index=index,
                delta={"type": "input_json_delta", "partial_json": arguments},
            )
        else:
            add("content_block_start", index=index, content_block=block)
        add("content_block_stop", index=index)
    if done:
        add(
            "message_delta",
            delta={"stop_reason": body.get("stop_reason"), "stop_sequence": None},
            usage={
                "input_tokens": usage.get("input_tokens", 0),
                "output_tokens": usage.get("output_tokens", 0),
            },
        )
        add("message_stop")
    return out


def error_body(status: int, kind: str, message: str) -> JSON:
    """An error as the API sends it: ``kind`` is its error type (``overloaded_error``)."""
    return {"type": "error", "error": {"type": kind, "message": message}}


FORMAT = WireFormat(
    name="anthropic",
    hosts=("anthropic.com",),
    api_host="api.anthropic.com",
    agents=("anthropic", "asyncanthropic"),
    marker_headers=("anthropic-version",),
    meaning_headers=("anthropic-version", "anthropic-beta"),  # kept in the request: they change its meaning
    credential_headers=("x-api-key", "anthropic-user-profile-id"),
    sdk_headers={"anthropic-version": "2023-06-01"},  # every SDK version sends this one
    endpoints=re.compile(r"/messages(?:/count_tokens)?/?$"),
    seam_paths=(("/v1/messages", "anthropic-version"), ("/v1/messages/count_tokens", "anthropic-version")),
    asks_stream=asks_stream,
    plain_request=plain_request,
    events_of=events_of,
    finished=finished,
    error_body=error_body,
    api_key=ApiKey("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "x-api-key"),
)
