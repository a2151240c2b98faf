"""Faithful streams: event boundaries and arrival offsets, recorded pacing on replay, and
breaking out, closing and cancelling behaving as they do live.

The loopback server's ``__slow_stream__`` marker sleeps 50 ms between events, so a recorded
stream has a known shape. Timing checks are generous ratios against the recorded offsets only.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest

import llmvcr

SLOW = [{"role": "user", "content": "__slow_stream__ a b c"}]


def _chat_stream(client: Any) -> Any:
    return client.chat.completions.create(model="gpt-test", messages=SLOW, stream=True)


def _timed(stream: Any) -> tuple[list[Any], list[float]]:
    """Iterate a stream created just now; return its items and each one's offset in ms."""
    start = time.perf_counter()
    items, offsets = [], []
    for item in stream:
        items.append(item)
        offsets.append((time.perf_counter() - start) * 1000)
    return items, offsets


def test_each_event_keeps_its_boundary_and_arrival_offset(anthropic_client: Any, cassette_dir: Any) -> None:
    with llmvcr.recording("slow") as cassette:
        live = list(
            anthropic_client.messages.create(model="claude-test", max_tokens=32, messages=SLOW, stream=True)
        )
    (entry,) = cassette.entries
    events = entry.response.stream or []
    # one recorded event per SSE event the server sent, with its name and parsed data
    names = [e["event"] for e in events]
    assert names[0] == "message_start" and names[-1] == "message_stop" and "ping" in names
    assert [e["data"]["type"] for e in events] == names
    assert [e.type for e in live] == [n for n in names if n != "ping"]  # the SDK drops pings itself
    offsets = [e["t"] for e in events]
    assert all(isinstance(t, float) for t in offsets)
    gaps = [b - a for a, b in itertools.pairwise(offsets)]
    assert min(gaps) >= 30, gaps  # the server sleeps 50 ms between events
    assert not entry.response.truncated
    # the file keeps them too
    loaded = llmvcr.load_cassette(cassette_dir / "slow.yaml")
    assert [e["t"] for e in loaded.entries[0].response.stream or []] == offsets


def test_replay_speed_reproduces_the_recorded_pacing(openai_client: Any, request: Any) -> None:
    with llmvcr.recording("pacing") as cassette:
        live, _ = _timed(_chat_stream(openai_client))
    recorded = [e["t"] for e in cassette.entries[0].response.stream or []]
    span = recorded[-1]
    assert span >= 250  # 8 frames, 50 ms apart
    request.getfixturevalue("no_network")

    elapsed: dict[float | None, float] = {}
    for speed in (None, 1.0, 2.0, 0.5):
        with llmvcr.recording("pacing", record_mode="none", replay_speed=speed):
            start = time.perf_counter()
            items, offsets = _timed(_chat_stream(openai_client))
            elapsed[speed] = (time.perf_counter() - start) * 1000
        assert [i.model_dump() for i in items] == [i.model_dump() for i in live]
        if speed == 1.0:
            # each chunk arrives no earlier than (most of) its recorded offset; [DONE] is not yielded
            for got, want in zip(offsets, recorded, strict=False):
                assert got >= 0.8 * want - 5, (offsets, recorded)

    assert elapsed[None] < 0.25 * span, elapsed  # instant by default
    assert elapsed[1.0] >= 0.8 * span, elapsed
    assert elapsed[2.0] >= 0.8 * span / 2.0, elapsed
    assert elapsed[0.5] >= 0.8 * span / 0.5, elapsed
    assert elapsed[2.0] < elapsed[1.0] < elapsed[0.5], elapsed


async def test_async_replay_speed_paces_with_asyncio_sleep(async_anthropic_client: Any, request: Any) -> None:
    async def run() -> tuple[list[str], float]:
        start = time.perf_counter()
        stream = await async_anthropic_client.messages.create(
            model="claude-test", max_tokens=32, messages=SLOW, stream=True
        )
        types = [event.type async for event in stream]
        return types, (time.perf_counter() - start) * 1000

    with llmvcr.recording("apacing") as cassette:
        live, _ = await run()
    span = (cassette.entries[0].response.stream or [])[-1]["t"]
    request.getfixturevalue("no_network")
    ticks = 0

    async def ticker() -> None:  # the loop stays free while a paced replay waits
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    tick_task = asyncio.create_task(ticker())
    with llmvcr.recording("apacing", record_mode="none", replay_speed=2.0):
        types, elapsed = await run()
    tick_task.cancel()
    assert types == live
    assert elapsed >= 0.8 * span / 2.0
    assert ticks >= 5


def test_breaking_out_and_closing_while_recording_keeps_what_was_received(
    openai_client: Any, anthropic_client: Any, server: Any, request: Any
) -> None:
    def break_and_close() -> tuple[list[Any], type[BaseException], list[str]]:
        stream = _chat_stream(openai_client)
        received = []
        for chunk in stream:
            received.append(chunk.model_dump())
            if len(received) == 2:
                break
        stream.close()
        with pytest.raises(Exception) as after_close:  # reading on fails, as on a closed connection
            next(stream)
        with anthropic_client.messages.stream(model="claude-test", max_tokens=32, messages=SLOW) as helper:
            seen = [event.type for _, event in zip(range(3), helper, strict=False)]
        return received, after_close.type, seen

    with llmvcr.recording("early") as cassette:
        received, live_error, seen = break_and_close()
    chat, helper_entry = cassette.entries
    assert chat.response.truncated and helper_entry.response.truncated
    assert len(chat.response.stream or []) == 2  # not the 8 frames the server would have sent
    assert "message_stop" not in [e.get("event") for e in helper_entry.response.stream or []]

    before = server.request_count
    attempts = request.getfixturevalue("no_network")
    with llmvcr.recording("early", record_mode="none"):
        assert break_and_close() == (received, live_error, seen)
    with llmvcr.recording("early", record_mode="none"):
        again: list[Any] = []
        with pytest.raises(llmvcr.TruncatedStreamError, match=r"early\.yaml: entry 0 .*cut short after 2"):
            again.extend(
                c.model_dump() for c in _chat_stream(openai_client)
            )  # what was received, then the cut
        replayed: list[str] = []
        with pytest.raises(llmvcr.TruncatedStreamError, match=r"early\.yaml: entry 1 "):
            with anthropic_client.messages.stream(
                model="claude-test", max_tokens=32, messages=SLOW
            ) as helper:
                replayed.extend(event.type for event in helper)
    assert again == received
    assert replayed[: len(seen)] == seen and "message_stop" not in replayed
    assert server.request_count == before and attempts == []


async def test_async_close_while_recording_marks_the_entry_truncated(
    async_openai_client: Any, request: Any
) -> None:
    async def first_then_close() -> tuple[Any, type[BaseException]]:
        stream = await _chat_stream(async_openai_client)
        first = await stream.__anext__()
        await stream.close()
        with pytest.raises(
            Exception
        ) as after_close:  # reading a closed stream fails, whatever the SDK raises
            await stream.__anext__()
        return first, after_close.type

    with llmvcr.recording("aclose") as cassette:
        first, live_error = await first_then_close()
    (entry,) = cassette.entries
    assert entry.response.truncated and len(entry.response.stream or []) >= 1
    request.getfixturevalue("no_network")
    with llmvcr.recording("aclose", record_mode="none"):
        replayed_first, replay_error = await first_then_close()
    chunks: list[Any] = []
    with llmvcr.recording("aclose", record_mode="none"):
        with pytest.raises(llmvcr.TruncatedStreamError, match="aclose.yaml: entry 0"):  # never a clean end
            async for c in await _chat_stream(async_openai_client):
                chunks.append(c)
    assert replayed_first.model_dump() == first.model_dump()
    assert replay_error is live_error  # closing a replayed stream behaves as closing a live one
    assert chunks[0].model_dump() == first.model_dump()
    assert len(chunks) == len(entry.response.stream or [])


async def _cancel_after(client: Any, n: int) -> tuple[list[str], bool]:
    """Start reading a slow stream in a task, cancel it after ``n`` events; then use the client again."""
    seen: list[str] = []

    async def consume() -> None:
        stream = await client.messages.create(model="claude-test", max_tokens=32, messages=SLOW, stream=True)
        async for event in stream:
            seen.append(event.type)

    task = asyncio.create_task(consume())
    while len(seen) < n and not task.done():
        await asyncio.sleep(0.005)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    after = await client.messages.create(
        model="claude-test", max_tokens=32, messages=[{"role": "user", "content": "after the cancel"}]
    )
    assert isinstance(after, anthropic.types.Message) and after.content[0].text == "Echo: after the cancel"
    return seen, task.cancelled()


async def test_cancelling_an_async_stream_behaves_like_live(
    async_anthropic_client: Any, server: Any, request: Any
) -> None:
    with llmvcr.recording("cancel") as cassette:
        live_seen, live_cancelled = await _cancel_after(async_anthropic_client, 3)
    assert live_cancelled and len(live_seen) >= 3 and "message_stop" not in live_seen
    streamed, after = cassette.entries
    assert streamed.response.truncated and after.response.stream is None

    before = server.request_count
    attempts = request.getfixturevalue("no_network")
    with llmvcr.recording("cancel", record_mode="none", replay_speed=1.0) as replay:
        seen, cancelled = await _cancel_after(async_anthropic_client, 2)
        assert len(replay.unplayed) == 0
    assert cancelled  # CancelledError reached the awaiting code, and the client served the next call
    assert len(seen) >= 2 and seen == live_seen[: len(seen)] and "message_stop" not in seen
    assert server.request_count == before and attempts == []


def test_a_truncated_stream_read_further_on_replay_fails_at_the_cut(openai_client: Any) -> None:
    """A closed-early recording replays its events, then fails where the recording stopped, naming
    the cassette and the entry: never a clean end that passes a shortened answer off as whole."""
    with llmvcr.recording("trunc"):
        stream = _chat_stream(openai_client)
        next(iter(stream))
        stream.close()
    chunks: list[Any] = []
    with llmvcr.recording("trunc", record_mode="none"):
        with pytest.raises(llmvcr.TruncatedStreamError, match=r"llmvcr: .*trunc\.yaml: entry 0 .*cut short"):
            chunks.extend(_chat_stream(openai_client))
    assert len(chunks) == 1 and isinstance(chunks[0], openai.types.chat.ChatCompletionChunk)


CUT = [{"role": "user", "content": "a b c d e f g"}]
CUT_TEXT = "a b c d e f g"


def _sync_streams(an: Any, oa: Any, google: Any) -> dict[str, Any]:
    """Every streamed call shape of the three SDKs, each a callable that starts the stream."""
    return {
        "anthropic create": lambda: an.messages.create(
            model="claude-test", max_tokens=32, messages=CUT, stream=True
        ),
        "anthropic messages.stream": lambda: an.messages.stream(
            model="claude-test", max_tokens=32, messages=CUT
        ).__enter__(),
        "openai chat": lambda: oa.chat.completions.create(model="gpt-test", messages=CUT, stream=True),
        "openai chat.stream": lambda: oa.chat.completions.stream(model="gpt-test", messages=CUT).__enter__(),
        "openai responses": lambda: oa.responses.create(model="gpt-test", input=CUT_TEXT, stream=True),
        "openai responses.stream": lambda: oa.responses.stream(model="gpt-test", input=CUT_TEXT).__enter__(),
        "google": lambda: google.models.generate_content_stream(model="gemini-x", contents=CUT_TEXT),
    }


def _async_streams(an: Any, oa: Any, google: Any) -> dict[str, Any]:
    """The async twins: each callable gives an awaitable of an async iterator."""

    async def entered(manager: Any) -> Any:
        return await manager.__aenter__()

    return {
        "anthropic create": lambda: an.messages.create(
            model="claude-test", max_tokens=32, messages=CUT, stream=True
        ),
        "anthropic messages.stream": lambda: entered(
            an.messages.stream(model="claude-test", max_tokens=32, messages=CUT)
        ),
        "openai chat": lambda: oa.chat.completions.create(model="gpt-test", messages=CUT, stream=True),
        "openai chat.stream": lambda: entered(oa.chat.completions.stream(model="gpt-test", messages=CUT)),
        "openai responses": lambda: oa.responses.create(model="gpt-test", input=CUT_TEXT, stream=True),
        "openai responses.stream": lambda: entered(oa.responses.stream(model="gpt-test", input=CUT_TEXT)),
        "google": lambda: google.aio.models.generate_content_stream(model="gemini-x", contents=CUT_TEXT),
    }


STREAM_KINDS = list(_sync_streams(None, None, None))


def _google_for(kind: str, request: Any) -> Any:
    """The google-genai client, for its own case only: the oldest CI job installs no google-genai."""
    if kind != "google":
        return None
    pytest.importorskip("google.genai")
    return request.getfixturevalue("google_client")


def _is_llmvcrs_own(error: BaseException, path: str) -> None:
    """The cut reaches the caller as llmvcr's error itself, naming the file and the entry; not as an
    SDK's connection error that holds it as its cause."""
    assert type(error) is llmvcr.TruncatedStreamError, (
        f"{type(error).__module__}.{type(error).__name__}: {error}"
    )
    assert str(error).startswith("llmvcr: ") and f"{path}: entry 0 " in str(error)
    assert error.__cause__ is None


@pytest.mark.parametrize("kind", STREAM_KINDS)
def test_a_cut_stream_read_further_raises_llmvcrs_own_error(
    kind: str, anthropic_client: Any, openai_client: Any, server: Any, request: Any
) -> None:
    start = _sync_streams(anthropic_client, openai_client, _google_for(kind, request))[kind]
    with llmvcr.recording("cut") as cassette:
        stream = iter(start())
        live = [next(stream), next(stream)]  # then the test stops reading, as a caller may
    assert cassette.entries[0].response.truncated
    before, attempts = server.request_count, request.getfixturevalue("no_network")
    read: list[Any] = []
    with llmvcr.recording("cut", record_mode="none"):
        with pytest.raises(Exception) as cut:
            read.extend(start())
    _is_llmvcrs_own(cut.value, "cut.yaml")
    assert len(read) >= len(live)  # what was received came first, then the cut
    assert server.request_count == before and attempts == []


@pytest.mark.parametrize("kind", STREAM_KINDS)
async def test_an_async_cut_stream_read_further_raises_llmvcrs_own_error(
    kind: str,
    async_anthropic_client: Any,
    async_openai_client: Any,
    server: Any,
    request: Any,
    cassette_dir: Path,
) -> None:
    start = _async_streams(async_anthropic_client, async_openai_client, _google_for(kind, request))[kind]

    async def read(limit: int | None = None) -> list[Any]:
        out: list[Any] = []
        async for item in await start():
            out.append(item)
            if len(out) == limit:
                break
        return out

    with llmvcr.recording("acut") as cassette:
        live = await read()
    # written as a caller that stopped after two events leaves it (aiohttp, google-genai's async
    # transport when installed, holds a short body whole before the caller stops: it records it whole)
    (entry,) = cassette.entries
    cut = llmvcr.Cassette()
    cut.append(
        replace(
            entry, response=replace(entry.response, stream=(entry.response.stream or [])[:2], truncated=True)
        )
    )
    llmvcr.save_cassette(cassette_dir / "acut.yaml", cut)
    assert len(live) > 2
    before, attempts = server.request_count, request.getfixturevalue("no_network")
    with llmvcr.recording("acut", record_mode="none"):
        with pytest.raises(Exception) as cut:
            await read()
    _is_llmvcrs_own(cut.value, "acut.yaml")
    assert server.request_count == before and attempts == []


def test_a_stream_left_unread_is_kept_when_the_cassette_closes(openai_client: Any, cassette_dir: Any) -> None:
    with llmvcr.recording("left-open") as cassette:
        stream = openai_client.chat.completions.create(
            model="gpt-test", stream=True, messages=[{"role": "user", "content": "a b c d e f"}]
        )
        first = next(iter(stream))  # read one chunk, then neither finish nor close it
        assert len(cassette) == 0
    assert first.choices is not None and stream is not None  # still referenced: nothing closed it
    entry = llmvcr.load_cassette(cassette_dir / "left-open.yaml").entries[0]
    assert entry.response.truncated and len(entry.response.stream or []) >= 1


def test_re_recording_an_unchanged_stream_changes_no_line(
    openai_client: Any, cassette_dir: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Re-recording a stream whose events did not change keeps its recorded offsets, so a PR that
    re-records it shows no change; a changed stream is written with its new offsets."""
    import difflib

    texts = []
    for run in ("first", "second"):
        monkeypatch.setenv("LLMVCR_RUN_ID", run)  # two runs: "all" replaces once per run
        with llmvcr.recording("timing", record_mode="all"):
            list(
                openai_client.chat.completions.create(
                    model="gpt-test",
                    messages=[{"role": "user", "content": "one two three four five six"}],
                    stream=True,
                )
            )
        texts.append((cassette_dir / "timing.yaml").read_text())
    changed = [
        line
        for line in difflib.unified_diff(texts[0].splitlines(), texts[1].splitlines(), lineterm="", n=0)
        if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))
    ]
    # the events are unchanged, so the earlier offsets are kept: the file is as it was, but for the
    # date of the recording (recorded_with.at, which max_age reads), when the second run fell in a
    # later second
    assert [line for line in changed if not line[1:].lstrip().startswith("at: '")] == []
    assert len(changed) in (0, 2)
    cassette = llmvcr.load_cassette(cassette_dir / "timing.yaml")
    assert all("t" in event for event in cassette.entry(0).response.stream or [])  # pacing is kept


def test_only_an_unchanged_stream_takes_its_earlier_offsets() -> None:
    from llmvcr.cassette.entries import Entry, Request, Response
    from llmvcr.storage.kept_timing import EarlierTimings

    def entry(texts: list[str], offsets: list[float]) -> Entry:
        stream = [{"data": {"text": t}, "t": o} for t, o in zip(texts, offsets, strict=True)]
        return Entry("openai", Request("POST", "/v1/chat/completions"), Response(200, stream=stream), "h1")

    earlier = EarlierTimings([entry(["a", "b"], [1.0, 2.0])])
    changed = earlier.keep(entry(["a", "c"], [5.0, 6.0]))
    assert [e["t"] for e in changed.response.stream or []] == [5.0, 6.0]
    same = earlier.keep(entry(["a", "b"], [5.0, 6.0]))
    assert [e["t"] for e in same.response.stream or []] == [1.0, 2.0]
    again = earlier.keep(entry(["a", "b"], [7.0, 8.0]))  # each earlier recording is taken once
    assert [e["t"] for e in again.response.stream or []] == [7.0, 8.0]


def test_a_body_the_transport_already_holds_is_recorded_when_the_sdk_asks_to_stream(tmp_path: Path) -> None:
    # anthropic 2.17 sends every request with stream=True and reads it after; an in-memory
    # transport hands back a response whose body is already read, so it never streams through
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, json=MESSAGE_REPLY)

    client = anthropic.Anthropic(
        api_key="sk-ant-api03-SENTINEL-anthropic-key-0123456789",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    path = tmp_path / "held.yaml"
    with llmvcr.use_cassette(path, record_mode="all"):
        with client.messages.with_streaming_response.create(**MESSAGE_CALL) as live:
            recorded = live.parse().model_dump()
    with llmvcr.use_cassette(path, record_mode="none") as cassette:
        assert client.messages.create(**MESSAGE_CALL).model_dump() == recorded
    assert cassette.entries[0].response.body == MESSAGE_REPLY
    assert not cassette.entries[0].response.truncated


MESSAGE_CALL: dict[str, Any] = {
    "model": "claude-test",
    "max_tokens": 16,
    "messages": [{"role": "user", "content": "held"}],
}
MESSAGE_REPLY: dict[str, Any] = {
    "id": "msg_held",
    "type": "message",
    "role": "assistant",
    "model": "claude-test",
    "content": [{"type": "text", "text": "held whole"}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 1, "output_tokens": 2},
}


def test_an_openai_chat_stream_read_to_done_is_not_written_truncated(
    openai_client: Any, cassette_dir: Path
) -> None:
    """openai's SDK stops at ``[DONE]`` and closes the response before its bytes run out: the stream
    is whole, and replays to its end."""
    with llmvcr.recording("whole"):
        live = [c.model_dump() for c in _chat_stream(openai_client)]
    entry = llmvcr.load_cassette(cassette_dir / "whole.yaml").entries[0]
    assert (entry.response.stream or [])[-1]["data"] == "[DONE]"
    assert entry.response.truncated is False
    with llmvcr.recording("whole", record_mode="none"):
        assert [c.model_dump() for c in _chat_stream(openai_client)] == live


def test_a_complete_stream_once_written_truncated_replays_whole(
    openai_client: Any, cassette_dir: Path
) -> None:
    """Files written before the fix say ``truncated: true`` of a stream that holds ``[DONE]``: it is whole."""
    with llmvcr.recording("old-flag"):
        live = [c.model_dump() for c in _chat_stream(openai_client)]
    path = cassette_dir / "old-flag.yaml"
    text = path.read_text()
    path.write_text(text.replace("  response:\n", "  response:\n    truncated: true\n", 1))
    assert llmvcr.load_cassette(path).entries[0].response.truncated
    with llmvcr.recording("old-flag", record_mode="none"):
        assert [c.model_dump() for c in _chat_stream(openai_client)] == live
