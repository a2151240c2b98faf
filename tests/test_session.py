"""Match modes, repeats, divergence policies, resume and concurrency."""

from __future__ import annotations

import asyncio
import threading
import warnings
from pathlib import Path
from typing import Any

import pytest

import llmvcr


def ask(client: Any, text: str) -> str:
    return client.messages.create(model="claude-test", max_tokens=16,
                                  messages=[{"role": "user", "content": text}]).content[0].text


def test_three_identical_requests_replay_three_answers_in_order(anthropic_client: Any) -> None:
    with llmvcr.recording("thrice"):
        live = [ask(anthropic_client, "__counter__ same") for _ in range(3)]
    assert len(set(live)) == 3
    with llmvcr.recording("thrice", record_mode="none") as cassette:
        assert [ask(anthropic_client, "__counter__ same") for _ in range(3)] == live
        with pytest.raises(llmvcr.ReplayDivergence, match="already played"):
            ask(anthropic_client, "__counter__ same")
    assert cassette.unplayed == []


def test_allow_playback_repeats(anthropic_client: Any) -> None:
    with llmvcr.recording("repeat"):
        first = ask(anthropic_client, "once")
    with llmvcr.recording("repeat", record_mode="none", allow_playback_repeats=True):
        assert [ask(anthropic_client, "once") for _ in range(4)] == [first] * 4


def test_sequential_mode_serves_in_order_whatever_the_content(anthropic_client: Any) -> None:
    with llmvcr.recording("seq"):
        live = [ask(anthropic_client, f"request {i} at 12:0{i}") for i in range(3)]
    with llmvcr.recording("seq", mode="sequential", record_mode="none"):
        assert [ask(anthropic_client, f"volatile {i}") for i in range(3)] == live
        with pytest.raises(llmvcr.ReplayDivergence):
            ask(anthropic_client, "a fourth")


def test_loose_mode_matches_the_last_user_message_only(anthropic_client: Any) -> None:
    with llmvcr.recording("loose"):
        live = anthropic_client.messages.create(model="claude-test", max_tokens=16, system="v1",
                                                messages=[{"role": "user", "content": "the question"}]).content[0].text
    with llmvcr.recording("loose", mode="loose", record_mode="none"):
        again = anthropic_client.messages.create(model="claude-other", max_tokens=99, system="v2",
                                                 messages=[{"role": "user", "content": "the question"}]).content[0].text
        assert again == live
        with pytest.raises(llmvcr.ReplayDivergence):
            ask(anthropic_client, "another question")


def test_unplayed_entries_are_reported_and_pruned(anthropic_client: Any, cassette_dir: Path) -> None:
    with llmvcr.recording("prune"):
        ask(anthropic_client, "kept")
        ask(anthropic_client, "dropped")
    with llmvcr.recording("prune", record_mode="none") as cassette:
        ask(anthropic_client, "kept")
    assert [e.request.body["messages"][0]["content"] for e in cassette.unplayed] == ["dropped"]
    with llmvcr.recording("prune", record_mode="none", prune=True):
        ask(anthropic_client, "kept")
    assert len(llmvcr.load_cassette(cassette_dir / "prune.yaml")) == 1


def test_on_divergence_warn_serves_positionally(anthropic_client: Any) -> None:
    with llmvcr.recording("warn"):
        first = ask(anthropic_client, "first")
    with llmvcr.recording("warn", on_divergence="warn"):
        with pytest.warns(llmvcr.ReplayDivergenceWarning, match="request.body.messages\\[0\\].content"):
            assert ask(anthropic_client, "changed") == first


def test_on_divergence_live_resumes_and_appends(anthropic_client: Any, server: Any, cassette_dir: Path) -> None:
    with llmvcr.recording("resume"):
        a = ask(anthropic_client, "step 1")
    before = server.request_count
    with llmvcr.recording("resume", on_divergence="live"):
        assert ask(anthropic_client, "step 1") == a  # replayed
        assert server.request_count == before
        b = ask(anthropic_client, "step 2")  # the cassette ends: from here on, live and recorded
        assert server.request_count == before + 1
    with llmvcr.recording("resume", record_mode="none"):
        assert [ask(anthropic_client, "step 1"), ask(anthropic_client, "step 2")] == [a, b]


def test_diff_shortens_long_strings_around_the_difference(anthropic_client: Any) -> None:
    long_a = "x" * 300 + "ALPHA" + "y" * 300
    with llmvcr.recording("long"):
        ask(anthropic_client, long_a)
    with llmvcr.recording("long"):
        with pytest.raises(llmvcr.ReplayDivergence) as info:
            ask(anthropic_client, long_a.replace("ALPHA", "BETA!"))
    text = str(info.value)
    assert "ALPHA" in text and "BETA!" in text and "x" * 300 not in text
    assert info.value.diff[0][0] == "request.body.messages[0].content"


def test_fifty_way_gather_records_and_replays_out_of_order(server: Any) -> None:
    import anthropic

    async def one(client: Any, i: int) -> str:
        m = await client.messages.create(model="claude-test", max_tokens=16,
                                                         messages=[{"role": "user", "content": f"q{i}"}])
        return m.content[0].text

    async def run(order: list[int]) -> dict[int, str]:
        # a client per event loop: its connection pool belongs to the loop that opened it
        client = anthropic.AsyncAnthropic(api_key="sk-ant-test-key-0000", base_url=server.url, max_retries=0)
        results = await asyncio.gather(*(one(client, i) for i in order))
        return dict(zip(order, results))

    with llmvcr.recording("gather") as recorded:
        live = asyncio.run(run(list(range(50))))
    assert len(recorded.entries) == 50
    with llmvcr.recording("gather", record_mode="none") as replayed:
        again = asyncio.run(run(list(reversed(range(50)))))
    assert again == live and all(live[i] == f"Echo: q{i}" for i in range(50))
    assert replayed.unplayed == []


def test_threads_record_and_replay(anthropic_client: Any) -> None:
    def work(results: dict[int, str], i: int) -> None:
        results[i] = ask(anthropic_client, f"thread {i}")

    for mode in ("once", "none"):
        results: dict[int, str] = {}
        with llmvcr.recording("threads", record_mode=mode):
            threads = [threading.Thread(target=work, args=(results, i)) for i in range(16)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        assert results == {i: f"Echo: thread {i}" for i in range(16)}


def test_concurrent_cassettes_are_scoped_to_their_task(async_anthropic_client: Any, cassette_dir: Path) -> None:
    async def in_cassette(name: str, text: str) -> int:
        with llmvcr.recording(name) as cassette:
            for _ in range(3):
                await async_anthropic_client.messages.create(model="claude-test", max_tokens=8,
                                                             messages=[{"role": "user", "content": text}])
                await asyncio.sleep(0)
            return len(cassette.entries)

    async def both() -> list[int]:
        return list(await asyncio.gather(in_cassette("task-a", "a"), in_cassette("task-b", "b")))

    assert asyncio.run(both()) == [3, 3]
    a = llmvcr.load_cassette(cassette_dir / "task-a.yaml")
    b = llmvcr.load_cassette(cassette_dir / "task-b.yaml")
    assert {e.request.body["messages"][0]["content"] for e in a} == {"a"}
    assert {e.request.body["messages"][0]["content"] for e in b} == {"b"}


def test_warn_mode_without_entries_left_still_raises(anthropic_client: Any) -> None:
    with llmvcr.recording("warn-empty"):
        ask(anthropic_client, "only")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with llmvcr.recording("warn-empty", on_divergence="warn"):
            ask(anthropic_client, "only")
            with pytest.raises(llmvcr.ReplayDivergence):
                ask(anthropic_client, "more")
