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
from mcp.types import CreateMessageResult, TextContent

import llmvcr
from llmvcr.storage.files import load_cassette

SERVER = Path(__file__).with_name("clock_server.py")


async def _sampling(context: Any, params: Any) -> CreateMessageResult:
    return CreateMessageResult(
        role="assistant", content=TextContent(type="text", text="forty-two"), model="m"
    )


async def _session(command: str, *, env: dict[str, str] | None = None) -> dict[str, Any]:
    params = StdioServerParameters(command=command, args=[str(SERVER)], env=env)
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


@pytest.mark.slow
def test_a_stdio_session_replays_with_its_server_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_network: list[Any]
) -> None:
    path = tmp_path / "clock.yaml"
    with llmvcr.use_cassette(str(path), record_mode="once"):
        recorded = anyio.run(_session, sys.executable)
    assert recorded["tools"] == ["add", "ask", "now"] and recorded["add"] == "5"
    assert recorded["ask"] == "forty-two"
    entries = load_cassette(str(path)).entries
    assert {e.provider for e in entries} == {"mcp"}
    assert [e.request.method for e in entries] == [
        "initialize",
        "tools/list",
        "tools/call",
        "tools/call",
        "tools/call",
    ]
    assert entries[0].request.path == "stdio:python clock_server.py"
    ask = entries[-1].response.stream or []
    assert [(e["event"], e["data"].get("method")) for e in ask] == [
        ("server", "notifications/message"),
        ("server", "sampling/createMessage"),
        ("client", None),
    ]
    assert all(isinstance(e["t"], float) for e in ask)

    started = _spawned(monkeypatch)
    with llmvcr.use_cassette(str(path), record_mode="none") as cassette:
        replayed = anyio.run(_session, "/nonexistent/bin/python")
    assert replayed == recorded  # the recorded time, not the time now
    assert started == [] and no_network == []
    assert cassette.unplayed == []
