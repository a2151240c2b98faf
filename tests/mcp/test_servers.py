"""Real MCP servers from PyPI over stdio, recorded and replayed with nothing started."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp.client.stdio")  # (tests/mcp is on the path too: a bare "mcp" is found)
pytest.importorskip("mcp_server_time")

import time_example
from mcp import ClientSession, StdioServerParameters, stdio_client

import llmvcr

pytestmark = pytest.mark.slow  # each test starts a real server once (seconds)


async def _calls(command: str, args: list[str], calls: list[tuple[str, dict[str, Any]]]) -> list[str]:
    params = StdioServerParameters(command=command, args=args)
    out: list[str] = []
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            out.append(",".join(sorted(t.name for t in (await session.list_tools()).tools)))
            for name, arguments in calls:
                result = await session.call_tool(name, arguments)
                out.append(" ".join(c.text for c in result.content if hasattr(c, "text")))
    return out


def _started(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    started: list[Any] = []
    real = anyio.open_process

    async def counting(*args: Any, **kwargs: Any) -> Any:
        started.append(args)
        return await real(*args, **kwargs)

    monkeypatch.setattr(anyio, "open_process", counting)
    return started


def test_mcp_server_time_answers_the_recorded_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_network: list[Any]
) -> None:
    path = tmp_path / "time.yaml"
    calls = [("get_current_time", {"timezone": "UTC"})]
    with llmvcr.use_cassette(str(path), record_mode="once"):
        recorded = anyio.run(_calls, sys.executable, ["-m", "mcp_server_time"], calls)
    assert "get_current_time" in recorded[0] and "datetime" in recorded[1]
    started = _started(monkeypatch)
    with llmvcr.use_cassette(str(path), record_mode="none") as cassette:
        replayed = anyio.run(_calls, "/nowhere/python3", ["-m", "mcp_server_time"], calls)
    assert replayed == recorded  # the recorded time, to the second
    assert started == [] and no_network == [] and cassette.unplayed == []


def test_mcp_server_git_on_a_temporary_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("mcp_server_git")
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    repo.mkdir()
    for command in (["init", "-q"], ["config", "user.email", "t@example.com"], ["config", "user.name", "T"]):
        subprocess.run(["git", *command], cwd=repo, check=True)
    (repo / "a.txt").write_text("one\n")
    subprocess.run(["git", "add", "a.txt"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", "first"], cwd=repo, check=True)
    path = tmp_path / "git.yaml"
    calls = [("git_status", {"repo_path": str(repo)}), ("git_log", {"repo_path": str(repo)})]
    with llmvcr.use_cassette(str(path), record_mode="once"):
        recorded = anyio.run(_calls, sys.executable, ["-m", "mcp_server_git"], calls)
    assert "git_status" in recorded[0] and "first" in recorded[2]
    started = _started(monkeypatch)
    shutil.rmtree(repo)  # replay needs neither the server nor the repository
    with llmvcr.use_cassette(str(path), record_mode="none"):
        replayed = anyio.run(_calls, sys.executable, ["-m", "mcp_server_git"], calls)
    assert replayed == recorded and started == []


def test_the_agents_page_example_records_then_replays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    path = str(tmp_path / "time.yaml")
    first = time_example.main(path)
    started = _started(monkeypatch)
    assert time_example.main(path) == first and started == []
