"""The pytest summary counts MCP requests apart from the model's calls."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp.client.stdio")  # (tests/mcp is on the path too: a bare "mcp" is found)

SERVER = Path(__file__).with_name("clock_server.py")

TEST = f"""
import os
import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client


async def session():
    params = StdioServerParameters(command=os.environ.get("CLOCK_PYTHON", {sys.executable!r}), args=[{str(SERVER)!r}])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            return (await s.call_tool("add", {{"a": 1, "b": 1}})).content[0].text


@pytest.mark.llmvcr
def test_tools():
    assert anyio.run(session) == "2"
"""


@pytest.mark.slow
def test_the_summary_counts_mcp_requests_recorded_and_replayed(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    pytester.makepyfile(test_tools=TEST)
    first = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:recording", timeout=120)
    first.assert_outcomes(passed=1)
    first.stdout.fnmatch_lines(
        ["llmvcr: 0 LLM calls replayed, 0 recorded, 0 MCP requests replayed, 3 recorded, *"]
    )
    monkeypatch.setenv("CLOCK_PYTHON", "/nonexistent/python")
    second = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "no:recording", "--llmvcr-record-mode=none", timeout=120
    )
    second.assert_outcomes(passed=1)
    second.stdout.fnmatch_lines(
        ["llmvcr: 0 LLM calls replayed, 0 recorded, 3 MCP requests replayed, 0 recorded, *"]
    )
