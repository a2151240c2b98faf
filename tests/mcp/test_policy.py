"""tool_policy on MCP tools/call, by params.name: deny, live and replay, counted at a real server."""

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

pytest.importorskip("mcp.client.session")  # (tests/mcp is on the path too: a bare "mcp" is found)

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

import llmvcr
from llmvcr.storage.files import load_cassette

SERVER = Path(__file__).with_name("clock_server.py")
KEY = "sk-policysentinel-0123456789abcdefghijklmnopqrst"
NAME = "stdio:python clock_server.py --api-key <REDACTED>"
pytestmark = pytest.mark.slow  # each test runs a live server once or more (about 1 s each)


def _spawned(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Count every process started (a replayed connection starts none)."""
    started: list[Any] = []
    real = anyio.open_process

    async def counting(*args: Any, **kwargs: Any) -> Any:
        started.append(args)
        return await real(*args, **kwargs)

    monkeypatch.setattr(anyio, "open_process", counting)
    return started


async def _session(log: Path, *, list_tools: bool = True) -> dict[str, Any]:
    """initialize, tools/list, add, now, add again: what each call gave (or the error it raised)."""
    params = StdioServerParameters(
        command=sys.executable, args=[str(SERVER), "--api-key", KEY], env={"CLOCK_LOG": str(log)}
    )
    out: dict[str, Any] = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            if list_tools:
                await session.list_tools()
            out["add"] = (await session.call_tool("add", {"a": 2, "b": 3})).content[0].text  # type: ignore[union-attr]
            try:
                out["now"] = (await session.call_tool("now", {})).content[0].text  # type: ignore[union-attr]
            except MCPError as err:
                out["now"] = err
            out["again"] = (await session.call_tool("add", {"a": 1, "b": 1})).content[0].text  # type: ignore[union-attr]
    return out


def _ran(log: Path) -> list[str]:
    """The tools the server ran, in order (counted at the server)."""
    return log.read_text().split() if log.exists() else []


def _called(path: Path) -> list[str]:
    """The tools/call entries of a cassette, by tool name."""
    return [
        e.request.body["name"]
        for e in load_cassette(str(path))
        if e.provider == "mcp" and e.request.method == "tools/call"
    ]


def _record(tmp_path: Path, **options: Any) -> tuple[Path, dict[str, Any]]:
    path = tmp_path / "clock.yaml"
    with llmvcr.use_cassette(str(path), record_mode="once", **options):
        out = anyio.run(_session, tmp_path / "recorded.log")
    return path, out


def _is_denied(err: Any, path: Path) -> None:
    assert isinstance(err, MCPError), err
    text = str(err)
    assert "'now'" in text and "'deny'" in text and str(path) in text, text
    assert NAME in text and KEY not in text, text  # the server named as the cassette names it
    assert "test_policy.py::" in text, text  # the test that made the call


def test_deny_while_recording_sends_nothing_and_records_nothing(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    path = tmp_path / "clock.yaml"
    with llmvcr.use_cassette(str(path), record_mode="once", tool_policy={"now": "deny"}):
        out = anyio.run(_session, log)
    _is_denied(out["now"], path)
    assert out["add"] == "5" and out["again"] == "2"  # the connection goes on after the denial
    assert _ran(log) == ["add", "add"]  # the server never saw the denied call
    assert _called(path) == ["add", "add"]
    assert KEY not in path.read_text()


def test_deny_while_replaying_answers_from_nowhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, recorded = _record(tmp_path)
    assert _called(path) == ["add", "now", "add"]
    before = path.read_bytes()
    started = _spawned(monkeypatch)
    log = tmp_path / "replayed.log"
    with llmvcr.use_cassette(
        str(path), record_mode="none", tool_policy={"now": "deny"}, on_unplayed="ignore"
    ):
        out = anyio.run(_session, log)
    _is_denied(out["now"], path)
    assert (out["add"], out["again"]) == (recorded["add"], recorded["again"])
    assert started == [] and _ran(log) == []  # no server: nothing reached one
    assert path.read_bytes() == before


def test_a_live_tool_opens_its_connection_live_and_is_never_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, recorded = _record(tmp_path, tool_policy={"now": "live"})
    assert _called(path) == ["add", "add"]  # the live call is not recorded
    assert _ran(tmp_path / "recorded.log") == ["add", "now", "add"]
    before = path.read_bytes()
    started = _spawned(monkeypatch)
    log = tmp_path / "replayed.log"
    with llmvcr.use_cassette(str(path), record_mode="none", tool_policy={"now": "live"}) as cassette:
        out = anyio.run(_session, log)
    assert len(started) == 1  # the recorded tools/list lists 'now': the server runs
    assert _ran(log) == ["add", "now", "add"]  # every request goes to it
    assert int(out["now"]) > int(recorded["now"])  # the time now, not the recording's
    assert out["add"] == "5"
    assert cassette.unplayed == [] and len(cassette.played) == 4  # the other requests: matched
    assert path.read_bytes() == before


def test_a_live_tool_in_a_replayed_connection_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = _record(tmp_path, tool_policy={"now": "live"})
    text = path.read_text()  # as if recorded before the server had 'now': its tools/list lacks it
    assert text.count("name: now") == 1
    path.write_text(text.replace("name: now", "name: then"))
    started = _spawned(monkeypatch)
    with llmvcr.use_cassette(str(path), record_mode="none", tool_policy={"now": "live"}):
        out = anyio.run(_session, tmp_path / "replayed.log")
    assert started == []  # nothing says the server has 'now': the connection replays
    assert isinstance(out["now"], MCPError)
    assert "'live'" in str(out["now"]) and "was not started" in str(out["now"]) and NAME in str(out["now"])
    assert out["again"] == "2"


def test_a_policy_naming_a_tool_the_server_lacks_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, recorded = _record(tmp_path, tool_policy={"drop_table": "deny", "clock": "live"})
    assert _called(path) == ["add", "now", "add"]
    started = _spawned(monkeypatch)
    with llmvcr.use_cassette(
        str(path), record_mode="none", tool_policy={"drop_table": "deny", "clock": "live"}
    ):
        out = anyio.run(_session, tmp_path / "replayed.log")
    assert started == [] and out == recorded


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    port, log = _free_port(), tmp_path / "http.log"
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "http", str(port)],
        stderr=subprocess.DEVNULL,
        env={"CLOCK_LOG": str(log), "PATH": ""},
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}/mcp", log
    finally:
        proc.terminate()
        proc.wait(10)


async def _http_session(url: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            try:
                out["now"] = (await session.call_tool("now", {})).content[0].text  # type: ignore[union-attr]
            except MCPError as err:
                out["now"] = err
            out["add"] = (await session.call_tool("add", {"a": 2, "b": 3})).content[0].text  # type: ignore[union-attr]
    return out


def test_deny_over_streamable_http_sends_nothing(tmp_path: Path, http_server: tuple[str, Path]) -> None:
    url, log = http_server
    path = tmp_path / "http.yaml"
    with llmvcr.use_cassette(str(path), record_mode="once", tool_policy={"now": "deny"}):
        out = anyio.run(_http_session, url)
    assert isinstance(out["now"], MCPError) and "'deny'" in str(out["now"]), out
    assert "http://127.0.0.1/mcp" in str(out["now"])
    assert out["add"] == "5" and _ran(log) == ["add"]
    assert _called(path) == ["add"]


async def _wrapped(path: Path, log: Path, *flags: str) -> dict[str, Any]:
    """The clock server behind ``llmvcr mcp``, driven by the SDK's client from outside any cassette."""
    env = {k: v for k, v in os.environ.items() if k != "CI"} | {"CLOCK_LOG": str(log)}
    argv = ["-m", "llmvcr", "mcp", "--cassette", str(path), *flags, "--", sys.executable, str(SERVER)]
    out: dict[str, Any] = {}
    async with stdio_client(StdioServerParameters(command=sys.executable, args=argv, env=env)) as (
        read,
        write,
    ):
        async with ClientSession(read, write) as session:
            await session.initialize()
            out["add"] = (await session.call_tool("add", {"a": 2, "b": 3})).content[0].text  # type: ignore[union-attr]
            try:
                out["now"] = (await session.call_tool("now", {})).content[0].text  # type: ignore[union-attr]
            except MCPError as err:
                out["now"] = err
    return out


def test_llmvcr_mcp_denies_recording_and_replaying(tmp_path: Path) -> None:
    path, log = tmp_path / "wrapped.yaml", tmp_path / "server.log"
    recorded = anyio.run(_wrapped, path, log, "--tool-policy", "now=deny")
    assert isinstance(recorded["now"], MCPError) and "'deny'" in str(recorded["now"]), recorded
    assert recorded["add"] == "5" and _ran(log) == ["add"] and _called(path) == ["add"]
    anyio.run(_wrapped, path, log, "--record-mode", "all")  # recorded again, now with now
    assert _called(path) == ["add", "now"] and _ran(log) == ["add", "add", "now"]
    replayed = anyio.run(_wrapped, path, log, "--record-mode", "none", "--tool-policy", "now=deny")
    assert isinstance(replayed["now"], MCPError) and "'deny'" in str(replayed["now"]), replayed
    assert replayed["add"] == "5" and _ran(log) == ["add", "add", "now"]  # the server never started


def test_a_live_tool_over_streamable_http_reaches_its_server_in_a_replay(
    tmp_path: Path, http_server: tuple[str, Path]
) -> None:
    url, log = http_server
    path = tmp_path / "http.yaml"

    async def session() -> list[str]:
        async with streamable_http_client(url) as (read, write):
            async with ClientSession(read, write) as client:
                await client.initialize()
                await client.list_tools()
                return [
                    (await client.call_tool(n, a)).content[0].text
                    for n, a in (("now", {}), ("add", {"a": 2, "b": 3}))
                ]  # type: ignore[union-attr]

    with llmvcr.use_cassette(str(path), record_mode="once", tool_policy={"now": "live"}):
        first = anyio.run(session)
    assert _called(path) == ["add"] and _ran(log) == ["now", "add"]
    with llmvcr.use_cassette(str(path), record_mode="none", tool_policy={"now": "live"}) as cassette:
        second = anyio.run(session)
    assert _ran(log) == ["now", "add", "now", "add"]  # the connection went live: every call reached it
    assert int(second[0]) > int(first[0]) and second[1] == "5"
    assert cassette.unplayed == []
