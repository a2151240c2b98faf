"""The aiohttp and lm15 seams never let an unclaimed request slip past: a replay-only cassette
refuses it, a recording cassette warns about it; a known wire format from a home-made client is
recorded and replayed."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
from dspy._vendor.lm15.transports import StdlibAsyncTransport, StdlibTransport, TransportRequest
from llm_server import LLMServer
from roundtrip import SENTINEL, sockets_refused

import llmvcr
from llmvcr.errors import UnrecordedCallWarning

CHAT = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}


def seed_cassette(name: str, server: LLMServer) -> None:
    """A cassette with one entry, so that record_mode='none' has something to open."""
    with llmvcr.recording(name):
        StdlibTransport().stream(
            TransportRequest(
                "POST",
                server.url + "/v1/chat/completions",
                [("content-type", "application/json")],
                b'{"model":"m","messages":[]}',
            )
        ).read()


async def test_aiohttp_unclaimed_request_refused_in_replay_and_counted_when_recording(
    server: LLMServer,
) -> None:
    seed_cassette("aiohttp-unclaimed", server)
    before = server.request_count
    async with aiohttp.ClientSession() as session:
        with (
            llmvcr.recording("aiohttp-unclaimed", record_mode="none"),
            pytest.raises(llmvcr.LLMVCRError, match=r"GET http://127.0.0.1:\d+/other"),
        ):
            await session.get(server.url + "/other")
        assert server.request_count == before
        with pytest.warns(UnrecordedCallWarning, match=r"2 to 127.0.0.1"), llmvcr.recording("aiohttp-warn"):
            for path in ("/a", "/b"):
                async with session.get(server.url + path) as response:
                    await response.read()


async def test_aiohttp_home_made_client_in_openai_wire_format_is_recorded(server: LLMServer) -> None:
    async def call() -> Any:
        headers = {"authorization": f"Bearer {SENTINEL}"}
        async with (
            aiohttp.ClientSession(headers=headers) as session,
            session.post(server.url + "/v1/chat/completions", json=CHAT) as response,
        ):
            return response.status, await response.json()

    with llmvcr.recording("aiohttp-wire") as cassette:
        live = await call()
    assert [e.provider for e in cassette.entries] == ["openai"]
    with sockets_refused() as attempts, llmvcr.recording("aiohttp-wire", record_mode="none"):
        assert await call() == live
    assert attempts == []


def test_lm15_unclaimed_request_refused_in_replay_and_counted_when_recording(server: LLMServer) -> None:
    seed_cassette("lm15-unclaimed", server)
    before = server.request_count
    with (
        llmvcr.recording("lm15-unclaimed", record_mode="none"),
        pytest.raises(llmvcr.LLMVCRError, match=r"GET http://127.0.0.1:\d+/other"),
    ):
        StdlibTransport().stream(TransportRequest("GET", server.url + "/other"))
    assert server.request_count == before
    with pytest.warns(UnrecordedCallWarning, match=r"1 to 127.0.0.1"), llmvcr.recording("lm15-warn"):
        StdlibTransport().stream(TransportRequest("GET", server.url + "/a")).read()


async def test_lm15_async_transport_refuses_and_counts_alike(server: LLMServer) -> None:
    async def get(path: str) -> bytes:
        transport = StdlibAsyncTransport()
        async with transport.stream(TransportRequest("GET", server.url + path)) as response:
            return bytes(await response.read())

    seed_cassette("lm15-async-unclaimed", server)
    before = server.request_count
    with (
        llmvcr.recording("lm15-async-unclaimed", record_mode="none"),
        pytest.raises(llmvcr.LLMVCRError, match=r"GET http://127.0.0.1:\d+/other"),
    ):
        await get("/other")
    assert server.request_count == before
    with pytest.warns(UnrecordedCallWarning, match=r"1 to 127.0.0.1"), llmvcr.recording("lm15-async-warn"):
        await get("/a")
    assert server.request_count == before + 1
