"""The provider protocol: a third Stainless SDK, and the generic function recorder."""

from __future__ import annotations

import asyncio
import base64
import importlib.metadata
import json
import time
from pathlib import Path
from typing import Any

import pytest
import userlib

import llmvcr
from llmvcr.providers import Provider, registered, unregister_provider


def test_builtin_providers_follow_the_protocol() -> None:
    names = {p.name for p in registered()}
    assert {"anthropic", "openai"} <= names
    assert all(isinstance(p, Provider) for p in registered())


@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
def test_patch_function_records_and_replays_every_shape(cassette_dir: Any) -> None:
    providers = [
        llmvcr.patch_function(f"userlib:Gateway.{m}") for m in ("complete", "acomplete", "words", "broken")
    ]
    providers.append(llmvcr.patch_function("userlib:stream_tokens"))
    try:
        gateway = userlib.Gateway()

        async def agen() -> list[Any]:
            return [item async for item in userlib.stream_tokens("one two three")]

        def run() -> list[Any]:
            out: list[Any] = [
                gateway.complete("hi"),
                asyncio.run(gateway.acomplete("async")),
                list(gateway.words("a b c")),
                asyncio.run(agen()),
            ]
            with pytest.raises(ValueError, match="bad prompt 'x'"):
                gateway.broken("x")
            return out

        userlib.CALLS.clear()
        with llmvcr.recording("functions"):
            live = run()
        assert len(userlib.CALLS) == 5
        with llmvcr.recording("functions", record_mode="none"):
            again = run()
        assert len(userlib.CALLS) == 5  # nothing ran for real
        assert again == live
        assert isinstance(again[0], userlib.Reply) and isinstance(again[1], userlib.Point)
        assert again[3] == [{"token": "one"}, {"token": "two"}, {"token": "three"}]
        with llmvcr.recording("functions", record_mode="none"):
            with pytest.raises(llmvcr.ReplayDivergence, match="request.body.args\\[0\\]"):
                gateway.complete("something else")
    finally:
        for p in providers:
            unregister_provider(p.name)
    assert userlib.Gateway.__dict__["complete"].__name__ == "complete"
    assert not hasattr(userlib.Gateway.__dict__["complete"], "__wrapped__")


def _groq_run(client: Any) -> Any:
    reply = client.chat.completions.create(
        model="llama-test", messages=[{"role": "user", "content": "hi groq"}]
    )
    chunks = list(
        client.chat.completions.create(
            model="llama-test", messages=[{"role": "user", "content": "s"}], stream=True
        )
    )
    return [reply.model_dump(), [c.model_dump() for c in chunks]]


@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
def test_a_third_stainless_sdk_through_the_shared_adapter(
    server: Any, cassette_dir: Any, request: Any
) -> None:
    import groq  # a test dependency: Stainless-generated, on legacy httpx

    llmvcr.register_provider("stainless:groq")
    try:
        client = groq.Groq(api_key="gsk_SENTINEL_groq_key_0000000000", base_url=server.url, max_retries=0)
        with llmvcr.recording("groq") as cassette:
            live = _groq_run(client)
        assert {e.provider for e in cassette.entries} == {"groq"}
        assert live[0]["choices"][0]["message"]["content"] == "Echo: hi groq"
        written = b"".join(p.read_bytes() for p in cassette_dir.rglob("*.yaml"))
        assert b"SENTINEL" not in written
        before = server.request_count
        attempts = request.getfixturevalue("no_network")
        with llmvcr.recording("groq", record_mode="none"):
            assert _groq_run(client) == live
        assert server.request_count == before and attempts == []
        with llmvcr.recording("groq", record_mode="none"):
            with pytest.raises(llmvcr.ReplayDivergence):  # surfaces unwrapped through groq's funnel too
                client.chat.completions.create(
                    model="llama-test", messages=[{"role": "user", "content": "new"}]
                )
    finally:
        unregister_provider("groq")


# -- a real SDK that is not Stainless-generated: mistralai (Speakeasy), against the loopback server ------
MISTRAL_SENTINEL = "mistral-SENTINEL-key-0123456789abcdef"


def _mistral(server: Any) -> Any:
    from mistralai.client import Mistral

    return Mistral(api_key=MISTRAL_SENTINEL, server_url=server.url)


def test_patch_function_on_a_real_sdk_method(server: Any, cassette_dir: Any, request: Any) -> None:
    """mistralai's public ``chat.complete``/``complete_async``: arguments in, pydantic models out."""
    from mistralai.client.models import ChatCompletionResponse

    targets = ("mistralai.client.chat:Chat.complete", "mistralai.client.chat:Chat.complete_async")
    providers = [llmvcr.patch_function(t) for t in targets]
    client = _mistral(server)
    ask = [{"role": "user", "content": "__counter__ bonjour"}]  # the server numbers each answer

    def run() -> list[Any]:
        sync = client.chat.complete(model="mistral-small-latest", messages=ask)
        other = asyncio.run(
            client.chat.complete_async(model="mistral-small-latest", messages=ask, temperature=0.2)
        )
        return [sync, other]

    try:
        with llmvcr.recording("mistral-fn") as cassette:
            live = run()
        assert [e.provider for e in cassette.entries] == list(targets)
        assert cassette.entries[0].request.body["kwargs"]["messages"] == ask
        assert cassette.entries[1].request.body["kwargs"]["temperature"] == 0.2
        assert cassette.recorded_with[targets[0]] == importlib.metadata.version("mistralai")
        assert live[0].choices[0].message.content.startswith("Echo: __counter__ bonjour #")
        before = server.request_count
        attempts = request.getfixturevalue("no_network")
        with llmvcr.recording("mistral-fn", record_mode="none"):
            again = run()
        assert server.request_count == before and attempts == []
        assert all(isinstance(r, ChatCompletionResponse) for r in again)
        assert [r.model_dump() for r in again] == [
            r.model_dump() for r in live
        ]  # the #n counter came back too
        written = b"".join(p.read_bytes() for p in cassette_dir.rglob("*.yaml"))
        assert b"SENTINEL" not in written
    finally:
        for p in providers:
            unregister_provider(p.name)
    from mistralai.client.chat import Chat

    assert not hasattr(Chat.__dict__["complete"], "__wrapped__")


@pytest.fixture
def mistral_provider() -> Any:
    import provider_example  # the adapter docs/providers.md ("Adding a provider") walks through

    llmvcr.register_provider(provider_example.provider)
    yield provider_example.provider
    unregister_provider("mistral")


def _mistral_http_run(client: Any) -> list[Any]:
    from mistralai.client import errors

    reply = client.chat.complete(
        model="mistral-small-latest", messages=[{"role": "user", "content": "salut"}]
    )
    with client.chat.stream(
        model="mistral-small-latest", messages=[{"role": "user", "content": "a b c"}]
    ) as events:
        deltas = [e.data.choices[0].delta.content for e in events]
    with pytest.raises(errors.SDKError) as failure:
        client.chat.complete(
            model="mistral-small-latest", messages=[{"role": "user", "content": "__status_429__"}]
        )
    # the body text as parsed: replay serves JSON bodies re-serialised (compact), not byte for byte
    return [reply.model_dump(), deltas, failure.value.status_code, json.loads(failure.value.body)]


@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
def test_the_readme_adapter_records_and_replays_mistral_http(
    server: Any, cassette_dir: Any, request: Any, mistral_provider: Any
) -> None:
    from pathlib import Path

    client = _mistral(server)
    with llmvcr.recording("mistral-http") as cassette:
        live = _mistral_http_run(client)
    assert [e.provider for e in cassette.entries] == ["mistral"] * 3
    assert cassette.recorded_with["mistral"] == mistral_provider.sdk_version()
    streamed = cassette.entries[1].response.stream or []
    assert streamed[-1]["data"] == "[DONE]" and all("t" in e for e in streamed)
    assert live[0]["choices"][0]["message"]["content"] == "Echo: salut"
    assert "".join(d or "" for d in live[1]) == "Echo: a b c" and live[2] == 429
    assert b"SENTINEL" not in b"".join(p.read_bytes() for p in cassette_dir.rglob("*.yaml"))

    before = server.request_count
    attempts = request.getfixturevalue("no_network")
    with llmvcr.recording("mistral-http", record_mode="none"):
        assert _mistral_http_run(client) == live
    with llmvcr.recording("mistral-http", record_mode="none"):
        with pytest.raises(llmvcr.ReplayDivergence, match="request.body.messages"):  # unwrapped by the funnel
            client.chat.complete(model="mistral-small-latest", messages=[{"role": "user", "content": "new"}])
    assert server.request_count == before and attempts == []

    # The documentation's "Adding a provider" page shows this very file.
    page = (Path(__file__).parent.parent.parent / "docs" / "providers.md").read_text()
    example = (Path(__file__).parent.parent / "provider_example.py").read_text()
    assert example.strip() in page


async def test_the_readme_adapter_async(server: Any, mistral_provider: Any, request: Any) -> None:
    client = _mistral(server)

    async def run() -> list[Any]:
        reply = await client.chat.complete_async(
            model="mistral-small-latest", messages=[{"role": "user", "content": "async salut"}]
        )
        events = await client.chat.stream_async(
            model="mistral-small-latest", messages=[{"role": "user", "content": "x y"}]
        )
        return [reply.model_dump(), [e.data.model_dump() async for e in events]]

    with llmvcr.recording("mistral-async"):
        live = await run()
    request.getfixturevalue("no_network")
    with llmvcr.recording("mistral-async", record_mode="none"):
        assert await run() == live


@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
def test_an_injected_fault_fails_a_patched_function_and_never_calls_it(cassette_dir: Any) -> None:
    provider = llmvcr.patch_function("userlib:Gateway.complete")
    try:
        gateway = userlib.Gateway()
        with llmvcr.recording("fn-faults"):
            gateway.complete("hi")
        userlib.CALLS.clear()
        with llmvcr.recording("fn-faults", record_mode="none"):
            with llmvcr.inject_error(kind="timeout", call=1), pytest.raises(TimeoutError):
                gateway.complete("hi")
            with llmvcr.inject_error(kind="connection", call=1), pytest.raises(ConnectionError):
                gateway.complete("hi")
        assert userlib.CALLS == []  # neither call ran for real
    finally:
        unregister_provider(provider.name)


def test_a_key_shaped_return_value_never_reaches_disk_encoded(cassette_dir: Any) -> None:
    provider = llmvcr.patch_function("userlib:Gateway.new_key")
    try:
        with llmvcr.recording("fn-minted"):
            minted = userlib.Gateway().new_key()
        written = b"".join(p.read_bytes() for p in cassette_dir.rglob("*.yaml"))
        assert minted["key"].encode() not in written
        assert minted["encoded"][:40].encode() not in written  # nor its base64, stored before it
    finally:
        unregister_provider(provider.name)


def test_a_key_given_to_a_patched_function_never_reaches_disk(cassette_dir: Any) -> None:
    key = "SENTINEL+fn/Key=42"  # no known key shape: only its argument's name says what it is
    provider = llmvcr.patch_function("userlib:Gateway.sign_in")
    try:
        gateway = userlib.Gateway()
        with llmvcr.recording("fn-keys"):
            live = gateway.sign_in("ada", api_key=key)
        written = b"".join(p.read_bytes() for p in cassette_dir.rglob("*.yaml"))
        assert b"SENTINEL" not in written and base64.b64encode(key.encode()).rstrip(b"=") not in written
        assert b"ada" in written
        with llmvcr.recording("fn-keys", record_mode="none"):
            replayed = gateway.sign_in("ada", api_key=key)  # the same call matches its redacted record
        assert replayed["user"] == live["user"] and replayed["key"] != key
    finally:
        unregister_provider(provider.name)


# -- OpenAI's Responses API over WebSocket (responses.connect) -------------------------------------------
@pytest.fixture(scope="module")
def ws_server() -> Any:
    pytest.importorskip("websockets")
    from llm_server import ResponsesWebSocketServer
    from openai.resources.responses import responses

    if not hasattr(responses.Responses, "connect"):
        pytest.skip("this openai has no responses.connect()")
    srv = ResponsesWebSocketServer().start()
    yield srv
    srv.stop()


def _ws_clients(ws_server: Any) -> tuple[Any, Any]:
    import openai

    kw = {
        "api_key": "sk-proj-SENTINEL-openai-key-0123456789abcdef",
        "base_url": "http://127.0.0.1:9/v1",
        "websocket_base_url": ws_server.url + "/v1",
        "max_retries": 0,
    }
    return openai.OpenAI(**kw), openai.AsyncOpenAI(**kw)


def _until_completed(conn: Any) -> list[Any]:
    events = []
    for event in conn:
        events.append(event)
        if event.type == "response.completed":
            break
    return events


def _ws_conversation(client: Any) -> list[Any]:
    """Two turns on one socket (the second chained by previous_response_id), then a server-side drop."""
    from openai.types.responses import ResponseCompletedEvent

    with client.responses.connect() as conn:
        conn.response.create(model="gpt-test", input="hello socket")
        first = _until_completed(conn)
        assert isinstance(first[-1], ResponseCompletedEvent)
        conn.response.create(model="gpt-test", input="and again", previous_response_id=first[-1].response.id)
        second = _until_completed(conn)
        text = "".join(e.delta for e in second if e.type == "response.output_text.delta")
        conn.response.create(model="gpt-test", input="__ws_drop__ now")
        dropped = []
        with pytest.raises(Exception) as closed:
            for event in conn:
                dropped.append(event.type)
    error = closed.value
    return [
        [e.model_dump() for e in first],
        text,
        dropped,
        (type(error).__name__, error.rcvd.code, error.rcvd.reason),
    ]


@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
def test_responses_websocket_records_and_replays(ws_server: Any, cassette_dir: Any, request: Any) -> None:
    from openai.resources.responses.responses import ResponsesConnectionManager

    client, _ = _ws_clients(ws_server)
    with llmvcr.recording("ws") as cassette:
        live = _ws_conversation(client)
    assert live[3] == ("ConnectionClosedError", 1011, "dropped (triggered by __ws_drop__)")
    assert live[1] == "Echo: and again" and len(live[2]) == 4  # four events, then the drop
    assert [e.request.method for e in cassette.entries] == ["WS"] * 3
    assert {e.request.path for e in cassette.entries} == {"/v1/responses"}
    assert [e.provider for e in cassette.entries] == ["openai"] * 3
    assert cassette.entries[1].request.body["previous_response_id"] == live[0][-1]["response"]["id"]
    first = cassette.entries[0].response.stream or []
    assert first[-1]["data"]["type"] == "response.completed" and all("t" in e for e in first)
    assert cassette.entries[2].response.failure == "1011 dropped (triggered by __ws_drop__)"
    assert cassette.recorded_with["openai"]
    assert b"SENTINEL" not in b"".join(p.read_bytes() for p in cassette_dir.rglob("*.yaml"))

    before = ws_server.message_count
    attempts = request.getfixturevalue("no_network")
    with llmvcr.recording("ws", record_mode="none") as replay:
        assert _ws_conversation(client) == live
        assert replay.unplayed == []
    with llmvcr.recording("ws", record_mode="none"), client.responses.connect() as conn:
        with pytest.raises(llmvcr.ReplayDivergence, match="request.body.input"):
            conn.response.create(model="gpt-test", input="something new")
    with llmvcr.recording("ws", record_mode="none"), client.responses.connect() as conn:
        conn.response.create(model="gpt-test", input="hello socket")
        events = [conn.recv() for _ in range(len(first))]
        assert events[-1].type == "response.completed"
        from llmvcr.providers.openai_ws import ReplayExhausted

        with pytest.raises(ReplayExhausted):  # live would wait for ever; replay says so at once
            conn.recv()
    assert ws_server.message_count == before and attempts == []
    assert not hasattr(ResponsesConnectionManager.__dict__["_connect_ws"], "__wrapped__")


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
async def test_async_responses_websocket_pacing_close_and_cancel(ws_server: Any, request: Any) -> None:
    _, client = _ws_clients(ws_server)

    async def turn(conn: Any, text: str) -> list[Any]:
        await conn.response.create(model="gpt-test", input=text)
        events = []
        async for event in conn:
            events.append(event.model_dump())
            if event.type == "response.completed":
                break
        return events

    async def session() -> tuple[list[Any], list[Any]]:
        async with client.responses.connect() as conn:
            paced = await turn(conn, "__slow_stream__ pace me")
            await conn.response.create(model="gpt-test", input="close early")
            early = [(await conn.recv()).type for _ in range(3)]
        return paced, early

    with llmvcr.recording("ws-async") as cassette:
        live = await session()
    paced_entry, early_entry = cassette.entries
    span = (paced_entry.response.stream or [])[-1]["t"]
    assert span >= 300  # eleven events, 50 ms apart
    assert early_entry.response.truncated and len(early_entry.response.stream or []) == 3
    assert not paced_entry.response.truncated

    attempts = request.getfixturevalue("no_network")
    before = ws_server.message_count
    timings = {}
    for speed in (None, 1.0):
        with llmvcr.recording("ws-async", record_mode="none", replay_speed=speed):
            start = time.perf_counter()
            assert await session() == live
            timings[speed] = (time.perf_counter() - start) * 1000
    assert timings[None] < 0.25 * span and timings[1.0] >= 0.8 * span, timings

    # Cancelling a paced recv() loses nothing, as with a live socket: the next recv() gets that event.
    with llmvcr.recording("ws-async", record_mode="none", replay_speed=1.0):
        async with client.responses.connect() as conn:
            await conn.response.create(model="gpt-test", input="__slow_stream__ pace me")
            got = [(await conn.recv()).model_dump()]
            task = asyncio.create_task(conn.recv())
            await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            while got[-1]["type"] != "response.completed":
                got.append((await conn.recv()).model_dump())
    assert got == live[0]
    assert ws_server.message_count == before and attempts == []


@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
def test_the_readme_decide_adapter_records_replays_and_redacts(cassette_dir: Any) -> None:
    from pathlib import Path

    import decide_example
    import userlib

    llmvcr.register_provider(decide_example.provider)
    try:
        key = "sk-ant-api03-SENTINEL-decide-example-0123456789"
        with llmvcr.recording("gateway") as cassette:
            live = userlib.Gateway().complete(f"summarise with {key}")
        assert [e.provider for e in cassette.entries] == ["gateway"]
        text = (cassette_dir / "gateway.yaml").read_text()
        assert key not in text and "<REDACTED:anthropic-key>" in text
        calls = len(userlib.CALLS)
        with llmvcr.recording("gateway", record_mode="none"):
            replayed = userlib.Gateway().complete(f"summarise with {key}")
            with pytest.raises(llmvcr.ReplayDivergence, match=r"request\.body\.prompt"):
                userlib.Gateway().complete("something else")
        assert len(userlib.CALLS) == calls  # nothing reached the real function
        assert isinstance(replayed, userlib.Reply) and replayed.tokens == live.tokens
        with llmvcr.recording("gateway", record_mode="none"), llmvcr.inject_error(kind="timeout"):
            with pytest.raises(TimeoutError):
                userlib.Gateway().complete(f"summarise with {key}")
    finally:
        unregister_provider("gateway")
    assert "complete" in vars(userlib.Gateway) and not hasattr(
        vars(userlib.Gateway)["complete"], "__wrapped__"
    )
    page = (Path(__file__).parent.parent.parent / "docs" / "providers.md").read_text()
    assert (Path(__file__).parent.parent / "decide_example.py").read_text().strip() in page


def test_an_sdk_client_is_recognised_whatever_user_agent_a_framework_sets(server: Any, request: Any) -> None:
    """pydantic-ai, langchain and openai-agents replace the SDK's User-Agent; the funnel still knows the client."""
    import anthropic
    import openai

    claude = anthropic.Anthropic(
        api_key="sk-ant-api03-SENTINEL-ua-0123456789",
        base_url=server.url,
        max_retries=0,
        default_headers={"User-Agent": "pydantic-ai/2.68"},
    )
    gpt = openai.OpenAI(
        api_key="sk-proj-SENTINEL-ua-0123456789abcdef",
        base_url=server.url + "/v1",
        max_retries=0,
        default_headers={"User-Agent": "Agents/Python 0.24"},
    )

    def run() -> list[Any]:
        a = claude.messages.create(
            model="claude-test", max_tokens=10, messages=[{"role": "user", "content": "ua"}]
        )
        b = gpt.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": "ua"}])
        return [a.model_dump(), b.model_dump()]

    with llmvcr.recording("framework-ua") as cassette:
        live = run()
    assert [e.provider for e in cassette.entries] == ["anthropic", "openai"]
    before = server.request_count
    attempts = request.getfixturevalue("no_network")
    with llmvcr.recording("framework-ua", record_mode="none"):
        assert run() == live
    assert server.request_count == before and attempts == []


def test_a_home_made_client_speaking_a_known_wire_format_is_recorded(server: Any, request: Any) -> None:
    """litellm calls Anthropic with its own httpx client and User-Agent; the wire format says whose call it is."""
    import httpx2

    def run() -> Any:
        with httpx2.Client(headers={"user-agent": "litellm/1.80"}) as client:
            response = client.post(
                server.url + "/v1/messages",
                headers={
                    "anthropic-version": "2023-06-01",
                    "x-api-key": "sk-ant-api03-SENTINEL-litellm-000000",
                },
                json={
                    "model": "claude-test",
                    "max_tokens": 10,
                    "messages": [{"role": "user", "content": "wire"}],
                },
            )
            return response.json()

    with llmvcr.recording("wire") as cassette:
        live = run()
    assert [e.provider for e in cassette.entries] == ["anthropic"]
    assert "SENTINEL" not in Path(cassette.path).read_text()
    before = server.request_count
    attempts = request.getfixturevalue("no_network")
    with llmvcr.recording("wire", record_mode="none"):
        assert run() == live
    assert server.request_count == before and attempts == []
