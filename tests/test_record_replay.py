"""Every anthropic and openai call shape records against the loopback server and replays offline.

Each scenario runs once live inside a recording cassette, then again with ``record_mode="none"``
and every socket connection refused: the replayed results must equal the live ones, be of the
SDK's own types, and the server must see no request.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import openai
import pydantic
import pytest
from conftest import ANTHROPIC_SENTINEL, OPENAI_SENTINEL

import llmvcr

USER = [{"role": "user", "content": "hello there"}]
WEATHER_TOOL = {
    "name": "get_weather",
    "description": "Weather for a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
OPENAI_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


class Pet(pydantic.BaseModel):
    name: str
    age: int


# the concrete classes of anthropic's RawMessageStreamEvent (an Annotated Union)
STREAM_EVENT_TYPES = typing.get_args(typing.get_args(anthropic.types.RawMessageStreamEvent)[0])


def dump(value: Any) -> Any:
    return value.model_dump() if hasattr(value, "model_dump") else value


# -- anthropic, sync ----------------------------------------------------------------------
def a_create(a: Any, o: Any) -> Any:
    m = a.messages.create(model="claude-test", max_tokens=64, messages=USER)
    assert isinstance(m, anthropic.types.Message)
    return dump(m)


def a_create_stream(a: Any, o: Any) -> Any:
    events = list(a.messages.create(model="claude-test", max_tokens=64, messages=USER, stream=True))
    assert events and all(isinstance(e, STREAM_EVENT_TYPES) for e in events)
    assert next(e.type for e in events) == "message_start" and events[-1].type == "message_stop"
    return [dump(e) for e in events]


def a_tools(a: Any, o: Any) -> Any:
    q = [{"role": "user", "content": "What is the weather in Paris?"}]
    first = a.messages.create(model="claude-test", max_tokens=64, messages=q, tools=[WEATHER_TOOL])
    assert first.stop_reason == "tool_use"
    tool_use = next(b for b in first.content if b.type == "tool_use")
    follow = [
        *q,
        {"role": "assistant", "content": [b.model_dump() for b in first.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": tool_use.id, "content": "18C, sunny"}],
        },
    ]
    second = a.messages.create(model="claude-test", max_tokens=64, messages=follow, tools=[WEATHER_TOOL])
    return [dump(first), dump(second)]


def a_stream_helper(a: Any, o: Any) -> Any:
    with a.messages.stream(model="claude-test", max_tokens=64, messages=USER) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    with a.messages.stream(
        model="claude-test", max_tokens=64, messages=[{"role": "user", "content": "again"}]
    ) as s2:
        s2.until_done()
        final2 = s2.get_final_message()
    assert isinstance(final, anthropic.types.Message)
    return [text, dump(final), dump(final2)]


def a_count_tokens(a: Any, o: Any) -> Any:
    count = a.messages.count_tokens(model="claude-test", messages=USER)
    assert isinstance(count, anthropic.types.MessageTokensCount)
    return dump(count)


def a_raw(a: Any, o: Any) -> Any:
    raw = a.messages.with_raw_response.create(model="claude-test", max_tokens=64, messages=USER)
    return [raw.status_code, raw.request_id, dump(raw.parse())]


def a_beta(a: Any, o: Any) -> Any:
    m = a.beta.messages.create(model="claude-test", max_tokens=64, messages=USER, betas=["test-beta-2025"])
    assert type(m).__name__ == "BetaMessage"
    return dump(m)


def a_errors(a: Any, o: Any) -> Any:
    seen = []
    for marker, cls in (
        ("__status_400__", anthropic.BadRequestError),
        ("__status_429__", anthropic.RateLimitError),
        ("__status_529__", anthropic.APIStatusError),
    ):
        with pytest.raises(cls) as info:
            a.messages.create(
                model="claude-test", max_tokens=64, messages=[{"role": "user", "content": marker}]
            )
        seen.append(
            [
                type(info.value).__name__,
                info.value.status_code,
                info.value.body,
                info.value.response.headers.get("retry-after"),
            ]
        )
    return seen


# -- openai, sync -------------------------------------------------------------------------
def o_chat(a: Any, o: Any) -> Any:
    c = o.chat.completions.create(model="gpt-test", messages=USER)
    assert isinstance(c, openai.types.chat.ChatCompletion)
    return dump(c)


def o_chat_stream(a: Any, o: Any) -> Any:
    chunks = list(
        o.chat.completions.create(
            model="gpt-test", messages=USER, stream=True, stream_options={"include_usage": True}
        )
    )
    assert all(isinstance(c, openai.types.chat.ChatCompletionChunk) for c in chunks)
    return [dump(c) for c in chunks]


def o_chat_tools(a: Any, o: Any) -> Any:
    q: list[dict[str, Any]] = [{"role": "user", "content": "What is the weather in Paris?"}]
    first = o.chat.completions.create(model="gpt-test", messages=q, tools=[OPENAI_TOOL])
    call = first.choices[0].message.tool_calls[0]
    follow = [
        *q,
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "18C"},
    ]
    second = o.chat.completions.create(model="gpt-test", messages=follow, tools=[OPENAI_TOOL])
    streamed = list(o.chat.completions.create(model="gpt-test", messages=q, tools=[OPENAI_TOOL], stream=True))
    return [dump(first), dump(second), [dump(c) for c in streamed]]


def o_parse(a: Any, o: Any) -> Any:
    parsed = o.chat.completions.parse(model="gpt-test", messages=USER, response_format=Pet)
    assert isinstance(parsed.choices[0].message.parsed, Pet)
    return dump(parsed)


def o_chat_stream_helper(a: Any, o: Any) -> Any:
    with o.chat.completions.stream(model="gpt-test", messages=USER) as stream:
        deltas = [e.delta for e in stream if e.type == "content.delta"]
        final = stream.get_final_completion()
    return [deltas, dump(final)]


def o_responses(a: Any, o: Any) -> Any:
    r = o.responses.create(model="gpt-test", input="hello responses")
    assert isinstance(r, openai.types.responses.Response)
    events = list(o.responses.create(model="gpt-test", input="hello stream", stream=True))
    with o.responses.stream(model="gpt-test", input="hello helper") as stream:
        types = [e.type for e in stream]
        final = stream.get_final_response()
    return [dump(r), [dump(e) for e in events], types, dump(final), r.output_text]


def o_embeddings(a: Any, o: Any) -> Any:
    e = o.embeddings.create(model="text-embedding-test", input=["one", "two"])
    assert isinstance(e.data[0].embedding, list) and isinstance(e.data[0].embedding[0], float)
    return dump(e)


def o_raw(a: Any, o: Any) -> Any:
    raw = o.chat.completions.with_raw_response.create(model="gpt-test", messages=USER)
    return [raw.status_code, raw.headers.get("x-request-id"), dump(raw.parse())]


def o_azure(a: Any, o: Any) -> Any:
    az = openai.AzureOpenAI(
        api_key="azure-SENTINEL-key-0123456789",
        azure_endpoint=str(o.base_url).split("/v1")[0],
        api_version="2024-10-21",
        azure_deployment="dep",
        max_retries=0,
    )
    c = az.chat.completions.create(model="gpt-test", messages=USER)
    assert isinstance(c, openai.types.chat.ChatCompletion)
    chunks = list(az.chat.completions.create(model="gpt-test", messages=USER, stream=True))
    assert chunks and all(isinstance(x, openai.types.chat.ChatCompletionChunk) for x in chunks)
    parsed = az.chat.completions.parse(model="gpt-test", messages=USER, response_format=Pet)
    assert isinstance(parsed.choices[0].message.parsed, Pet)
    r = az.responses.create(model="gpt-test", input="hello azure")
    assert isinstance(r, openai.types.responses.Response)
    e = az.embeddings.create(model="text-embedding-test", input="one")
    return [dump(c), [dump(x) for x in chunks], dump(parsed), dump(r), dump(e)]


def o_errors(a: Any, o: Any) -> Any:
    seen = []
    for marker, cls in (
        ("__status_400__", openai.BadRequestError),
        ("__status_429__", openai.RateLimitError),
        ("__status_500__", openai.InternalServerError),
    ):
        with pytest.raises(cls) as info:
            o.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": marker}])
        seen.append([type(info.value).__name__, info.value.status_code, info.value.body])
    return seen


# -- async ----------------------------------------------------------------------------------
async def aa_all(a: Any, o: Any) -> Any:
    m = await a.messages.create(model="claude-test", max_tokens=64, messages=USER)
    events = [
        dump(e)
        async for e in await a.messages.create(model="claude-test", max_tokens=64, messages=USER, stream=True)
    ]
    async with a.messages.stream(model="claude-test", max_tokens=64, messages=USER) as stream:
        text = "".join([t async for t in stream.text_stream])
        final = await stream.get_final_message()
    count = await a.messages.count_tokens(model="claude-test", messages=USER)
    beta = await a.beta.messages.create(model="claude-test", max_tokens=64, messages=USER)
    assert isinstance(m, anthropic.types.Message) and isinstance(final, anthropic.types.Message)
    assert isinstance(count, anthropic.types.MessageTokensCount) and type(beta).__name__ == "BetaMessage"
    assert events and text
    with pytest.raises(anthropic.RateLimitError):
        await a.messages.create(
            model="claude-test", max_tokens=64, messages=[{"role": "user", "content": "__status_429__"}]
        )
    return [dump(m), events, text, dump(final), dump(count), dump(beta)]


async def ao_all(a: Any, o: Any) -> Any:
    c = await o.chat.completions.create(model="gpt-test", messages=USER)
    chunks = [
        dump(x) async for x in await o.chat.completions.create(model="gpt-test", messages=USER, stream=True)
    ]
    async with o.chat.completions.stream(model="gpt-test", messages=USER) as stream:
        async for _ in stream:
            pass
        final = await stream.get_final_completion()
    parsed = await o.chat.completions.parse(model="gpt-test", messages=USER, response_format=Pet)
    r = await o.responses.create(model="gpt-test", input="hello")
    async with o.responses.stream(model="gpt-test", input="hello helper") as rs:
        async for _ in rs:
            pass
        rfinal = await rs.get_final_response()
    e = await o.embeddings.create(model="text-embedding-test", input="one")
    assert isinstance(c, openai.types.chat.ChatCompletion) and isinstance(
        final, openai.types.chat.ChatCompletion
    )
    assert chunks and isinstance(parsed.choices[0].message.parsed, Pet)
    assert isinstance(r, openai.types.responses.Response) and isinstance(
        rfinal, openai.types.responses.Response
    )
    assert isinstance(e, openai.types.CreateEmbeddingResponse)
    with pytest.raises(openai.RateLimitError):
        await o.chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "__status_429__"}]
        )
    return [dump(c), chunks, dump(final), dump(parsed), dump(r), dump(rfinal), dump(e)]


async def aa_more(a: Any, o: Any) -> Any:
    q = [{"role": "user", "content": "What is the weather in Paris?"}]
    first = await a.messages.create(model="claude-test", max_tokens=64, messages=q, tools=[WEATHER_TOOL])
    assert isinstance(first, anthropic.types.Message) and first.stop_reason == "tool_use"
    tool_use = next(b for b in first.content if b.type == "tool_use")
    follow = [
        *q,
        {"role": "assistant", "content": [b.model_dump() for b in first.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": tool_use.id, "content": "18C, sunny"}],
        },
    ]
    second = await a.messages.create(
        model="claude-test", max_tokens=64, messages=follow, tools=[WEATHER_TOOL]
    )
    assert second.content[0].text == "The tool said: 18C, sunny"
    async with a.messages.stream(
        model="claude-test", max_tokens=64, messages=[{"role": "user", "content": "again"}]
    ) as s:
        await s.until_done()
        final = await s.get_final_message()
    assert isinstance(final, anthropic.types.Message)
    raw = await a.messages.with_raw_response.create(model="claude-test", max_tokens=64, messages=USER)
    parsed = await raw.parse()
    assert isinstance(parsed, anthropic.types.Message)
    with pytest.raises(anthropic.BadRequestError) as info:
        await a.messages.create(
            model="claude-test", max_tokens=64, messages=[{"role": "user", "content": "__status_400__"}]
        )
    return [
        dump(first),
        dump(second),
        dump(final),
        raw.status_code,
        raw.request_id,
        dump(parsed),
        info.value.body,
    ]


async def ao_more(a: Any, o: Any) -> Any:
    q: list[dict[str, Any]] = [{"role": "user", "content": "What is the weather in Paris?"}]
    first = await o.chat.completions.create(model="gpt-test", messages=q, tools=[OPENAI_TOOL])
    assert isinstance(first, openai.types.chat.ChatCompletion)
    call = first.choices[0].message.tool_calls[0]
    follow = [
        *q,
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "18C"},
    ]
    second = await o.chat.completions.create(model="gpt-test", messages=follow, tools=[OPENAI_TOOL])
    tool_chunks = [
        dump(c)
        async for c in await o.chat.completions.create(
            model="gpt-test", messages=q, tools=[OPENAI_TOOL], stream=True
        )
    ]
    events = []
    async for event in await o.responses.create(model="gpt-test", input="hello stream", stream=True):
        assert isinstance(event, pydantic.BaseModel) and event.type.startswith("response.")
        events.append(dump(event))
    raw = await o.chat.completions.with_raw_response.create(model="gpt-test", messages=USER)
    az = openai.AsyncAzureOpenAI(
        api_key="azure-SENTINEL-key-0123456789",
        azure_endpoint=str(o.base_url).split("/v1")[0],
        api_version="2024-10-21",
        azure_deployment="dep",
        max_retries=0,
    )
    c = await az.chat.completions.create(model="gpt-test", messages=USER)
    assert isinstance(c, openai.types.chat.ChatCompletion)
    az_chunks = [
        dump(x) async for x in await az.chat.completions.create(model="gpt-test", messages=USER, stream=True)
    ]
    az_e = await az.embeddings.create(model="text-embedding-test", input="one")
    with pytest.raises(openai.InternalServerError):
        await o.chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "__status_500__"}]
        )
    return [
        dump(first),
        dump(second),
        tool_chunks,
        events,
        raw.status_code,
        dump(raw.parse()),
        dump(c),
        az_chunks,
        dump(az_e),
    ]


SYNC = [
    a_create,
    a_create_stream,
    a_tools,
    a_stream_helper,
    a_count_tokens,
    a_raw,
    a_beta,
    a_errors,
    o_chat,
    o_chat_stream,
    o_chat_tools,
    o_parse,
    o_chat_stream_helper,
    o_responses,
    o_embeddings,
    o_raw,
    o_azure,
    o_errors,
]
ASYNC = [aa_all, ao_all, aa_more, ao_more]


def _all_files(directory: Path) -> list[Path]:
    return [p for p in directory.rglob("*") if p.is_file()]


def _assert_no_secrets(directory: Path) -> None:
    for path in _all_files(directory):
        data = path.read_bytes()
        for needle in (
            b"SENTINEL",
            ANTHROPIC_SENTINEL.encode(),
            OPENAI_SENTINEL.encode(),
            b"authorization",
            b"x-api-key",
            b"api-key:",
            b"set-cookie",
            b"__cf_bm",
        ):
            assert needle not in data, f"{needle!r} written to {path}"


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")
@pytest.mark.parametrize("scenario", SYNC, ids=lambda f: f.__name__)
def test_sync_record_then_replay_offline(
    scenario: Callable[..., Any],
    anthropic_client: Any,
    openai_client: Any,
    server: Any,
    cassette_dir: Path,
    request: Any,
) -> None:
    name = scenario.__name__
    with llmvcr.recording(name) as cassette:
        live = scenario(anthropic_client, openai_client)
    assert len(cassette.entries) >= 1
    assert (cassette_dir / f"{name}.yaml").exists()
    _assert_no_secrets(cassette_dir)
    before = server.request_count
    blocker = request.getfixturevalue("no_network")
    with llmvcr.recording(name, record_mode="none") as replayed:
        again = scenario(anthropic_client, openai_client)
    assert again == live
    assert server.request_count == before
    assert blocker == []
    assert replayed.unplayed == []


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")
@pytest.mark.parametrize("scenario", ASYNC, ids=lambda f: f.__name__)
async def test_async_record_then_replay_offline(
    scenario: Callable[..., Any],
    async_anthropic_client: Any,
    async_openai_client: Any,
    server: Any,
    cassette_dir: Path,
    request: Any,
) -> None:
    name = scenario.__name__
    with llmvcr.recording(name):
        live = await scenario(async_anthropic_client, async_openai_client)
    _assert_no_secrets(cassette_dir)
    before = server.request_count
    blocker = request.getfixturevalue("no_network")
    with llmvcr.recording(name, record_mode="none"):
        again = await scenario(async_anthropic_client, async_openai_client)
    assert again == live
    assert server.request_count == before and blocker == []


@pytest.mark.filterwarnings(
    "ignore::llmvcr.errors.EmptyRecordingWarning"
)  # cassettes opened for their patching only
def test_leaving_the_cassette_restores_the_sdk(anthropic_client: Any) -> None:
    import httpx2

    originals = {
        "send": httpx2.Client.__dict__["send"],
        "asend": httpx2.AsyncClient.__dict__["send"],
        "request": anthropic._base_client.SyncAPIClient.__dict__["request"],
        "arequest": anthropic._base_client.AsyncAPIClient.__dict__["request"],
        "orequest": openai._base_client.SyncAPIClient.__dict__["request"],
        "oarequest": openai._base_client.AsyncAPIClient.__dict__["request"],
    }
    assert not any(hasattr(f, "__wrapped__") for f in originals.values())
    with llmvcr.recording("restore"):
        assert httpx2.Client.__dict__["send"] is not originals["send"]
        assert anthropic._base_client.SyncAPIClient.__dict__["request"] is not originals["request"]
        anthropic_client.messages.create(model="claude-test", max_tokens=8, messages=USER)
    assert httpx2.Client.__dict__["send"] is originals["send"]
    assert httpx2.AsyncClient.__dict__["send"] is originals["asend"]
    assert anthropic._base_client.SyncAPIClient.__dict__["request"] is originals["request"]
    assert anthropic._base_client.AsyncAPIClient.__dict__["request"] is originals["arequest"]
    assert openai._base_client.SyncAPIClient.__dict__["request"] is originals["orequest"]
    assert openai._base_client.AsyncAPIClient.__dict__["request"] is originals["oarequest"]


@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
def test_divergence_names_file_diffs_and_never_reaches_network(
    anthropic_client: Any, server: Any, cassette_dir: Path
) -> None:
    with llmvcr.recording("greeter"):
        anthropic_client.messages.create(
            model="claude-test",
            max_tokens=32,
            system="You are a greeter.",
            messages=[{"role": "user", "content": "hi"}],
        )
    before = server.request_count
    with llmvcr.recording("greeter"):  # once + existing cassette: replay only
        with pytest.raises(llmvcr.ReplayDivergence) as info:
            anthropic_client.messages.create(
                model="claude-test",
                max_tokens=32,
                system="You are a greeter. Always answer in French.",
                messages=[{"role": "user", "content": "hi"}],
            )
    text = str(info.value)
    assert str(cassette_dir / "greeter.yaml") in text
    assert (
        "request.body.system: recorded 'You are a greeter.' != live "
        "'You are a greeter. Always answer in French.'"
    ) in text
    assert "record_mode='all'" in text and "--llmvcr-record-mode=all" in text and "new_episodes" in text
    assert info.value.diff == [
        ("request.body.system", "You are a greeter.", "You are a greeter. Always answer in French.")
    ]
    assert server.request_count == before
    assert type(info.value) is llmvcr.ReplayDivergence  # not wrapped as APIConnectionError, not retried


@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
async def test_async_divergence_surfaces_unwrapped(async_openai_client: Any) -> None:
    with llmvcr.recording("a-div"):
        await async_openai_client.chat.completions.create(model="gpt-test", messages=USER)
    with llmvcr.recording("a-div"), pytest.raises(llmvcr.ReplayDivergence):
        await async_openai_client.chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "other"}]
        )


def test_sdk_noise_is_not_fingerprinted(server: Any) -> None:
    a1 = anthropic.Anthropic(api_key=ANTHROPIC_SENTINEL, base_url=server.url, max_retries=0, timeout=30)
    a2 = anthropic.Anthropic(
        api_key="sk-ant-other-key-0000000000",
        base_url=server.url,
        max_retries=3,
        timeout=99,
        default_headers={"x-trace": "1"},
    )
    with llmvcr.recording("noise") as cassette:
        a1.messages.create(model="claude-test", max_tokens=8, messages=[{"content": "hi", "role": "user"}])
    with llmvcr.recording("noise", record_mode="none"):
        # other key, timeout, retries, header and key order: the same request
        a2.messages.create(messages=[{"role": "user", "content": "hi"}], max_tokens=8, model="claude-test")
    assert (
        cassette.entries[0].request_hash.startswith("sha256:") and len(cassette.entries[0].request_hash) == 71
    )


def test_json_cassette_and_seed_metadata(openai_client: Any, cassette_dir: Path) -> None:
    path = cassette_dir / "sub" / "chat.json"
    with llmvcr.recording(path, seed="bug-repro-#427") as cassette:
        openai_client.chat.completions.create(model="gpt-test", messages=USER)
    import orjson

    document = orjson.loads(path.read_bytes())
    assert document["version"] == 1 and document["seed"] == "bug-repro-#427"
    assert document["recorded_with"]["openai"] == openai.__version__
    assert "anthropic" not in document["recorded_with"]  # only the SDKs this cassette was recorded through
    assert document["entries"][0]["request_hash"] == cassette.entries[0].request_hash
    loaded = llmvcr.load_cassette(path)
    assert loaded.seed == "bug-repro-#427" and len(loaded) == 1


def test_decorator_sync_and_async(
    anthropic_client: Any, async_anthropic_client: Any, cassette_dir: Path
) -> None:
    @llmvcr.use_cassette("decorated")
    def call() -> str:
        return (
            anthropic_client.messages.create(model="claude-test", max_tokens=8, messages=USER).content[0].text
        )

    @llmvcr.use_cassette("decorated")
    async def acall() -> str:
        m = await async_anthropic_client.messages.create(model="claude-test", max_tokens=8, messages=USER)
        return m.content[0].text

    import asyncio

    assert inspect.iscoroutinefunction(acall)
    first = call()
    assert (cassette_dir / "decorated.yaml").exists()
    assert asyncio.run(acall()) == first  # the sync recording serves the async client


def test_record_modes(anthropic_client: Any, server: Any, cassette_dir: Path) -> None:
    def ask(text: str) -> str:
        return (
            anthropic_client.messages.create(
                model="claude-test", max_tokens=8, messages=[{"role": "user", "content": text}]
            )
            .content[0]
            .text
        )

    with pytest.raises(llmvcr.CassetteNotFoundError), llmvcr.recording("modes", record_mode="none"):
        pass
    with llmvcr.recording("modes"):
        ask("one")
    with llmvcr.recording("modes", record_mode="new_episodes") as c:
        ask("one")
        ask("two")
    assert len(c.entries) == 2
    assert len(llmvcr.load_cassette(cassette_dir / "modes.yaml")) == 2
    before = server.request_count
    with llmvcr.recording("modes", record_mode="all") as c:
        ask("three")
    assert server.request_count == before + 1
    assert [
        e.request.body["messages"][0]["content"] for e in llmvcr.load_cassette(cassette_dir / "modes.yaml")
    ] == ["three"]


def test_bad_options_fail_at_decoration_time() -> None:
    for kwargs, word in (
        ({"record_mode": "sometimes"}, "once, new_episodes, none, all"),
        ({"mode": "fuzzy"}, "strict, sequential, loose"),
        ({"on_divergence": "ignore"}, "raise, warn, live"),
        ({"match_on": ["nope"]}, "body"),
        ({"colour": "red"}, "record_mode"),
    ):
        with pytest.raises(ValueError, match=word):
            llmvcr.use_cassette("x", **kwargs)


def test_request_hash_is_sha256_of_the_canonical_method_path_and_body(
    anthropic_client: Any, openai_client: Any, cassette_dir: Path
) -> None:
    """Recomputed here independently of llmvcr: sorted keys, no whitespace, UTF-8 (not \\u escapes)."""
    import hashlib
    import json

    az = openai.AzureOpenAI(
        api_key="azure-SENTINEL-key-0123456789",
        azure_endpoint=str(openai_client.base_url).split("/v1")[0],
        api_version="2024-10-21",
        azure_deployment="dep",
        max_retries=0,
    )
    messages = [{"role": "user", "content": "héllo, 世界"}]
    with llmvcr.recording("hash") as cassette:
        anthropic_client.messages.create(model="claude-test", max_tokens=8, messages=messages)
        az.chat.completions.create(model="gpt-test", messages=messages)

    def expected(path: str, body: Any) -> str:
        text = json.dumps(
            {"method": "POST", "path": path, "body": body},
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        )
        return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()

    a_entry, az_entry = cassette.entries
    assert a_entry.request_hash == expected(
        "/v1/messages", {"max_tokens": 8, "messages": messages, "model": "claude-test"}
    )
    # Azure's api-version query is part of the path that is hashed, sorted
    assert az_entry.request_hash == expected(
        "/openai/deployments/dep/chat/completions?api-version=2024-10-21",
        {"messages": messages, "model": "gpt-test"},
    )
    on_disk = llmvcr.load_cassette(cassette_dir / "hash.yaml")
    assert [e.request_hash for e in on_disk.entries] == [a_entry.request_hash, az_entry.request_hash]


def test_yaml_cassette_layout_is_format_version_1(
    anthropic_client: Any, openai_client: Any, cassette_dir: Path
) -> None:
    import yaml

    from llmvcr.cassette import schema
    from llmvcr.storage.yaml_text import loader_and_dumper

    long_text = "first line of a long prompt\nsecond line\nthird line"
    with llmvcr.recording("layout", seed="bug-repro-#427"):
        anthropic_client.messages.create(
            model="claude-test", max_tokens=8, messages=[{"role": "user", "content": long_text}]
        )
        list(openai_client.chat.completions.create(model="gpt-test", messages=USER, stream=True))
    raw = (cassette_dir / "layout.yaml").read_text()
    document = yaml.safe_load(raw)
    assert list(document) == [
        "version",
        "entry_count",
        "end_marker",
        "seed",
        "recorded_with",
        "entries",
        "entries_end",
    ]
    assert document["version"] == 1 and document["seed"] == "bug-repro-#427"
    assert document["entry_count"] == len(document["entries"]) == 2
    assert document["recorded_with"] == {
        "llmvcr": schema.LLMVCR_VERSION,
        "python": document["recorded_with"]["python"],
        "at": document["recorded_with"]["at"],  # when it was recorded, what max_age counts from
        "anthropic": anthropic.__version__,
        "openai": openai.__version__,
    }
    plain, streamed = document["entries"]
    assert list(plain) == ["provider", "request", "request_hash", "response"]
    assert plain["provider"] == "anthropic" and streamed["provider"] == "openai"
    assert set(plain["request"]) == {"method", "path", "headers", "body"}
    assert list(plain["request"]["headers"]) == ["anthropic-version"]  # the SDK's noise and key never
    assert (
        plain["response"]["status"] == 200
        and "body" in plain["response"]
        and "stream" not in plain["response"]
    )
    assert set(plain["response"]["headers"]) <= {"content-type", "request-id", "x-request-id", "retry-after"}
    events = streamed["response"]["stream"]
    assert "body" not in streamed["response"] and events
    assert all(set(e) <= {"event", "data"} for e in events)
    timing = streamed["response"]["timing"]  # arrival offsets in ms, one per event, on one line
    assert len(timing) == len(events) and all(isinstance(t, float) for t in timing)
    assert "timing: [" in raw
    assert events[-1]["data"] == "[DONE]" and isinstance(events[0]["data"], dict)
    # long text as a block scalar, and the C loader/dumper when libyaml is there
    assert "content: |-\n" in raw and "        second line\n" in raw
    if yaml.__with_libyaml__:
        loader, dumper = loader_and_dumper()
        assert loader is yaml.CSafeLoader and issubclass(dumper, yaml.CSafeDumper)


def test_async_decorator_replays_without_the_network(
    async_anthropic_client: Any, server: Any, request: Any
) -> None:
    import asyncio

    @llmvcr.use_cassette("adecorated")
    async def acall(text: str) -> str:
        m = await async_anthropic_client.messages.create(
            model="claude-test", max_tokens=8, messages=[{"role": "user", "content": text}]
        )
        assert isinstance(m, anthropic.types.Message)
        return m.content[0].text

    live = asyncio.run(acall("async decorated"))
    before = server.request_count
    attempts = request.getfixturevalue("no_network")
    assert asyncio.run(acall("async decorated")) == live  # the cassette exists now: served from it
    assert server.request_count == before and attempts == []
    with pytest.raises(llmvcr.ReplayDivergence):
        asyncio.run(acall("something never recorded"))


def test_use_cassette_is_also_a_context_manager(
    anthropic_client: Any, server: Any, cassette_dir: Path
) -> None:
    with llmvcr.use_cassette("ctx") as cassette:
        anthropic_client.messages.create(model="claude-test", max_tokens=8, messages=USER)
    assert isinstance(cassette, llmvcr.Cassette) and len(cassette.entries) == 1
    assert (cassette_dir / "ctx.yaml").exists()
    before = server.request_count
    with llmvcr.use_cassette(cassette_dir / "ctx.yaml"):  # the same file, by path
        anthropic_client.messages.create(model="claude-test", max_tokens=8, messages=USER)
    assert server.request_count == before


@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
@pytest.mark.parametrize("record_mode", ["none", "once"])
def test_unmatched_request_in_replay_modes_never_reaches_the_network(
    record_mode: str, anthropic_client: Any, openai_client: Any, server: Any, request: Any
) -> None:
    with llmvcr.recording(f"replay-only-{record_mode}"):
        anthropic_client.messages.create(model="claude-test", max_tokens=8, messages=USER)
    before = server.request_count
    attempts = request.getfixturevalue("no_network")
    with llmvcr.recording(f"replay-only-{record_mode}", record_mode=record_mode) as cassette:
        with pytest.raises(llmvcr.ReplayDivergence):
            anthropic_client.messages.create(model="claude-test", max_tokens=9, messages=USER)
        with pytest.raises(llmvcr.ReplayDivergence):
            list(openai_client.chat.completions.create(model="gpt-test", messages=USER, stream=True))
    assert server.request_count == before and attempts == []
    assert len(cassette.entries) == 1
