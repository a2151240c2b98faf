"""stdio MCP servers recorded beside the model's calls, and replayed with nothing started."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp.client.session")  # (tests/mcp is on the path too: a bare "mcp" is found)

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp.types import CreateMessageResult, TextContent

import llmvcr
from llmvcr.storage.files import load_cassette

SERVER = Path(__file__).with_name("clock_server.py")


async def _sampling(context: Any, params: Any) -> CreateMessageResult:
    return CreateMessageResult(
        role="assistant", content=TextContent(type="text", text="forty-two"), model="m"
    )


async def _session(command: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    params = StdioServerParameters(command=command, args=[str(SERVER), *ARGS], env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, sampling_callback=_sampling) as session:
            await session.initialize()
            tools = await session.list_tools()
            now = await session.call_tool("now", {})
            added = await session.call_tool("add", {"a": 2, "b": 3})
            asked = await session.call_tool("ask", {"question": "six times seven?"})
    return {
        "tools": sorted(t.name for t in tools.tools),
        "now": now.content[0].text,  # type: ignore[union-attr]
        "add": added.content[0].text,  # type: ignore[union-attr]
        "ask": asked.content[0].text,  # type: ignore[union-attr]
    }


def _spawned(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Count every process started (replay must start none)."""
    started: list[Any] = []
    real = anyio.open_process

    async def counting(*args: Any, **kwargs: Any) -> Any:
        started.append(args)
        return await real(*args, **kwargs)

    monkeypatch.setattr(anyio, "open_process", counting)
    monkeypatch.setattr(subprocess.Popen, "__init__", lambda *a, **k: started.append(a) or 1 / 0)
    return started


pytestmark = pytest.mark.slow  # each module records a live server once (about 3 s)
KEY_ENV = "sk-envsentinel-0123456789abcdefghijklmnopqrst"
KEY_ARG = "sk-argsentinel-0123456789abcdefghijklmnopqrst"
KEY_EQ = "tok-eqsentinel-0123456789abcdefghijklmnopqrst"
KEY_BARE = "sk-ant-api03-baresentinel0123456789abcdefghijklmnopqrstuvwxyzAB"  # a positional argument
ARGS = ["--api-key", KEY_ARG, f"--token={KEY_EQ}", KEY_BARE]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """One recording of the clock server, its command line and environment holding keys."""
    path = tmp_path_factory.mktemp("mcp") / "clock.yaml"
    with llmvcr.use_cassette(str(path), record_mode="once"):
        answers = anyio.run(_session, sys.executable, {"CLOCK_API_KEY": KEY_ENV})
    return path, answers


def test_a_stdio_session_is_recorded_both_ways_in_order(recorded: tuple[Path, dict[str, Any]]) -> None:
    path, answers = recorded
    assert answers["tools"] == ["add", "ask", "now", "weather"] and answers["add"] == "5"
    assert answers["ask"] == "forty-two"
    entries = load_cassette(str(path)).entries
    assert {e.provider for e in entries} == {"mcp"}
    methods = [e.request.method for e in entries]
    assert methods == ["initialize", "tools/list", "tools/call", "tools/call", "tools/call"]
    name = entries[0].request.path
    assert name.startswith("stdio:python clock_server.py --api-key <REDACTED> --token=<REDACTED> <REDACTED")
    assert entries[0].response.status == 200 and "serverInfo" in entries[0].response.body["result"]
    ask = entries[-1].response.stream or []
    assert [(e["event"], e["data"].get("method")) for e in ask] == [
        ("server", "notifications/message"),
        ("server", "sampling/createMessage"),
        ("client", None),  # the client's answer to the server's request
    ]
    times = [e["t"] for e in ask]
    assert times == sorted(times) and all(isinstance(t, float) for t in times)
    assert "id" not in (entries[2].request.body or {})


def test_no_key_of_the_command_line_or_environment_reaches_the_cassette(
    recorded: tuple[Path, dict[str, Any]],
) -> None:
    text = recorded[0].read_text()
    for key in (KEY_ENV, KEY_ARG, KEY_EQ, KEY_BARE):
        assert key not in text


def test_replay_starts_nothing_and_answers_as_recorded(
    recorded: tuple[Path, dict[str, Any]], monkeypatch: pytest.MonkeyPatch, no_network: list[Any]
) -> None:
    path, answers = recorded
    started = _spawned(monkeypatch)
    with llmvcr.use_cassette(str(path), record_mode="none") as cassette:
        replayed = anyio.run(_session, "/nonexistent/bin/python3.12")
    assert replayed == answers  # the recorded time, not the time now; the SDK's own types parsed it
    assert started == [] and no_network == []
    assert cassette.unplayed == []


async def _add(command: str, a: int) -> Any:
    params = StdioServerParameters(command=command, args=[str(SERVER), *ARGS])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, sampling_callback=_sampling) as session:
            await session.initialize()
            try:
                return await session.call_tool("add", {"a": a, "b": 3})
            except MCPError as err:
                return err


def test_a_call_the_cassette_does_not_hold_raises_naming_the_server_method_and_diff(
    recorded: tuple[Path, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    started = _spawned(monkeypatch)
    with llmvcr.use_cassette(str(recorded[0]), record_mode="none", on_unplayed="ignore"):
        caught = anyio.run(_add, "/nonexistent/python", 7)
    assert isinstance(caught, MCPError)  # the SDK's own error, at the call, with llmvcr's message
    text = str(caught)
    assert text.startswith("llmvcr: no recorded entry in")
    assert "stdio:python clock_server.py" in text and "tools/call" in text
    assert "arguments.a" in text and "2" in text and "7" in text
    assert KEY_ARG not in text
    assert started == []


def test_a_replay_only_cassette_with_nothing_for_a_server_fails_before_starting_it(
    recorded: tuple[Path, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    started = _spawned(monkeypatch)

    async def other() -> None:
        params = StdioServerParameters(command=sys.executable, args=["other_server.py"])
        async with stdio_client(params):
            pass

    with llmvcr.use_cassette(str(recorded[0]), record_mode="none", on_unplayed="ignore"):
        with pytest.raises(
            llmvcr.ReplayDivergence, match=r"no MCP traffic for the server stdio:python other_server\.py"
        ):
            anyio.run(other)
    assert started == []


def test_recorded_mcp_requests_the_run_did_not_make_are_unplayed(
    recorded: tuple[Path, dict[str, Any]],
) -> None:
    async def first_only() -> None:
        params = StdioServerParameters(command="python", args=[str(SERVER), *ARGS])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, sampling_callback=_sampling) as session:
                await session.initialize()

    with llmvcr.use_cassette(str(recorded[0]), record_mode="none", on_unplayed="ignore") as cassette:
        anyio.run(first_only)
    assert [e.request.method for e in cassette.unplayed] == [
        "tools/list",
        "tools/call",
        "tools/call",
        "tools/call",
    ]


def test_a_tool_the_recorded_tools_list_does_not_hold_is_said_first(
    recorded: tuple[Path, dict[str, Any]],
) -> None:
    async def call_missing() -> Any:
        params = StdioServerParameters(command="python", args=[str(SERVER), *ARGS])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, sampling_callback=_sampling) as session:
                await session.initialize()
                try:
                    return await session.call_tool("forecast", {"city": "Paris"})
                except MCPError as err:
                    return err

    with llmvcr.use_cassette(str(recorded[0]), record_mode="none", on_unplayed="ignore"):
        caught = anyio.run(call_missing)
    assert isinstance(caught, MCPError)
    first, _, rest = str(caught).partition("\n")
    assert (
        "tools of the MCP server stdio:python clock_server.py" in first and "changed since recording" in first
    )
    assert "'forecast' is not among its recorded tools (add, ask, now, weather)" in first
    assert "no recorded entry" in rest  # then the divergence itself


def test_ignore_applies_to_mcp_params(recorded: tuple[Path, dict[str, Any]]) -> None:
    with llmvcr.use_cassette(
        str(recorded[0]), record_mode="none", on_unplayed="ignore", ignore=["arguments.a"]
    ):
        answer = anyio.run(_add, "python", 99)  # recorded with a=2: the ignored path does not count
    assert not isinstance(answer, MCPError)
    assert answer.content[0].text == "5"  # the recorded answer


def test_a_second_connection_to_a_server_being_recorded_is_recorded_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An adapter that connects once per tool call (langchain-mcp-adapters): the second connection is
    not answered from what the first just recorded, and both replay in order with nothing started."""
    path = tmp_path / "twice.yaml"
    with llmvcr.use_cassette(str(path), record_mode="once"):
        live = [anyio.run(_add, sys.executable, a).content[0].text for a in (1, 2)]  # type: ignore[union-attr]
    assert live == ["4", "5"]
    methods = [e.request.method for e in load_cassette(str(path)).entries]
    assert methods.count("initialize") == 2 and methods.count("tools/call") == 2  # two whole connections
    started = _spawned(monkeypatch)
    with llmvcr.use_cassette(str(path), record_mode="none") as cassette:
        again = [anyio.run(_add, "/nowhere/python", a).content[0].text for a in (1, 2)]  # type: ignore[union-attr]
    assert again == live and started == [] and cassette.unplayed == []
