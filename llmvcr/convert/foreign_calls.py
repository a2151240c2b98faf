"""A foreign cassette's non-LLM interaction as an entry llmvcr answers from the file (see
:mod:`llmvcr.matching.other_calls`), or why it cannot be one."""

from __future__ import annotations

import json
from typing import Any

from ..cassette import Entry, Request, Response
from ..matching import default_request_hash
from ..matching.other_calls import OTHER, url_key
from .http_import import Exchange

# what a replayed non-LLM answer keeps of its headers: enough for the caller to read it
_KEPT = frozenset({"content-type", "content-length", "location", "etag", "last-modified", "cache-control"})


def other_entry(exchange: Exchange, position: int) -> Entry | str:
    """The entry that answers this interaction again, or why it is left out."""
    where = f"interaction {position} ({exchange.method.upper()} {exchange.uri})"
    headers = {k.lower(): v for k, v in exchange.response_headers}
    if not isinstance(exchange.status, int) or isinstance(exchange.status, bool):
        return f"{where} has no HTTP status; left out"
    body = exchange.response_body
    if body is not None and not isinstance(body, bytes):
        return f"{where} is not an LLM call and its body is not bytes; left out"
    if body and headers.get("content-encoding", "identity") != "identity":
        return f"{where} is not an LLM call and its body is compressed; left out"
    try:
        text = (body or b"").decode("utf-8")
    except UnicodeDecodeError:
        return f"{where} is not an LLM call and its body is binary; left out"
    kept = {k: v for k, v in headers.items() if k in _KEPT and k != "content-length"}
    answer: Any = text or None  # served as the bytes it was: JSON parsed back, text as text
    if text and "json" in kept.get("content-type", ""):
        try:
            answer = json.loads(text)
        except ValueError:
            return f"{where} is not an LLM call and its JSON body does not parse; left out"
    elif text:
        kept.setdefault("content-type", "text/plain")
    path, query = url_key(exchange.uri)
    request = Request(exchange.method.upper(), path, query=query)
    response = Response(exchange.status, kept, body=answer)
    return Entry(OTHER, request, response, default_request_hash(request.normalised()))
