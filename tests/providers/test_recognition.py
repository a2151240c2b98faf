"""Which requests from a client that is no SDK's (litellm's own httpx client, a home-made one) are
LLM calls: the known wire formats, then the known API hosts; anything else is refused in replay
and counted when recording. The SDK clients' own calls: test_providers.py."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

import llmvcr
from llmvcr.errors import UnrecognizedRequestError, UnrecordedCallWarning

LOCAL = "http://127.0.0.1:9"
ANTHROPIC = {"anthropic-version": "2023-06-01", "x-api-key": "sk-ant-api03-SENTINEL-recognition-000"}
OPENAI = {"authorization": "Bearer sk-proj-SENTINEL-recognition-0000"}
GOOGLE = {"x-goog-api-key": "AIzaSENTINEL-recognition-0000000000000"}

# (method, url, headers, the provider that records it)
RECOGNISED = [
    ("POST", f"{LOCAL}/v1/messages", ANTHROPIC, "anthropic"),
    ("POST", f"{LOCAL}/v1/messages/count_tokens", ANTHROPIC, "anthropic"),
    ("POST", f"{LOCAL}/v1/chat/completions", OPENAI, "openai"),
    ("POST", f"{LOCAL}/v1/responses", OPENAI, "openai"),
    ("POST", f"{LOCAL}/v1/embeddings", OPENAI, "openai"),
    ("POST", f"{LOCAL}/v1beta/models/gemini-2.5-flash:generateContent", GOOGLE, "google"),
    ("POST", f"{LOCAL}/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", GOOGLE, "google"),
    ("POST", f"{LOCAL}/v1beta/models/text-embedding-004:embedContent", GOOGLE, "google"),
    # the known API hosts, whatever the path
    ("GET", "https://api.anthropic.com/v1/models", ANTHROPIC, "anthropic"),
    ("GET", "https://api.openai.com/v1/models", OPENAI, "openai"),
    ("GET", "https://generativelanguage.googleapis.com/v1beta/models", GOOGLE, "google"),
]
UNRECOGNISED = [
    ("POST", f"{LOCAL}/v1/messages", {"x-api-key": "not-anthropic"}),  # no anthropic-version: not Anthropic's
    ("GET", f"{LOCAL}/v1/models", OPENAI),  # an API's path, but not a call llmvcr knows, at an unknown host
    ("POST", f"{LOCAL}/v1/chat/completions/extra", OPENAI),
    ("GET", "https://example.com/health", {}),
]


def answer(request: Any) -> Any:
    """What the mock transport sends back: a small JSON body, or an event stream when asked."""
    module = importlib.import_module(type(request).__module__.split(".")[0])
    answer.sent += 1  # type: ignore[attr-defined]
    if "alt=sse" in str(request.url):
        return module.Response(
            200, headers={"content-type": "text/event-stream"}, content=b'data: {"a": 1}\n\n'
        )
    return module.Response(200, json={"path": request.url.path})


@pytest.fixture(params=["httpx2", "httpx"])
def client(request: pytest.FixtureRequest) -> Any:
    """A client that is no SDK's, with its own User-Agent, answered in-process (no socket at all)."""
    module = importlib.import_module(request.param)
    answer.sent = 0  # type: ignore[attr-defined]
    return module.Client(transport=module.MockTransport(answer), headers={"user-agent": "home-made/1.0"})


def send(client: Any, method: str, url: str, headers: dict[str, str]) -> Any:
    body = None if method == "GET" else b'{"model": "m"}'
    headers = {**headers, "content-type": "application/json"} if body else headers
    response = client.request(method, url, headers=headers, content=body)
    return response.status_code, response.text


def test_each_known_wire_format_and_host_is_recorded_as_its_provider(client: Any, cassette_dir: Any) -> None:
    with llmvcr.recording("formats") as cassette:
        live = [send(client, m, u, h) for m, u, h, _ in RECOGNISED]
    assert [e.provider for e in cassette.entries] == [p for *_, p in RECOGNISED]
    assert answer.sent == len(RECOGNISED)  # type: ignore[attr-defined]
    assert "SENTINEL" not in (cassette_dir / "formats.yaml").read_text()
    with llmvcr.recording("formats", record_mode="none"):
        assert [send(client, m, u, h) for m, u, h, _ in RECOGNISED] == live
    assert answer.sent == len(RECOGNISED)  # type: ignore[attr-defined]


@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
@pytest.mark.parametrize(("method", "url", "headers"), UNRECOGNISED)
def test_anything_else_is_refused_in_replay_and_counted_when_recording(
    client: Any, method: str, url: str, headers: dict[str, str]
) -> None:
    host = url.split("/")[2].split(":")[0]
    with pytest.warns(UnrecordedCallWarning, match=rf"recorded nothing\): 1 to {host}"):
        with llmvcr.recording("unknown") as cassette:
            send(client, method, url, headers)
    assert cassette.entries == [] and answer.sent == 1  # type: ignore[attr-defined]
    with llmvcr.recording("seed"):
        send(client, *RECOGNISED[0][:3])
    with (
        llmvcr.recording("seed", record_mode="none"),
        pytest.raises(UnrecognizedRequestError, match=rf"{method} {url.replace('?', '.')} inside"),
    ):
        send(client, method, url, headers)
    assert answer.sent == 2  # type: ignore[attr-defined]


@pytest.mark.parametrize("library", ["httpx2", "httpx"])
async def test_async_clients_are_recognised_and_refused_alike(library: str) -> None:
    module = importlib.import_module(library)
    answer.sent = 0  # type: ignore[attr-defined]
    transport = module.MockTransport(answer)  # a sync handler serves an AsyncClient too

    async def call(url: str, headers: dict[str, str]) -> Any:
        async with module.AsyncClient(transport=transport, headers={"user-agent": "home-made/1.0"}) as client:
            response = await client.post(url, headers=headers, json={"model": "m"})
            return response.status_code, response.text

    with llmvcr.recording("async-formats") as cassette:
        live = [await call(u, h) for _, u, h, _ in RECOGNISED[:8]]
    assert [e.provider for e in cassette.entries] == [p for *_, p in RECOGNISED[:8]]
    with llmvcr.recording("async-formats", record_mode="none"):
        assert [await call(u, h) for _, u, h, _ in RECOGNISED[:8]] == live
        with pytest.raises(UnrecognizedRequestError, match=r"POST http://127.0.0.1:9/v1/messages inside"):
            await call(f"{LOCAL}/v1/messages", {"x-api-key": "not-anthropic"})
    assert answer.sent == 8  # type: ignore[attr-defined]


@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
def test_a_once_cassette_that_exists_refuses_them_too(client: Any) -> None:
    """``once`` (the marker's default) replays an existing cassette, so it refuses like ``none``."""
    with llmvcr.recording("once", record_mode="once"):
        send(client, *RECOGNISED[0][:3])
    with (
        llmvcr.recording("once", record_mode="once"),
        pytest.raises(
            UnrecognizedRequestError, match=r"GET https://example.com/health inside .*record_mode='once'"
        ),
    ):
        send(client, "GET", "https://example.com/health", {})
    assert answer.sent == 1  # type: ignore[attr-defined]
