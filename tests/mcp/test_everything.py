"""``@modelcontextprotocol/server-everything`` (npm), the reference server that exercises every protocol
feature, over stdio: recorded, then replayed with node's path replaced and nothing started."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp.client.stdio")  # (tests/mcp is on the path too: a bare "mcp" is found)

from mcp import ClientSession, StdioServerParameters, stdio_client

import llmvcr
from llmvcr.storage.files import load_cassette

SERVER = Path(__file__).parent / "node" / "node_modules" / ".bin" / "mcp-server-everything"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not SERVER.exists() or shutil.which("node") is None,
        reason="run `npm ci` in tests/mcp/node (.ci/run does)",
    ),
]


async def _everything(node: str) -> dict[str, Any]:
    progress: list[float] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(done)

    params = StdioServerParameters(command=node, args=[str(SERVER), "stdio"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            info = await session.initialize()
            tools = await session.list_tools()
            echo = await session.call_tool("echo", {"message": "hello everything"})
            total = await session.call_tool("get-sum", {"a": 20, "b": 22})
            image = await session.call_tool("get-tiny-image", {})
            slow = await session.call_tool(
                "trigger-long-running-operation", {"duration": 0.3, "steps": 3}, progress_callback=on_progress
            )
            prompts = await session.list_prompts()
            prompt = await session.get_prompt("args-prompt", {"city": "Paris"})
            resources = await session.list_resources()
            read_back = await session.read_resource(resources.resources[0].uri)
            await session.send_ping()
    return {
        "server": info.server_info.name,
        "tools": [t.name for t in tools.tools],
        "echo": echo.model_dump(),
        "sum": total.model_dump(),
        "image": [c.type for c in image.content],
        "slow": slow.model_dump(),
        "progress": progress,
        "prompts": [p.name for p in prompts.prompts],
        "prompt": prompt.model_dump(),
        "resource": read_back.model_dump(),
    }


def test_server_everything_records_and_replays_every_feature_it_uses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    node = shutil.which("node")
    assert node is not None
    path = tmp_path / "everything.yaml"
    with llmvcr.use_cassette(str(path), record_mode="once"):
        recorded = anyio.run(_everything, node)
    assert recorded["server"] == "mcp-servers/everything" and "echo" in recorded["tools"]
    assert recorded["progress"] == [1, 2, 3]
    entries = load_cassette(str(path)).entries
    methods = [e.request.method for e in entries]
    assert {"initialize", "tools/list", "tools/call", "prompts/get", "resources/read", "ping"} <= set(methods)
    slow = next(e for e in entries if (e.request.body or {}).get("name") == "trigger-long-running-operation")
    notes = [m["data"].get("method") for m in slow.response.stream or []]
    assert notes.count("notifications/progress") == 3

    started: list[Any] = []
    real = anyio.open_process

    async def counting(*args: Any, **kwargs: Any) -> Any:
        started.append(args)
        return await real(*args, **kwargs)

    monkeypatch.setattr(anyio, "open_process", counting)
    with llmvcr.use_cassette(str(path), record_mode="none") as cassette:
        replayed = anyio.run(_everything, "/nonexistent/node")
    assert replayed == recorded and started == [] and cassette.unplayed == []
