"""``llmvcr verify`` for MCP: a cassette recorded against a real stdio server (the SDK's own server
class, started by the test) is sent again to that server after its tools changed; each kind of
change is reported as drift, nothing when nothing changed, and ``tools/call`` only with --mcp-calls."""

from __future__ import annotations

import io
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

pytest.importorskip("mcp.client.stdio")

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

import llmvcr
from llmvcr.cli import main

SERVER = Path(__file__).resolve().parent.parent / "mcp" / "changing_server.py"


async def _use_tools() -> None:
    params = StdioServerParameters(command=sys.executable, args=[str(SERVER)], env={"TOOLS_VERSION": "1"})
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            await session.call_tool("echo", {"text": "hi"})


def verify(*args: str) -> tuple[int, str]:
    out, saved = io.StringIO(), sys.stdout
    sys.stdout = out
    try:
        status = main(["verify", *args])
    finally:
        sys.stdout = saved
    return status, out.getvalue()


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    path = tmp_path / "tools.yaml"
    with llmvcr.use_cassette(str(path), record_mode="once"):
        anyio.run(_use_tools)
    return path


@pytest.mark.slow
def test_a_server_whose_tools_changed_is_reported_as_drift(
    recorded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = recorded.read_bytes()
    command = f"{sys.executable} {SERVER}"
    monkeypatch.setenv("TOOLS_VERSION", "1")
    status, text = verify(str(recorded), "--mcp", command, "--mcp-calls")
    assert status == 0, text
    assert "ok (3 answers, same shape)" in text

    monkeypatch.setenv("TOOLS_VERSION", "2")
    status, text = verify(str(recorded), "--mcp", command)
    assert status == 1, text
    for line in (
        "tool renamed: echo -> say",
        "tool removed: legacy",
        "tool added: add",
        "tool input schema changed: weather (+units)",
        "tool description changed: now: 'The time now.' -> 'The time now, in nanoseconds since the epoch.'",
        "1 tools/call of stdio:python changing_server.py not sent again",
    ):
        assert line in text, text
    assert "mcp tools/list stdio:python changing_server.py" in text
    assert recorded.read_bytes() == before  # nothing rewritten

    status, text = verify(str(recorded), "--mcp", command, "--mcp-calls")
    assert status == 1, text
    assert "tool result changed: echo: isError False -> True" in text  # the renamed tool, called


def test_a_server_that_is_not_given_or_found_is_not_checked(tmp_path: Path) -> None:
    path = tmp_path / "http.yaml"
    path.write_text(
        "version: 1\nentries:\n- provider: mcp\n  request: {method: tools/list, path: 'http://127.0.0.1/mcp', "
        "body: {}}\n  request_hash: x\n  response: {status: 200, body: {result: {tools: []}}}\n"
    )
    status, text = verify(str(path))
    assert status == 2, text
    assert (
        "the HTTP server http://127.0.0.1/mcp was not given (its port is not recorded); give --mcp URL"
        in text
    )


@pytest.mark.slow
def test_a_streamable_http_server_given_by_url_is_checked(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    clock = Path(__file__).resolve().parent.parent / "mcp" / "clock_server.py"
    proc = subprocess.Popen([sys.executable, str(clock), "http", str(port)], stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/mcp"

    async def listed() -> None:
        async with streamable_http_client(url) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                await session.list_tools()

    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        path = tmp_path / "http.yaml"
        with llmvcr.use_cassette(str(path), record_mode="once"):
            anyio.run(listed)
        status, text = verify(str(path), "--mcp", url)
    finally:
        proc.terminate()
        proc.wait(10)
    assert status == 0, text
    assert "ok (2 answers, same shape)" in text
