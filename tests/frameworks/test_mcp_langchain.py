"""LangChain's tools over MCP (``langchain-mcp-adapters``, which pins the ``mcp`` SDK's 1.x line): an
agent run against the loopback model, its tools reached over stdio MCP, recorded into one cassette
and replayed with sockets refused, no server process started and the outputs equal.

The adapter opens a fresh MCP connection for each tool call, so the cassette holds one connection
for listing the tools and one per call. .ci/run runs this file in an environment of its own.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("langchain_mcp_adapters")

from langchain_anthropic import ChatAnthropic
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_mcp_adapters.client import MultiServerMCPClient
from llm_server import LLMServer
from roundtrip import SENTINEL, sockets_refused

import llmvcr

SERVER = str(Path(__file__).parents[1] / "mcp" / "clock_server.py")
pytestmark = pytest.mark.slow  # the MCP server is started once per tool call


async def _agent(server: LLMServer) -> list[str]:
    """Ask, run each tool the model calls over MCP, then ask again with the results: every step's text."""
    client = MultiServerMCPClient(
        {"clock": {"command": sys.executable, "args": [SERVER], "transport": "stdio"}}
    )
    tools = {tool.name: tool for tool in await client.get_tools()}
    model = ChatAnthropic(
        model="claude-sonnet-4-5",
        api_key=SENTINEL,
        base_url=server.url,
        max_retries=0,  # type: ignore[call-arg]
    ).bind_tools(list(tools.values()))
    messages: list[Any] = [HumanMessage("What is the weather in Paris?")]
    steps = [", ".join(tools)]
    for _ in range(3):
        reply = await model.ainvoke(messages)
        messages.append(reply)
        if not reply.tool_calls:
            steps.append(str(reply.content))
            break
        for call in reply.tool_calls:
            result = await tools[call["name"]].ainvoke(call)
            assert isinstance(result, ToolMessage)
            messages.append(result)
            blocks = result.content if isinstance(result.content, list) else [result.content]
            text = " ".join(
                b["text"] if isinstance(b, dict) else str(b) for b in blocks
            )  # each block has a new id
            steps.append(f"{call['name']}: {text}")
    return steps


def test_langchain_mcp_adapters_agent_over_stdio(
    server: LLMServer, cassette_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = server.request_count
    with llmvcr.recording("langchain-mcp") as cassette:
        live = anyio.run(_agent, server)
    count = server.request_count
    assert count > before
    methods = [e.request.method for e in cassette.entries if e.provider == "mcp"]
    assert "tools/list" in methods and "tools/call" in methods
    assert any(e.provider == "anthropic" for e in cassette.entries)
    assert any("21C in Paris at " in step for step in live), live  # the tool answered with the time now

    started: list[Any] = []
    real = anyio.open_process

    async def counting(*args: Any, **kwargs: Any) -> Any:
        started.append(args)
        return await real(*args, **kwargs)

    monkeypatch.setattr(anyio, "open_process", counting)
    with sockets_refused() as attempts, llmvcr.recording("langchain-mcp", record_mode="none") as replayed:
        again = anyio.run(_agent, server)
    assert again == live  # the recorded time, from a server that was never started
    assert attempts == [] and started == [] and server.request_count == count
    assert replayed.unplayed == []
    assert SENTINEL not in (cassette_dir / "langchain-mcp.yaml").read_text()
