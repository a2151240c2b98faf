"""A recorded answer served over HTTP: the bytes and headers every seam serves, events paced as recorded.

The headers never served and the stream's schedule (``replay_speed``, or as fast as possible) are
the in-process seams' own (``llmvcr.providers._streams``), so the proxy serves what they do.
A stream whose recording ended in a failure (a dropped connection, or a caller that stopped
reading) ends the same way: its events, a comment line saying why, then the connection drops, and
the SDK raises its own connection error where the recording stopped.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from ..cassette.entries import Response
from ..providers._streams import schedule, served_headers

Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Prepared = tuple[Response, list[tuple[bytes, bytes]], list[tuple[float, bytes]]]

_prepared: dict[int, Prepared] = {}  # id(recorded response) -> its bytes, served again without encoding
_lock = threading.Lock()
_MAX_PREPARED = 4096


class StreamCut(ConnectionAbortedError):
    """Raised inside the app to drop the connection where a recorded stream was cut."""


def prepared(recorded: Response, speed: float | None) -> Prepared:
    """The headers and ``(wait, bytes)`` chunks for ``recorded``, encoded once per entry."""
    if speed:  # paced: the waits depend on the speed, and a paced replay is not the fast path
        return recorded, _headers(recorded), schedule(recorded, speed)
    made = _prepared.get(id(recorded))
    if made is not None and made[0] is recorded:
        return made
    made = (recorded, _headers(recorded), schedule(recorded, None))
    with _lock:
        if len(_prepared) >= _MAX_PREPARED:
            _prepared.clear()
        _prepared[id(recorded)] = made  # the tuple holds the response: its id is not reused meanwhile
    return made


def _headers(recorded: Response) -> list[tuple[bytes, bytes]]:
    headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in served_headers(recorded)]
    if recorded.stream is None and not recorded.failure:
        size = sum(len(chunk) for _, chunk in schedule(recorded, None))
        headers.append((b"content-length", str(size).encode("ascii")))
    headers.append((b"x-llmvcr", b"replayed"))
    return headers


async def serve_entry(send: Send, receive: Receive, recorded: Response, speed: float | None) -> None:
    """Send ``recorded`` as the HTTP answer; a stream event by event at ``speed`` (None: at once)."""
    _, headers, chunks = prepared(recorded, speed)
    await send({"type": "http.response.start", "status": recorded.status, "headers": headers})
    if recorded.stream is None and not recorded.failure:
        await send({"type": "http.response.body", "body": chunks[0][1]})
        return
    for wait, chunk in chunks:
        if wait:
            await asyncio.sleep(wait)
        await send({"type": "http.response.body", "body": chunk, "more_body": True})
    if recorded.failure:
        if recorded.stream is not None:  # an SSE comment: clients skip it, a person reading curl sees why
            note = recorded.failure.replace("\r", " ").replace("\n", " ")
            await send({"type": "http.response.body", "body": f": {note}\n\n".encode(), "more_body": True})
        raise StreamCut(recorded.failure)
    await send({"type": "http.response.body", "body": b""})
