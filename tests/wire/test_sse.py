"""The one SSE parser: line endings, fields, chunk boundaries, and the encoder as its inverse."""

from __future__ import annotations

import pytest

from llmvcr.wire.sse import SSEParser, encode_event, encode_events, parse_events

BODY = b'event: message_start\nid: 7\nretry: 3000\ndata: {"a": 1}\n\n: a comment\ndata: line one\ndata: line two\n\n'


@pytest.mark.parametrize("ending", [b"\n", b"\r\n", b"\r"])
def test_every_line_ending_gives_the_same_events(ending: bytes) -> None:
    events = parse_events(BODY.replace(b"\n", ending))
    assert events == [
        {"event": "message_start", "id": "7", "retry": 3000, "data": {"a": 1}},
        {"data": "line one\nline two"},
    ]


@pytest.mark.parametrize("size", [1, 2, 3, 7])
def test_events_split_across_chunks_anywhere(size: int) -> None:
    body = BODY.replace(b"\n", b"\r\n")
    parser = SSEParser(None)
    for i in range(0, len(body), size):
        parser.feed(body[i : i + size])
    parser.flush()
    assert parser.events == parse_events(BODY)


def test_offsets_are_kept_when_a_clock_is_given() -> None:
    import time

    parser = SSEParser(time.perf_counter())
    parser.feed(b"data: {}\n\n")
    assert parser.events[0]["t"] >= 0


def test_the_encoder_is_the_parsers_inverse() -> None:
    events = parse_events(BODY)
    wire = b"".join(chunk for _, chunk in encode_events(events))
    assert parse_events(wire) == events
    assert encode_event({"event": "ping", "data": {"x": 1}}) == b'event: ping\ndata: {"x":1}\n\n'
    assert b"retry: 3000\n" in wire and b"id: 7\n" in wire


def test_a_last_event_without_its_blank_line_still_counts() -> None:
    assert parse_events(b"data: [DONE]") == [{"data": "[DONE]"}]
