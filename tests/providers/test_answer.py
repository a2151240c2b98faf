"""Replay answers in the SDK's funnel (providers._answer): same objects, and the SDK's own path
for every client or call it does not cover.

Every request built there during the whole suite is also built by the SDK and compared
(``conftest.requests_built_in_the_funnel_equal_the_sdks``); these tests show which calls take
that path, that what they return equals the recording, and that the rest is left to the SDK.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import anthropic
import httpx2
import pytest
from llm_server import LLMServer

import llmvcr
from llmvcr.providers import _answer as answer

ANTHROPIC_KEY = "sk-ant-api03-SENTINEL-anthropic-key-0123456789"
MESSAGE = {"model": "claude-test", "max_tokens": 32, "messages": [{"role": "user", "content": "hello"}]}
CHAT = {"model": "gpt-test", "messages": [{"role": "user", "content": "hello"}]}


def premade(raw: Any) -> bool:
    """Whether a call's request was built in the funnel (what ``with_raw_response`` shows of it)."""
    return answer.PREMADE in raw.http_request.extensions


def calls(client: Any, chat: Any) -> list[Any]:
    """Every call shape the suite's benchmark makes, and the raw forms."""
    out: list[Any] = [client.messages.create(**MESSAGE).model_dump()]
    with client.messages.stream(**MESSAGE) as stream:
        out.append([event.type for event in stream])
        out.append(stream.get_final_message().model_dump())
    raw = client.messages.with_raw_response.create(**MESSAGE)
    out.append((raw.status_code, raw.parse().model_dump()))
    out.append(chat.chat.completions.create(**CHAT).model_dump())
    out.append([c.model_dump() for c in chat.chat.completions.create(**CHAT, stream=True)])
    return out


def test_replay_answers_in_the_funnel_and_returns_what_was_recorded(
    anthropic_client: Any, openai_client: Any, server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    with llmvcr.use_cassette("funnel"):
        live = calls(anthropic_client, openai_client)
        assert not premade(anthropic_client.messages.with_raw_response.create(**MESSAGE))  # recording
    sent = server.request_count
    connections: list[Any] = []
    monkeypatch.setattr(socket.socket, "connect", lambda sock, address: connections.append(address))
    with llmvcr.use_cassette("funnel", record_mode="none", allow_playback_repeats=True):
        assert calls(anthropic_client, openai_client) == live
        assert premade(anthropic_client.messages.with_raw_response.create(**MESSAGE))
        assert premade(openai_client.chat.completions.with_raw_response.create(**CHAT))
    assert server.request_count == sent
    assert connections == []


def test_async_clients_answer_in_the_funnel_too(
    async_anthropic_client: Any, async_openai_client: Any, server: LLMServer
) -> None:
    async def both() -> tuple[Any, Any]:
        message = await async_anthropic_client.messages.create(**MESSAGE)
        raw = await async_openai_client.chat.completions.with_raw_response.create(**CHAT)
        return message.model_dump(), (raw, raw.parse().model_dump())

    with llmvcr.use_cassette("async-funnel"):
        live = asyncio.run(both())
    sent = server.request_count
    with llmvcr.use_cassette("async-funnel", record_mode="none"):
        replayed = asyncio.run(both())
    assert replayed[0] == live[0]
    assert replayed[1][1] == live[1][1]
    assert premade(replayed[1][0]) and not premade(live[1][0])
    assert server.request_count == sent


class SendsItsOwnWay(httpx2.Client):
    def send(self, request: Any, **kwargs: Any) -> Any:
        return super().send(request, **kwargs)


class SignsRequests(anthropic.Anthropic):
    """A client that changes its request after it is built, as Bedrock and Vertex clients sign theirs."""

    def _prepare_request(self, request: Any) -> None:
        request.headers["anthropic-beta"] = "signed-2026"


class BuildsItsOwnWay(anthropic.Anthropic):
    def _build_request(self, options: Any, *, retries_taken: int = 0) -> Any:
        return super()._build_request(options, retries_taken=retries_taken)


def sdk_path_cases(server: LLMServer) -> dict[str, tuple[Any, dict[str, Any], bool]]:
    """name -> (client, call arguments, built in the funnel on replay)."""
    plain = {"api_key": ANTHROPIC_KEY, "base_url": server.url, "max_retries": 0}
    cookies = httpx2.Client(cookies={"session": "abc"})
    return {
        "plain": (anthropic.Anthropic(**plain), MESSAGE, True),
        # anthropic merges extra_body into the body before building: covered, and checked
        "extra_body": (anthropic.Anthropic(**plain), {**MESSAGE, "extra_body": {"metadata": {"x": 1}}}, True),
        "query": (anthropic.Anthropic(**plain), {**MESSAGE, "extra_query": {"beta": "true"}}, False),
        "client query": (anthropic.Anthropic(**plain, default_query={"tenant": "a"}), MESSAGE, False),
        "http client cookies": (anthropic.Anthropic(**plain, http_client=cookies), MESSAGE, True),
        "http client params": (
            anthropic.Anthropic(**plain, http_client=httpx2.Client(params={"t": "1"})),
            MESSAGE,
            False,
        ),
        "http client send": (anthropic.Anthropic(**plain, http_client=SendsItsOwnWay()), MESSAGE, False),
        "client _build_request": (BuildsItsOwnWay(**plain), MESSAGE, False),
        # built in the funnel, changed by _prepare_request, read again at send (the header is matched)
        "client _prepare_request": (SignsRequests(**plain), MESSAGE, True),
    }


@pytest.mark.parametrize(
    "name",
    [
        "plain",
        "extra_body",
        "query",
        "client query",
        "http client cookies",
        "http client params",
        "http client send",
        "client _build_request",
        "client _prepare_request",
    ],
)
def test_calls_and_clients_it_does_not_cover_take_the_sdks_path(name: str, server: LLMServer) -> None:
    client, arguments, in_funnel = sdk_path_cases(server)[name]
    with llmvcr.use_cassette(f"sdk-path-{name.replace(' ', '-')}"):
        live = client.messages.with_raw_response.create(**arguments)
    sent = server.request_count
    with llmvcr.use_cassette(f"sdk-path-{name.replace(' ', '-')}", record_mode="none") as cassette:
        replayed = client.messages.with_raw_response.create(**arguments)
    assert replayed.parse().model_dump() == live.parse().model_dump()
    assert premade(replayed) is in_funnel
    assert server.request_count == sent
    assert cassette.unplayed == []
    if name == "client _prepare_request":
        assert cassette.played[0].request.headers["anthropic-beta"] == "signed-2026"


@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
def test_a_changed_request_diverges_as_on_the_sdks_path(anthropic_client: Any) -> None:
    with llmvcr.use_cassette("diverge"):
        anthropic_client.messages.create(**MESSAGE)
    changed = {**MESSAGE, "messages": [{"role": "user", "content": "goodbye"}]}
    with llmvcr.use_cassette("diverge", record_mode="none"), pytest.raises(llmvcr.ReplayDivergence) as err:
        anthropic_client.messages.create(**changed)
    assert "goodbye" in str(err.value)


def test_a_cassette_that_records_leaves_building_to_the_sdk(anthropic_client: Any, server: LLMServer) -> None:
    with llmvcr.use_cassette("records", record_mode="new_episodes"):
        raw = anthropic_client.messages.with_raw_response.create(**MESSAGE)
    assert not premade(raw)
    assert server.last_request.json()["messages"] == MESSAGE["messages"]


def test_the_suites_check_names_each_difference() -> None:
    provider = llmvcr.providers.registered()[0]
    url = "http://127.0.0.1:9/v1/messages"
    light = httpx2.Request("POST", url, headers={"anthropic-version": "1"}, content=b'{"a": 1}')
    light.extensions[answer.PREMADE] = answer.Premade(
        llmvcr.providers.request_from_wire("POST", url, [("anthropic-version", "1")], b'{"a": 1}'),
        light.url,
        light.headers.raw,
    )
    real = httpx2.Request("POST", url, headers={"anthropic-version": "2"}, content=b'{"a": 2}')
    found: list[str] = []
    answer.check_against(provider, light, real, found)
    assert [line.split(": ", 2)[1] for line in found] == [
        "headers differs",
        "body differs",
        "the record differs",
    ]
    assert all(line.startswith(f"{provider.name} POST {url}") for line in found)
