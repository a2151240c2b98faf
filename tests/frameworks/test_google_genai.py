"""google-genai: generate_content, its stream, a chat, embeddings and a tool loop, sync and async."""

from __future__ import annotations

import importlib
import json
import time
from typing import Any

import aiohttp
import httpx2
import pytest
from google import genai
from google.genai import errors, types
from llm_server import LLMServer
from roundtrip import SENTINEL, Roundtrip, sockets_refused

import llmvcr

MODEL = "gemini-2.5-flash"
WEATHER = types.Tool(
    function_declarations=[
        types.FunctionDeclaration(
            name="get_weather",
            description="Weather in a city",
            parameters=types.Schema(type="OBJECT", properties={"city": types.Schema(type="STRING")}),
        )
    ]
)


@pytest.fixture
def client(server: LLMServer) -> genai.Client:
    return genai.Client(api_key=SENTINEL, http_options=types.HttpOptions(base_url=server.url))


def tool_loop(client: genai.Client) -> list[Any]:
    config = types.GenerateContentConfig(tools=[WEATHER])
    question = types.Content(role="user", parts=[types.Part(text="What is the weather in Paris?")])
    first = client.models.generate_content(model=MODEL, contents=[question], config=config)
    call = first.function_calls[0]
    result = types.Part.from_function_response(name=call.name, response={"temp": "21C"})
    contents = [question, first.candidates[0].content, types.Content(role="user", parts=[result])]
    second = client.models.generate_content(model=MODEL, contents=contents, config=config)
    return [call.args, second.text]


async def async_tool_loop(client: genai.Client) -> list[Any]:
    config = types.GenerateContentConfig(tools=[WEATHER])
    question = types.Content(role="user", parts=[types.Part(text="What is the weather in Paris?")])
    first = await client.aio.models.generate_content(model=MODEL, contents=[question], config=config)
    call = first.function_calls[0]
    result = types.Part.from_function_response(name=call.name, response={"temp": "21C"})
    contents = [question, first.candidates[0].content, types.Content(role="user", parts=[result])]
    second = await client.aio.models.generate_content(model=MODEL, contents=contents, config=config)
    return [call.args, second.text]


def test_sync(client: genai.Client, roundtrip: Roundtrip) -> None:
    def scenario() -> list[Any]:
        chat = client.models.generate_content(model=MODEL, contents="Hello Gemini")
        stream = [c.text for c in client.models.generate_content_stream(model=MODEL, contents="Tell me more")]
        session = client.chats.create(model=MODEL)
        turns = [session.send_message("first").text, session.send_message("second").text]
        vectors = client.models.embed_content(model="text-embedding-004", contents=["a", "b"])
        vector = [e.values for e in vectors.embeddings or []]
        assert isinstance(chat, types.GenerateContentResponse)  # the SDK's own type, live and replayed
        whole = chat.model_dump(exclude={"sdk_http_response"})  # every field but the raw HTTP headers
        return [chat.text, stream, turns, vector, tool_loop(client), whole]

    out = roundtrip("genai-sync", scenario, framework="google-genai")
    assert out[5]["candidates"][0]["content"]["parts"][0]["text"] == "Echo: Hello Gemini"
    assert out[0] == "Echo: Hello Gemini"
    assert "".join(out[1]) == "Echo: Tell me more" and len(out[1]) > 1
    assert out[4] == [{"city": "Paris"}, 'The tool said: {"temp": "21C"}']


async def test_async(client: genai.Client, roundtrip: Roundtrip) -> None:
    async def scenario() -> list[Any]:
        chat = await client.aio.models.generate_content(model=MODEL, contents="Hello async")
        stream = [
            c.text
            async for c in await client.aio.models.generate_content_stream(model=MODEL, contents="More")
        ]
        session = client.aio.chats.create(model=MODEL)
        turn = (await session.send_message("first")).text
        vectors = await client.aio.models.embed_content(model="text-embedding-004", contents="a")
        vector = [e.values for e in vectors.embeddings or []]
        whole = chat.model_dump(exclude={"sdk_http_response"})
        return [chat.text, stream, turn, vector, await async_tool_loop(client), whole]

    out = await roundtrip.run_async("genai-async", scenario, framework="google-genai")
    assert out[0] == "Echo: Hello async" and "".join(out[1]) == "Echo: More"
    assert out[4] == [{"city": "Paris"}, 'The tool said: {"temp": "21C"}']


@pytest.mark.parametrize("backend", ["httpx2", "httpx"])
async def test_every_http_backend_the_sdk_can_choose(
    backend: str, server: LLMServer, roundtrip: Roundtrip, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GOOGLE_GENAI_HTTP_CLIENT picks httpx or httpx2; an httpx async client given in the options
    takes ``client.aio`` off aiohttp."""
    monkeypatch.setenv("GOOGLE_GENAI_HTTP_CLIENT", backend)
    module = importlib.import_module(backend)

    async def scenario() -> list[Any]:
        options = types.HttpOptions(base_url=server.url, httpx_async_client=module.AsyncClient())
        client = genai.Client(api_key=SENTINEL, http_options=options)
        chat = client.models.generate_content(model=MODEL, contents="Hello sync")
        stream = [
            c.text
            async for c in await client.aio.models.generate_content_stream(model=MODEL, contents="More")
        ]
        return [chat.text, stream, await async_tool_loop(client)]

    out = await roundtrip.run_async(f"genai-{backend}", scenario, framework="google-genai")
    assert out[0] == "Echo: Hello sync" and "".join(out[1]) == "Echo: More"
    assert roundtrip.transports == {backend: 4}


def test_errors_replay_as_genai_errors(client: genai.Client, roundtrip: Roundtrip) -> None:
    def scenario() -> Any:
        with pytest.raises(errors.ClientError) as info:
            client.models.generate_content(model=MODEL, contents="__status_400__")
        return (type(info.value).__name__, info.value.code, info.value.status)

    assert roundtrip("genai-error", scenario, framework="google-genai") == (
        "ClientError",
        400,
        "INVALID_ARGUMENT",
    )


async def test_async_errors_replay_as_genai_errors(client: genai.Client, roundtrip: Roundtrip) -> None:
    async def scenario() -> Any:
        with pytest.raises(errors.APIError) as info:
            await client.aio.models.generate_content(model=MODEL, contents="__status_429__")
        return (type(info.value).__name__, info.value.code, info.value.status)

    out = await roundtrip.run_async("genai-async-error", scenario, framework="google-genai")
    assert out == ("ClientError", 429, "RESOURCE_EXHAUSTED")
    assert roundtrip.transports == {"aiohttp": 1}


def test_header_key_never_written(server: LLMServer, cassette_dir: Any) -> None:
    client = genai.Client(
        api_key="unused",
        http_options=types.HttpOptions(base_url=server.url, headers={"x-goog-api-key": SENTINEL}),
    )
    with llmvcr.recording("genai-header"):
        client.models.generate_content(model=MODEL, contents="hi")
    text = "".join(p.read_text() for p in cassette_dir.rglob("*.yaml"))
    assert "google" in text and SENTINEL not in text and "unused" not in text


def test_query_key_never_written_and_replays(server: LLMServer, roundtrip: Roundtrip) -> None:
    """A home-made client in Gemini's wire format with the key in ``?key=`` (litellm's way)."""
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}

    def scenario() -> Any:
        url = f"{server.url}/v1beta/models/{MODEL}:generateContent?key={SENTINEL}"
        return httpx2.post(url, json=body).json()

    assert roundtrip("gemini-query-key", scenario, framework="httpx2")["candidates"][0]["content"][
        "parts"
    ] == [{"text": "Echo: hi"}]
    assert server.last_request.query == f"key={SENTINEL}"  # it was sent, and (roundtrip) never written


async def test_query_key_never_written_through_aiohttp(server: LLMServer, roundtrip: Roundtrip) -> None:
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}

    async def scenario() -> Any:
        url = f"{server.url}/v1beta/models/{MODEL}:streamGenerateContent?alt=sse&key={SENTINEL}"
        async with aiohttp.ClientSession() as session, session.post(url, json=body) as response:
            # events as JSON: a replayed stream is re-encoded compactly (the server spaces its JSON)
            return [json.loads(line[5:]) async for line in response.content if line.startswith(b"data:")]

    events = await roundtrip.run_async("gemini-query-key-aiohttp", scenario, framework="aiohttp")
    assert "".join(p["text"] for e in events for p in e["candidates"][0]["content"]["parts"]) == "Echo: hi"
    assert roundtrip.transports == {"aiohttp": 1} and roundtrip.providers == ["google"]
    assert server.last_request.query == f"alt=sse&key={SENTINEL}"


async def test_async_stream_cut_mid_way_replays_the_same_failure(
    client: genai.Client, roundtrip: Roundtrip
) -> None:
    async def scenario() -> Any:
        texts: list[str] = []
        with pytest.raises(Exception) as info:  # whatever aiohttp raises for a cut body, both times
            async for chunk in await client.aio.models.generate_content_stream(
                model=MODEL, contents="one two three four five six __stream_drop__"
            ):
                texts.append(chunk.text or "")
        return texts, type(info.value).__name__

    texts, error = await roundtrip.run_async("genai-stream-drop", scenario, framework="google-genai")
    assert len(texts) == 4 and error == "ClientPayloadError"


@pytest.mark.parametrize("kind", ["status", "timeout"])
async def test_injected_faults_raise_what_the_sdk_raises(kind: str, server: LLMServer) -> None:
    retry = types.HttpRetryOptions(attempts=1)
    client = genai.Client(
        api_key=SENTINEL, http_options=types.HttpOptions(base_url=server.url, retry_options=retry)
    )
    raised = []
    with llmvcr.recording("genai-faults"):
        with llmvcr.inject_error(429, kind=kind, call=1), pytest.raises(Exception) as sync_info:
            client.models.generate_content(model=MODEL, contents="hi")
        raised.append(sync_info.value)
        with llmvcr.inject_error(429, kind=kind, call=1), pytest.raises(Exception) as async_info:
            await client.aio.models.generate_content(model=MODEL, contents="hi")
        raised.append(async_info.value)
    if kind == "status":
        assert all(isinstance(e, errors.ClientError) and e.code == 429 for e in raised)
        assert all(e.status == "RESOURCE_EXHAUSTED" for e in raised)  # the Gemini error shape
    else:  # the HTTP library's own timeout, as the SDK lets it through live
        assert [type(e).__name__ for e in raised] == ["ReadTimeout", "ServerTimeoutError"]


async def test_async_stream_replays_at_its_recorded_pace_with_replay_speed(client: genai.Client) -> None:
    async def stream() -> tuple[list[str], float]:
        start = time.perf_counter()
        contents = "one two three four __slow_stream__"
        texts = [
            c.text or ""
            async for c in await client.aio.models.generate_content_stream(model=MODEL, contents=contents)
        ]
        return texts, time.perf_counter() - start

    with llmvcr.recording("genai-paced"):
        live, live_time = await stream()
    with sockets_refused(), llmvcr.recording("genai-paced", record_mode="none", replay_speed=1.0):
        paced, paced_time = await stream()
    with sockets_refused(), llmvcr.recording("genai-paced", record_mode="none"):
        fast, fast_time = await stream()
    assert live == paced == fast and len(live) == 6
    assert live_time >= 0.2 and paced_time >= 0.2 and fast_time < 0.15
