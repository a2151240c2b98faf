"""Streamable HTTP MCP servers recorded beside the model's calls, and replayed with the server stopped."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp.client.streamable_http")  # (tests/mcp is on the path too: a bare "mcp" is found)

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

import llmvcr
from llmvcr.storage.files import load_cassette

SERVER = Path(__file__).with_name("clock_server.py")
TOKEN = "sk-mcp-sentinel-0123456789abcdefghijklmnopqrstuv"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_server() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, str(SERVER), "http", str(port)], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}/mcp", proc
    finally:
        proc.terminate()
        proc.wait(10)


async def _session(url: str) -> dict[str, Any]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = await session.list_tools()
                now = await session.call_tool("now", {})
                added = await session.call_tool("add", {"a": 20, "b": 22})
    return {
        "tools": sorted(t.name for t in tools.tools),
        "now": now.content[0].text,  # type: ignore[union-attr]
        "add": added.content[0].text,  # type: ignore[union-attr]
    }


def _refuse_sockets(mp: pytest.MonkeyPatch) -> list[Any]:
    attempts: list[Any] = []

    def refuse(self: socket.socket, address: Any) -> None:
        attempts.append(address)
        raise OSError(f"network blocked: connect to {address!r}")

    mp.setattr(socket.socket, "connect", refuse)
    mp.setattr(socket.socket, "connect_ex", refuse)
    return attempts


@pytest.mark.slow
def test_a_streamable_http_session_replays_with_its_server_stopped(
    tmp_path: Path, http_server: tuple[str, subprocess.Popen[bytes]], anthropic_client: Any
) -> None:
    url, proc = http_server
    path = tmp_path / "http.yaml"
    with llmvcr.use_cassette(str(path), record_mode="once"):
        recorded = _record(url, anthropic_client)
    proc.terminate()
    proc.wait(10)
    entries = load_cassette(str(path)).entries
    assert [e.provider for e in entries][:2] == ["anthropic", "mcp"]
    assert [e.request.method for e in entries[1:]] == ["initialize", "tools/list", "tools/call", "tools/call"]
    assert {e.request.path for e in entries if e.provider == "mcp"} == {"http://127.0.0.1/mcp"}
    assert TOKEN not in path.read_text()
    assert recorded["add"] == "42"

    with pytest.MonkeyPatch.context() as mp:
        attempts = _refuse_sockets(mp)
        with llmvcr.use_cassette(str(path), record_mode="none") as cassette:
            replayed = _record(url, anthropic_client)
    assert replayed == recorded  # the recorded time, from a server that is not running
    assert cassette.unplayed == []
    assert attempts == []


def _record(url: str, anthropic_client: Any) -> dict[str, Any]:
    reply = anthropic_client.messages.create(
        model="claude-haiku-4-5", max_tokens=10, messages=[{"role": "user", "content": "the time?"}]
    )
    out = anyio.run(_session, url)
    out["model"] = reply.content[0].text
    return out
