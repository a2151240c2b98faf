"""Explicit adapters: record one client instance, replay into a built or given client."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from conftest import ANTHROPIC_SENTINEL

import llmvcr

ASK = {"model": "claude-test", "max_tokens": 16}


def _ask(client: Any, text: str) -> Any:
    return client.messages.create(**ASK, messages=[{"role": "user", "content": text}])


def test_recording_adapter_records_only_its_client(
    server: Any, anthropic_client: Any, tmp_path: Path
) -> None:
    import anthropic

    other = anthropic.Anthropic(api_key=ANTHROPIC_SENTINEL, base_url=server.url, max_retries=0)
    client, cassette = llmvcr.create_recording_adapter(anthropic_client, seed="bug-repro-#427")
    assert client is anthropic_client
    live = [
        _ask(client, "one").model_dump(),
        _ask(other, "not me").model_dump(),
        _ask(client, "two").model_dump(),
    ]
    assert [e.request.body["messages"][0]["content"] for e in cassette.entries] == ["one", "two"]
    assert live[1]["content"][0]["text"] == "Echo: not me"  # the other client reached the server untouched
    for name in ("a.yaml", "a.json"):
        llmvcr.save_cassette(tmp_path / name, cassette)
        again = llmvcr.load_cassette(tmp_path / name)
        assert again.seed == "bug-repro-#427"
        assert again.entries == cassette.entries
        assert b"SENTINEL" not in (tmp_path / name).read_bytes()


@pytest.fixture
def recorded(server: Any, anthropic_client: Any, tmp_path: Path) -> tuple[Path, list[Any]]:
    client, cassette = llmvcr.create_recording_adapter(anthropic_client, seed="s-1")
    live = [_ask(client, "first"), _ask(client, "second")]
    path = tmp_path / "adapter.yaml"
    llmvcr.save_cassette(path, cassette)
    return path, [m.model_dump() for m in live]


def test_replay_adapter_with_no_client(recorded: tuple[Path, list[Any]], server: Any, request: Any) -> None:
    import anthropic

    path, live = recorded
    before = server.request_count
    attempts = request.getfixturevalue("no_network")
    client = llmvcr.create_replay_adapter(llmvcr.load_cassette(path))
    assert isinstance(client, anthropic.Anthropic)
    replayed = [_ask(client, "first"), _ask(client, "second")]
    assert all(isinstance(m, anthropic.types.Message) for m in replayed)
    assert [m.model_dump() for m in replayed] == live
    assert server.request_count == before and attempts == []
    with pytest.raises(llmvcr.ReplayDivergence, match="request.body.messages"):
        _ask(client, "third")


def test_replay_adapter_async_and_by_path(recorded: tuple[Path, list[Any]], request: Any) -> None:
    import anthropic

    path, live = recorded
    attempts = request.getfixturevalue("no_network")
    client = llmvcr.create_replay_adapter(str(path), asynchronous=True)
    assert isinstance(client, anthropic.AsyncAnthropic)

    async def run() -> list[Any]:
        return [
            await client.messages.create(**ASK, messages=[{"role": "user", "content": t}])
            for t in ("first", "second")
        ]

    assert [m.model_dump() for m in asyncio.run(run())] == live
    assert attempts == []


def test_replay_adapter_into_a_given_client_sequential(
    recorded: tuple[Path, list[Any]], server: Any, anthropic_client: Any
) -> None:
    path, live = recorded
    client = llmvcr.create_replay_adapter(llmvcr.load_cassette(path), anthropic_client, mode="sequential")
    assert client is anthropic_client
    before = server.request_count
    # sequential: whatever the prompts say now, the recorded answers come back in order
    assert [_ask(client, t).model_dump() for t in ("changed", "also changed")] == live
    assert server.request_count == before


def test_adapter_beside_an_open_cassette(
    recorded: tuple[Path, list[Any]], server: Any, tmp_path: Path
) -> None:
    import anthropic

    path, live = recorded
    replayer = llmvcr.create_replay_adapter(llmvcr.load_cassette(path))
    plain = anthropic.Anthropic(api_key=ANTHROPIC_SENTINEL, base_url=server.url, max_retries=0)
    with llmvcr.recording(tmp_path / "outer.yaml") as outer:
        assert _ask(replayer, "first").model_dump() == live[0]  # the adapter's own cassette answers
        _ask(plain, "outer call")  # the open cassette records this one
    assert [e.request.body["messages"][0]["content"] for e in outer.entries] == ["outer call"]
    assert isinstance(replayer, anthropic.Anthropic)


def test_adapter_errors_are_clear(recorded: tuple[Path, list[Any]], openai_client: Any) -> None:
    path, _ = recorded
    with pytest.raises(ValueError, match="takes no record_mode"):
        llmvcr.create_replay_adapter(path, record_mode="all")
    with pytest.raises(ValueError, match="unknown mode 'fuzzy'; valid: strict, sequential, loose"):
        llmvcr.create_replay_adapter(path, mode="fuzzy")
    with pytest.raises(ValueError, match="unknown option"):
        llmvcr.create_recording_adapter(openai_client, colour="red")
    mixed = llmvcr.load_cassette(path)
    mixed.append(
        llmvcr.Entry("openai", llmvcr.Request("POST", "/v1/embeddings"), llmvcr.Response(200, body={}), "x")
    )
    with pytest.raises(ValueError, match="holds anthropic, openai: pass the client"):
        llmvcr.create_replay_adapter(mixed)
    with pytest.raises(llmvcr.CassetteNotFoundError):
        llmvcr.create_replay_adapter(path.with_name("missing.yaml"))


def test_interception_ends_with_the_client(server: Any) -> None:
    import gc

    import anthropic
    from anthropic._base_client import SyncAPIClient

    from llmvcr.providers import installed

    gc.collect()
    assert not installed()
    original = SyncAPIClient.__dict__["request"]
    client, _ = llmvcr.create_recording_adapter(
        anthropic.Anthropic(api_key=ANTHROPIC_SENTINEL, base_url=server.url, max_retries=0)
    )
    assert installed() and SyncAPIClient.__dict__["request"] is not original
    del client, _
    gc.collect()
    assert not installed()
    assert SyncAPIClient.__dict__["request"] is original


def test_a_google_genai_client_is_recorded_and_replayed_by_the_adapters(
    server: Any, google_client: Any, tmp_path: Path, request: Any
) -> None:
    """A genai.Client makes its calls through the API client it holds: binding the Client alone let
    every call through to the network unseen."""
    client, cassette = llmvcr.create_recording_adapter(google_client)
    live = client.models.generate_content(model="gemini-2.5-flash", contents="hello")
    assert len(cassette.entries) == 1 and cassette.entries[0].provider == "google"
    path = tmp_path / "gemini.yaml"
    llmvcr.save_cassette(path, cassette)

    from google import genai
    from google.genai import types

    options = types.HttpOptions(base_url=server.url, retry_options=types.HttpRetryOptions(attempts=1))
    fresh = genai.Client(api_key="gemini-test-key", http_options=options)
    before = server.request_count
    attempts = request.getfixturevalue("no_network")
    replaying = llmvcr.create_replay_adapter(path, fresh)
    assert replaying.models.generate_content(model="gemini-2.5-flash", contents="hello").text == live.text
    assert server.request_count == before and attempts == []
    with pytest.raises(llmvcr.ReplayDivergence):
        replaying.models.generate_content(model="gemini-2.5-flash", contents="not recorded")


def test_an_object_no_sdk_makes_is_refused_not_adapted_in_name_only(recorded: tuple[Path, list[Any]]) -> None:
    class ChatModel:  # a framework's model object, which holds an SDK client
        pass

    with pytest.raises(
        ValueError, match="is no client of an SDK llmvcr adapts .*anthropic.*pass the SDK client"
    ):
        llmvcr.create_replay_adapter(recorded[0], ChatModel())
    with pytest.raises(ValueError, match="is no client of an SDK llmvcr adapts"):
        llmvcr.create_recording_adapter(ChatModel())
