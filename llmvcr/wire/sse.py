"""Server-sent events: an incremental parser and the encoder that puts events back on the wire.

One parser serves the recorder (bytes as the SDK reads them, each event stamped with its arrival
offset) and the importers (a whole body read after the fact, no offsets). It follows the
WHATWG rules that matter for LLM streams: lines end in ``\\r\\n``, ``\\n`` or a bare ``\\r``;
``data:`` lines join with ``\\n``; a comment line starts with ``:``; ``event:``, ``id:`` and
``retry:`` are kept so a replayed stream carries them again.
"""

from __future__ import annotations

import functools
import time
from typing import Any

import orjson

from ..cassette import exactjson

_dumps = functools.partial(exactjson.dumps, scan=False)  # orjson, but an integer past 64 bits is kept
Event = dict[str, Any]  # {"event"?: name, "id"?: str, "retry"?: int, "data": json-or-text, "t"?: ms}


class SSEParser:
    """Splits a byte stream into events as it arrives.

    >>> parser = SSEParser(start=None)
    >>> parser.feed(b'event: ping\\ndata: {"a": 1}\\n\\n')
    >>> parser.events
    [{'event': 'ping', 'data': {'a': 1}}]

    With a ``start`` (a ``time.perf_counter()`` reading), each event gets ``t``: milliseconds after it.
    """

    def __init__(self, start: float | None) -> None:
        self.start = start
        self.events: list[Event] = []
        self._buffer = b""
        self._pending_cr = False  # a chunk ended in "\r": the next may start with its "\n"

    def feed(self, chunk: bytes) -> None:
        if self._pending_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self._pending_cr = chunk.endswith(b"\r")
        if b"\r" in chunk:
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        self._buffer += chunk
        while b"\n\n" in self._buffer:
            block, self._buffer = self._buffer.split(b"\n\n", 1)
            self._block(block)

    def flush(self) -> None:
        """The stream ended: an event left without its blank line still counts."""
        if self._buffer.strip():
            self._block(self._buffer)
        self._buffer = b""

    def _block(self, block: bytes) -> None:
        event: Event = {}
        data: list[str] = []
        for line in block.decode("utf-8", "replace").split("\n"):
            if not line or line.startswith(":"):
                continue
            key, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if key == "data":
                data.append(value)
            elif key in ("event", "id"):
                event[key] = value
            elif key == "retry" and value.isdigit():
                event["retry"] = int(value)
        if not event and not data:
            return
        text = "\n".join(data)
        parsed: Any = text
        if text[:1] in ("{", "["):
            try:
                parsed = exactjson.loads(text, constants=False)  # an integer past 64 bits stays one
            except (ValueError, RecursionError):
                parsed = text
        event["data"] = parsed
        if self.start is not None:
            event["t"] = round((time.perf_counter() - self.start) * 1000, 1)
        self.events.append(event)


def parse_events(body: bytes) -> list[Event]:
    """Every event of a whole ``text/event-stream`` body, without arrival offsets."""
    parser = SSEParser(None)
    parser.feed(body)
    parser.flush()
    return parser.events


def encode_event(event: Event) -> bytes:
    """One event on the wire: its ``event:``/``id:``/``retry:`` lines, one ``data:`` line per line of data."""
    head = b""
    for key in ("event", "id", "retry"):
        if event.get(key) is not None:
            head += f"{key}: {event[key]}".encode() + b"\n"
    data = event.get("data")
    if not isinstance(data, str):
        # Compact JSON holds no raw newline (orjson escapes them in strings): a single data line.
        return head + b"data: " + _dumps(data) + b"\n\n"
    lines = "".join(f"data: {line}\n" for line in data.split("\n"))
    return head + lines.encode() + b"\n"


def encode_events(events: list[Event]) -> list[tuple[Any, bytes]]:
    """``(t, encode_event(event))`` for each event, sharing the head of events of one name."""
    heads: dict[str | None, bytes] = {}
    dumps, orjson_dumps = _dumps, orjson.dumps
    out: list[tuple[Any, bytes]] = []
    for event in events:
        name = event.get("event")
        data = event.get("data")
        if (
            isinstance(data, str)
            or "id" in event
            or "retry" in event
            or not (name is None or type(name) is str)
        ):
            out.append((event.get("t"), encode_event(event)))
            continue
        head = heads.get(name)
        if head is None:
            head = heads[name] = (b"" if name is None else b"event: " + name.encode() + b"\n") + b"data: "
        try:
            text = orjson_dumps(data)
        except TypeError:  # an integer past 64 bits: written as Python's json does
            text = dumps(data)
        out.append((event.get("t"), head + text + b"\n\n"))
    return out
