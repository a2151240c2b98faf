"""MCP servers from npm beyond stdio's ``server-everything``: ``@modelcontextprotocol/server-filesystem``
on a temporary folder over stdio (a tool with a side effect), and ``server-everything`` over
streamable HTTP. Each is recorded, then replayed with nothing started and sockets refused."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp.client.stdio")  # (tests/mcp is on the path too: a bare "mcp" is found)

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

import llmvcr
from llmvcr.storage.files import load_cassette

BIN = Path(__file__).parent / "node" / "node_modules" / ".bin"
FILESYSTEM = BIN / "mcp-server-filesystem"
EVERYTHING = BIN / "mcp-server-everything"
pytestmark = pytest.mark.skipif(  # each test starts a real node server once: about 1 s
    not (FILESYSTEM.exists() and EVERYTHING.exists()) or shutil.which("node") is None,
    reason="run `npm ci` in tests/mcp/node (.ci/run does)",
)


def _node() -> str:
    node = shutil.which("node")
    assert node is not None
    return node


def _started(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    started: list[Any] = []
    real = anyio.open_process

    async def counting(*args: Any, **kwargs: Any) -> Any:
        started.append(args)
        return await real(*args, **kwargs)

    monkeypatch.setattr(anyio, "open_process", counting)
    return started


def _text(result: Any) -> str:
    return " ".join(c.text for c in result.content if hasattr(c, "text"))


async def _filesystem(node: str, folder: Path) -> dict[str, Any]:
    params = StdioServerParameters(command=node, args=[str(FILESYSTEM), str(folder)])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            info = await session.initialize()
            tools = await session.list_tools()
            allowed = await session.call_tool("list_allowed_directories", {})
            listed = await session.call_tool("list_directory", {"path": str(folder)})
            read_back = await session.call_tool("read_text_file", {"path": str(folder / "notes.txt")})
            written = await session.call_tool(
                "write_file", {"path": str(folder / "written.txt"), "content": "written once\n"}
            )
            missing = await session.call_tool("read_text_file", {"path": str(folder / "absent.txt")})
    return {
        "server": info.server_info.name,
        "tools": sorted(t.name for t in tools.tools),
        "allowed": _text(allowed),
        "listed": _text(listed),
        "read": _text(read_back),
        "written": _text(written),
        "missing": (missing.is_error, _text(missing)),
    }


def test_server_filesystem_replays_without_the_folder_and_writes_nothing_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_network: list[Any]
) -> None:
    folder = tmp_path / "files"
    folder.mkdir()
    (folder / "notes.txt").write_text("first line\nsecond line\n")
    (folder / "sub").mkdir()
    path = tmp_path / "filesystem.yaml"
    with llmvcr.use_cassette(str(path), record_mode="once"):
        recorded = anyio.run(_filesystem, _node(), folder)
    assert recorded["server"] == "secure-filesystem-server"
    assert {"list_allowed_directories", "list_directory", "read_text_file", "write_file"} <= set(
        recorded["tools"]
    )
    assert str(folder) in recorded["allowed"]
    assert "[FILE] notes.txt" in recorded["listed"] and "[DIR] sub" in recorded["listed"]
    assert recorded["read"] == "first line\nsecond line\n"
    assert (folder / "written.txt").read_text() == "written once\n"  # the side effect, once
    assert recorded["missing"][0] is True  # an error result is recorded like any other
    calls = [
        e.request.body["name"] for e in load_cassette(str(path)).entries if e.request.method == "tools/call"
    ]
    assert calls == [
        "list_allowed_directories",
        "list_directory",
        "read_text_file",
        "write_file",
        "read_text_file",
    ]

    shutil.rmtree(folder)  # replay needs neither the server nor the folder
    started = _started(monkeypatch)
    with llmvcr.use_cassette(str(path), record_mode="none") as cassette:
        replayed = anyio.run(_filesystem, "/nonexistent/node", folder)
    assert replayed == recorded
    assert started == [] and no_network == [] and cassette.unplayed == []
    assert not folder.exists()  # write_file was answered from the cassette: nothing written again


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def everything_http() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``mcp-server-everything streamableHttp``, listening on ``PORT`` (its README and dist say so)."""
    port = _free_port()
    proc = subprocess.Popen(
        [_node(), str(EVERYTHING), "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    else:
        proc.kill()
        pytest.fail(
            f"mcp-server-everything streamableHttp did not listen on port {port} (exit {proc.poll()})"
        )
    try:
        yield f"http://127.0.0.1:{port}/mcp", proc
    finally:
        proc.terminate()
        proc.wait(10)


async def _everything_http(url: str) -> dict[str, Any]:
    progress: list[float] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(done)

    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write) as session:
            info = await session.initialize()
            tools = await session.list_tools()
            echo = await session.call_tool("echo", {"message": "hello over http"})
            total = await session.call_tool("get-sum", {"a": 20, "b": 22})
            slow = await session.call_tool(
                "trigger-long-running-operation", {"duration": 0.3, "steps": 3}, progress_callback=on_progress
            )
            prompt = await session.get_prompt("args-prompt", {"city": "Paris"})
            resources = await session.list_resources()
            read_back = await session.read_resource(resources.resources[0].uri)
            await session.send_ping()
    return {
        "server": info.server_info.name,
        "tools": sorted(t.name for t in tools.tools),
        "echo": echo.model_dump(),
        "sum": total.model_dump(),
        "slow": slow.model_dump(),
        "progress": progress,
        "prompt": prompt.model_dump(),
        "resource": read_back.model_dump(),
    }


def test_server_everything_over_streamable_http_replays_with_the_server_stopped(
    tmp_path: Path, everything_http: tuple[str, subprocess.Popen[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, proc = everything_http
    path = tmp_path / "everything-http.yaml"
    with llmvcr.use_cassette(str(path), record_mode="once"):
        recorded = anyio.run(_everything_http, url)
    proc.terminate()
    proc.wait(10)
    assert recorded["server"] == "mcp-servers/everything" and "echo" in recorded["tools"]
    assert "is 42" in recorded["sum"]["content"][0]["text"]
    assert recorded["progress"] == [1, 2, 3]
    entries = load_cassette(str(path)).entries
    methods = [e.request.method for e in entries]
    assert {"initialize", "tools/list", "tools/call", "prompts/get", "resources/read", "ping"} <= set(methods)
    assert {e.request.path for e in entries} == {"http://127.0.0.1/mcp"}  # the port is not part of the name
    slow = next(e for e in entries if (e.request.body or {}).get("name") == "trigger-long-running-operation")
    assert [m["data"].get("method") for m in slow.response.stream or []].count("notifications/progress") == 3

    started = _started(monkeypatch)
    attempts: list[Any] = []

    def refuse(self: socket.socket, address: Any) -> None:
        attempts.append(address)
        raise OSError(f"network blocked: connect to {address!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    with llmvcr.use_cassette(str(path), record_mode="none") as cassette:
        replayed = anyio.run(_everything_http, url)
    assert replayed == recorded
    assert attempts == [] and started == [] and cassette.unplayed == []
