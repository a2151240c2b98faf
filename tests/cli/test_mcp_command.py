"""``llmvcr mcp``: a stdio MCP server wrapped for any client, driven here by the Python SDK over stdio."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp.client.stdio")  # (tests/mcp is on the path too: a bare "mcp" is found)

from mcp import ClientSession, StdioServerParameters, stdio_client

from llmvcr.cli import main
from llmvcr.storage.files import load_cassette

SERVER = Path(__file__).parents[1] / "mcp" / "clock_server.py"


async def _client(args: list[str]) -> tuple[list[str], str, str]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "llmvcr", "mcp", *args])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            now = await session.call_tool("now", {})
            added = await session.call_tool("add", {"a": 1, "b": 2})
    return sorted(t.name for t in tools.tools), now.content[0].text, added.content[0].text  # type: ignore[union-attr]


@pytest.mark.slow
def test_llmvcr_mcp_records_a_stdio_server_and_replays_it_without_starting_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    path = tmp_path / "wrapped.yaml"
    recorded = anyio.run(_client, ["--cassette", str(path), "--", sys.executable, str(SERVER)])
    assert recorded[0] == ["add", "ask", "now", "weather"] and recorded[2] == "3"
    entries = load_cassette(str(path)).entries
    assert [e.request.method for e in entries] == ["initialize", "tools/list", "tools/call", "tools/call"]
    assert {e.request.path for e in entries} == {"stdio:python clock_server.py"}

    gone = [
        "--cassette",
        str(path),
        "--record-mode",
        "none",
        "--",
        "/nonexistent/python3",
        "/elsewhere/clock_server.py",
    ]
    assert anyio.run(_client, gone) == recorded  # the recorded time; the server was never started


def test_llmvcr_mcp_refuses_a_server_the_cassette_does_not_hold_in_replay(
    tmp_path: Path, capsys: Any
) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("version: 1\nentries: []\n")
    status = main(
        ["mcp", "--cassette", str(path), "--record-mode", "none", "--", "/nonexistent/server", "--x"]
    )
    assert status == 2
    err = capsys.readouterr().err
    assert "no MCP traffic for the server stdio:server --x" in err and "nothing was started" in err
