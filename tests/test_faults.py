"""Faults are reproducible: recorded errors, failed streams, injected errors, and replay under load."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest

import llmvcr


def ask(client: Any, text: str, **kw: Any) -> Any:
    return client.messages.create(
        model="claude-test", max_tokens=16, messages=[{"role": "user", "content": text}], **kw
    )


def collect(stream: Any) -> tuple[list[Any], str]:
    events: list[Any] = []
    try:
        for event in stream:
            events.append(event.model_dump())
    except Exception as err:  # the failure is part of what is compared
        return events, f"{type(err).__name__}: {err}"
    return events, "completed"


def _run_failing_stream(client: Any, marker: str) -> tuple[list[Any], str]:
    return collect(ask(client, f"{marker} please", stream=True))


@pytest.mark.parametrize("marker", ["__stream_error__", "__stream_drop__"])
def test_stream_failures_record_and_replay(
    anthropic_client: Any, server: Any, marker: str, request: Any
) -> None:
    with llmvcr.recording(f"fail{marker}") as cassette:
        live = _run_failing_stream(anthropic_client, marker)
    assert live[1] != "completed" and live[0]  # some events, then a failure
    entry = cassette.entries[0]
    if marker == "__stream_drop__":
        assert entry.response.failure
    else:
        assert any(e.get("event") == "error" for e in entry.response.stream or [])
    before = server.request_count
    request.getfixturevalue("no_network")
    with llmvcr.recording(f"fail{marker}", record_mode="none"):
        again = _run_failing_stream(anthropic_client, marker)
    assert again == live and server.request_count == before


def test_openai_stream_error_replays(openai_client: Any) -> None:
    def run() -> tuple[list[Any], str]:
        return collect(
            openai_client.chat.completions.create(
                model="gpt-test", messages=[{"role": "user", "content": "__stream_error__"}], stream=True
            )
        )

    with llmvcr.recording("oai-fail"):
        live = run()
    with llmvcr.recording("oai-fail", record_mode="none"):
        assert run() == live
    assert live[1].startswith("APIError")


def test_recorded_rate_limit_keeps_status_body_and_retry_after(anthropic_client: Any) -> None:
    with llmvcr.recording("429"), pytest.raises(anthropic.RateLimitError) as live:
        ask(anthropic_client, "__status_429__")
    with llmvcr.recording("429", record_mode="none"), pytest.raises(anthropic.RateLimitError) as again:
        ask(anthropic_client, "__status_429__")
    assert again.value.status_code == 429 and again.value.body == live.value.body
    assert again.value.response.headers["retry-after"] == live.value.response.headers["retry-after"]


@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
def test_inject_errors_into_a_replayed_run(anthropic_client: Any, openai_client: Any) -> None:
    with llmvcr.recording("inject"):
        texts = [ask(anthropic_client, f"q{i}").content[0].text for i in range(3)]
    with llmvcr.recording("inject", record_mode="none"), llmvcr.inject_error(529, call=2) as fault:
        assert ask(anthropic_client, "q0").content[0].text == texts[0]
        with pytest.raises(anthropic.APIStatusError) as info:
            ask(anthropic_client, "q1")
        assert info.value.status_code == 529 and info.value.body["error"]["type"] == "overloaded_error"
        assert ask(anthropic_client, "q1").content[0].text == texts[1]  # the recorded entry is still there
    assert fault.fired == 1
    with llmvcr.recording("inject", record_mode="none"), llmvcr.inject_error(kind="timeout", call=1):
        with pytest.raises(anthropic.APITimeoutError):
            ask(anthropic_client, "q2")
    with llmvcr.recording("oai-inject"), llmvcr.inject_error(429, provider="openai", retry_after="30"):
        with pytest.raises(openai.RateLimitError) as oinfo:
            openai_client.chat.completions.create(
                model="gpt-test", messages=[{"role": "user", "content": "x"}]
            )
        assert oinfo.value.response.headers["retry-after"] == "30"
    with pytest.raises(ValueError, match="status, timeout, connection"):
        with llmvcr.inject_error(kind="gremlin"):
            pass


def _load_cassette(path: Path, n: int) -> None:
    """A cassette of n distinct entries, built through the real SDK against an in-memory transport."""
    import orjson

    def handler(request: httpx2.Request) -> httpx2.Response:
        text = orjson.loads(request.content)["messages"][0]["content"]
        return httpx2.Response(
            200,
            json={
                "id": "msg_" + text,
                "type": "message",
                "role": "assistant",
                "model": "claude-test",
                "content": [{"type": "text", "text": "answer " + text}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            },
        )

    client = anthropic.Anthropic(
        api_key="sk-ant-load-test-0000",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    with llmvcr.recording(path, record_mode="all") as cassette:
        for i in range(n):
            ask(client, f"n{i}")
    assert len(cassette) == n


@pytest.mark.slow
def test_ten_thousand_calls_across_threads_and_tasks(tmp_path: Path, server: Any) -> None:
    n = 10_000
    path = tmp_path / "load.json"
    _load_cassette(path, n)
    client = anthropic.Anthropic(api_key="sk-ant-load-test-0000", base_url=server.url, max_retries=0)
    before = server.request_count
    results: dict[int, str] = {}
    lock = threading.Lock()

    def worker(k: int) -> None:
        for i in range(k, n, 8):
            text = ask(client, f"n{i}").content[0].text
            with lock:
                assert i not in results
                results[i] = text

    with llmvcr.recording(path, record_mode="none") as cassette:
        threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert results == {i: f"answer n{i}" for i in range(n)}
    assert cassette.unplayed == [] and all(cassette.play_count(i) == 1 for i in range(n))

    async def tasks() -> dict[int, str]:
        aclient = anthropic.AsyncAnthropic(
            api_key="sk-ant-load-test-0000", base_url=server.url, max_retries=0
        )
        sem = asyncio.Semaphore(200)
        out: dict[int, str] = {}

        async def one(i: int) -> None:
            async with sem:
                m = await aclient.messages.create(
                    model="claude-test", max_tokens=16, messages=[{"role": "user", "content": f"n{i}"}]
                )
                out[i] = m.content[0].text

        await asyncio.gather(*(one(i) for i in range(n)))
        return out

    with llmvcr.recording(path, record_mode="none") as cassette:
        assert asyncio.run(tasks()) == {i: f"answer n{i}" for i in range(n)}
    assert all(cassette.play_count(i) == 1 for i in range(n))
    assert server.request_count == before


def test_injected_connection_error_and_the_call_count(
    anthropic_client: Any, openai_client: Any, server: Any
) -> None:
    with llmvcr.recording("inject-count"):
        texts = [ask(anthropic_client, f"c{i}").content[0].text for i in range(3)]
        chat = openai_client.chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "o"}]
        )
    before = server.request_count
    with (
        llmvcr.recording("inject-count", record_mode="none"),
        llmvcr.inject_error(kind="connection", call=3, provider="anthropic") as fault,
    ):
        # openai calls are not counted by an anthropic fault
        assert (
            openai_client.chat.completions.create(
                model="gpt-test", messages=[{"role": "user", "content": "o"}]
            ).model_dump()
            == chat.model_dump()
        )
        assert [ask(anthropic_client, f"c{i}").content[0].text for i in range(2)] == texts[:2]
        with pytest.raises(anthropic.APIConnectionError) as info:
            ask(anthropic_client, "c2")
        assert not isinstance(info.value, anthropic.APITimeoutError)
        assert (
            ask(anthropic_client, "c2").content[0].text == texts[2]
        )  # the fault used no entry: c2 is served
    assert fault.seen == 4 and fault.fired == 1
    assert server.request_count == before


def test_injected_status_is_not_retried_by_the_sdk(server: Any) -> None:
    """x-should-retry: false on the injected response: one call, one failure, even with retries on."""
    client = anthropic.Anthropic(api_key="sk-ant-retry-test-0000", base_url=server.url, max_retries=3)
    with llmvcr.recording("inject-retries"):
        answer = ask(client, "retry me").content[0].text
    with (
        llmvcr.recording("inject-retries", record_mode="none") as cassette,
        llmvcr.inject_error(529) as fault,
    ):
        with pytest.raises(anthropic.APIStatusError) as info:
            ask(client, "retry me")
        assert info.value.status_code == 529 and fault.seen == 1  # no second attempt reached llmvcr
        assert [e.request.body["messages"][0]["content"] for e in cassette.unplayed] == ["retry me"]
        assert ask(client, "retry me").content[0].text == answer
    with pytest.raises(ValueError, match="counts from 1"), llmvcr.inject_error(call=0):
        pass
