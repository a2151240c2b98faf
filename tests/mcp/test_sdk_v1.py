"""The mcp SDK's 1.x line (``mcp<2``, which langchain-mcp-adapters still pins): the same seams, recorded and
replayed with nothing started. Runs where 1.x is installed (.ci/run: its own environment)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp.client.stdio")  # (tests/mcp is on the path too: a bare "mcp" is found)
if not version("mcp").startswith("1."):
    pytest.skip("the mcp SDK's 1.x line is not installed here", allow_module_level=True)

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

import llmvcr

SERVER = Path(__file__).with_name("clock_server.py")


async def _session(command: str) -> list[str]:
    params = StdioServerParameters(command=command, args=[str(SERVER)])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            now = await session.call_tool("now", {})
            added = await session.call_tool("add", {"a": 2, "b": 3})
    return [",".join(t.name for t in tools.tools), now.content[0].text, added.content[0].text]  # type: ignore[union-attr]


@pytest.mark.slow
def test_mcp_1x_records_and_replays_a_stdio_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "v1.yaml"
    with llmvcr.use_cassette(str(path), record_mode="once"):
        recorded = anyio.run(_session, sys.executable)
    assert recorded[2] == "5" and "now" in recorded[0]
    started: list[Any] = []
    real = anyio.open_process

    async def counting(*args: Any, **kwargs: Any) -> Any:
        started.append(args)
        return await real(*args, **kwargs)

    monkeypatch.setattr(anyio, "open_process", counting)
    with llmvcr.use_cassette(str(path), record_mode="none") as cassette:
        replayed = anyio.run(_session, "/nonexistent/python")
    assert replayed == recorded and started == [] and cassette.unplayed == []


async def _over_http(url: str) -> list[str]:
    if url.endswith("/sse"):
        transport: Any = sse_client(url)
    else:
        transport = streamable_http_client(url)  # the 1.x line yields a third item
    async with transport as (read, write, *_):
        async with ClientSession(read, write) as session:
            await session.initialize()
            now = await session.call_tool("now", {})
    return [now.content[0].text]  # type: ignore[union-attr]


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["http", "sse"])
def test_mcp_1x_records_and_replays_an_http_session(tmp_path: Path, transport: str) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/{'mcp' if transport == 'http' else 'sse'}"
    proc = subprocess.Popen([sys.executable, str(SERVER), transport, str(port)], stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        path = tmp_path / "v1-http.yaml"
        with llmvcr.use_cassette(str(path), record_mode="once"):
            recorded = anyio.run(_over_http, url)
    finally:
        proc.terminate()
        proc.wait(10)
    with llmvcr.use_cassette(str(path), record_mode="none") as cassette:
        replayed = anyio.run(_over_http, url)  # the server is stopped
    assert replayed == recorded and cassette.unplayed == []
