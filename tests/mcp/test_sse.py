"""MCP servers over SSE recorded beside the model's calls, and replayed with the server stopped."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp.client.sse")  # (tests/mcp is on the path too: a bare "mcp" is found)

from mcp import ClientSession
from mcp.client.sse import sse_client
from mcp.shared.exceptions import MCPError
from mcp.types import CreateMessageResult, TextContent

import llmvcr
from llmvcr.mcp.exchange import NothingRecordedError
from llmvcr.storage.files import load_cassette

SERVER = Path(__file__).with_name("clock_server.py")
TOKEN = "sk-mcp-sentinel-sse-0123456789abcdefghijklmnopq"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def sse_server(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes], Path]]:
    """The clock server over SSE; each tool it runs is a line of its log."""
    port, log = _free_port(), tmp_path / "ran.log"
    env = {**os.environ, "CLOCK_LOG": str(log)}
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "sse", str(port)], stderr=subprocess.DEVNULL, env=env
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}/sse", proc, log
    finally:
        proc.terminate()
        proc.wait(10)


async def _sampling(context: Any, params: Any) -> CreateMessageResult:
    return CreateMessageResult(
        role="assistant", content=TextContent(type="text", text="forty-two"), model="m"
    )


async def _session(url: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    async with sse_client(url, headers={"Authorization": f"Bearer {TOKEN}"}) as (read, write):
        async with ClientSession(read, write, sampling_callback=_sampling) as session:
            await session.initialize()
            out["tools"] = sorted(t.name for t in (await session.list_tools()).tools)
            for name, args in (("now", {}), ("add", {"a": 20, "b": 22}), ("ask", {"question": "6 x 7?"})):
                out[name] = await _call(session, name, args)
    return out


async def _call(session: ClientSession, name: str, args: dict[str, Any]) -> Any:
    """The tool's text, or the SDK's error (a denied tool)."""
    try:
        return (await session.call_tool(name, args)).content[0].text  # type: ignore[union-attr]
    except MCPError as err:
        return err


def _refuse_sockets(mp: pytest.MonkeyPatch) -> list[Any]:
    attempts: list[Any] = []

    def refuse(self: socket.socket, address: Any) -> None:
        attempts.append(address)
        raise OSError(f"network blocked: connect to {address!r}")

    mp.setattr(socket.socket, "connect", refuse)
    mp.setattr(socket.socket, "connect_ex", refuse)
    return attempts


def _ran(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


@pytest.mark.slow
@pytest.mark.filterwarnings(
    "error::llmvcr.errors.UnrecordedCallWarning"
)  # its GET and posts are the MCP entries
def test_an_sse_session_replays_with_its_server_stopped(
    tmp_path: Path, sse_server: tuple[str, subprocess.Popen[bytes], Path], anthropic_client: Any
) -> None:
    url, proc, log = sse_server
    path = tmp_path / "sse.yaml"
    with llmvcr.use_cassette(str(path), record_mode="once"):
        reply = anthropic_client.messages.create(
            model="claude-haiku-4-5", max_tokens=10, messages=[{"role": "user", "content": "the time?"}]
        )
        recorded = anyio.run(_session, url)
    proc.terminate()
    proc.wait(10)
    assert recorded["add"] == "42" and recorded["ask"] == "forty-two" and _ran(log) == ["now", "add"]
    entries = load_cassette(str(path)).entries
    assert [e.provider for e in entries][:2] == ["anthropic", "mcp"]
    assert [e.request.method for e in entries[1:]] == ["initialize", "tools/list"] + ["tools/call"] * 3
    assert {e.request.path for e in entries if e.provider == "mcp"} == {"http://127.0.0.1/sse"}  # no port
    asked = entries[-1].response.stream or []  # the server's sampling request, and the client's answer
    assert [(e["event"], e["data"].get("method")) for e in asked][-2:] == [
        ("server", "sampling/createMessage"),
        ("client", None),
    ]
    assert TOKEN not in path.read_text()

    with pytest.MonkeyPatch.context() as mp:
        attempts = _refuse_sockets(mp)
        with llmvcr.use_cassette(str(path), record_mode="none") as cassette:
            again = anthropic_client.messages.create(
                model="claude-haiku-4-5", max_tokens=10, messages=[{"role": "user", "content": "the time?"}]
            )
            replayed = anyio.run(_session, url)
    assert replayed == recorded  # the recorded time, from a server that is not running
    assert again.content[0].text == reply.content[0].text
    assert cassette.unplayed == [] and attempts == [] and _ran(log) == ["now", "add"]


@pytest.mark.filterwarnings("error::llmvcr.errors.UnrecordedCallWarning")
def test_a_denied_tool_over_sse_is_never_posted(
    tmp_path: Path, sse_server: tuple[str, subprocess.Popen[bytes], Path]
) -> None:
    url, _, log = sse_server
    path = tmp_path / "sse.yaml"
    with llmvcr.use_cassette(str(path), record_mode="once", tool_policy={"now": "deny"}):
        out = anyio.run(_session, url)
    assert isinstance(out["now"], MCPError) and "'deny'" in str(out["now"]), out
    assert "http://127.0.0.1/sse" in str(out["now"])
    assert out["add"] == "42" and _ran(log) == ["add"]  # never reached the server
    called = [e.request.body for e in load_cassette(str(path)).entries if e.request.method == "tools/call"]
    assert [b["name"] for b in called] == ["add", "ask"]  # type: ignore[index]


def test_a_replay_only_cassette_without_the_sse_server_refuses_it_before_connecting(tmp_path: Path) -> None:
    path = tmp_path / "sse.yaml"
    path.write_text("version: 1\nentries: []\n")
    with pytest.MonkeyPatch.context() as mp:
        attempts = _refuse_sockets(mp)
        with llmvcr.use_cassette(str(path), record_mode="none", on_unplayed="ignore"):
            with pytest.raises(BaseException) as caught:
                anyio.run(_session, f"http://127.0.0.1:{_free_port()}/sse")
    errors: list[BaseException] = [caught.value]
    while getattr(errors[-1], "exceptions", None):  # an exception group (anyio task groups)
        errors.append(errors[-1].exceptions[0])  # type: ignore[attr-defined]
    assert isinstance(errors[-1], NothingRecordedError), errors
    assert "http://127.0.0.1/sse" in str(errors[-1]) and str(path) in str(errors[-1])
    assert attempts == []


def _raised_shape(url: str) -> list[str]:
    """What a caller's own error inside an SSE session reaches it as: the exception groups around it."""

    async def failing() -> None:
        async with sse_client(url) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                raise KeyError("the caller's own")

    with pytest.raises(BaseException) as caught:
        anyio.run(failing)
    shape, error = [], caught.value
    while True:
        shape.append(type(error).__name__)
        inner = getattr(error, "exceptions", None)
        if not inner:
            return shape
        error = inner[0]


def test_an_error_inside_an_sse_session_reaches_the_caller_as_it_would_outside_a_cassette(
    tmp_path: Path, sse_server: tuple[str, subprocess.Popen[bytes], Path]
) -> None:
    url, _, _ = sse_server
    path = tmp_path / "sse.yaml"
    outside = _raised_shape(url)
    with llmvcr.use_cassette(str(path), record_mode="once"):
        recording = _raised_shape(url)
    with llmvcr.use_cassette(str(path), record_mode="none"):
        replaying = _raised_shape(url)
    assert outside[-1] == "KeyError" and recording == outside and replaying == outside
