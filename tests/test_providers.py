"""The provider protocol: a third Stainless SDK, and the generic function recorder."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import llmvcr
import userlib
from llmvcr.providers import Provider, registered, unregister_provider


def test_builtin_providers_follow_the_protocol() -> None:
    names = {p.name for p in registered()}
    assert {"anthropic", "openai"} <= names
    assert all(isinstance(p, Provider) for p in registered())


def test_patch_function_records_and_replays_every_shape(cassette_dir: Any) -> None:
    providers = [llmvcr.patch_function(f"userlib:Gateway.{m}") for m in ("complete", "acomplete", "words", "broken")]
    providers.append(llmvcr.patch_function("userlib:stream_tokens"))
    try:
        gateway = userlib.Gateway()

        async def agen() -> list[Any]:
            return [item async for item in userlib.stream_tokens("one two three")]

        def run() -> list[Any]:
            out: list[Any] = [gateway.complete("hi"), asyncio.run(gateway.acomplete("async")),
                              list(gateway.words("a b c")), asyncio.run(agen())]
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
    reply = client.chat.completions.create(model="llama-test", messages=[{"role": "user", "content": "hi groq"}])
    chunks = list(client.chat.completions.create(model="llama-test", messages=[{"role": "user", "content": "s"}],
                                                 stream=True))
    return [reply.model_dump(), [c.model_dump() for c in chunks]]


def test_a_third_stainless_sdk_through_the_shared_adapter(server: Any, cassette_dir: Any, request: Any) -> None:
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
                client.chat.completions.create(model="llama-test", messages=[{"role": "user", "content": "new"}])
    finally:
        unregister_provider("groq")
