"""Agents whose tools are reached over MCP: the model's calls and the MCP traffic recorded into one
cassette, then replayed with sockets refused, no server process started and the outputs equal.

The MCP server is the tests' own (``tests/mcp/clock_server.py``): its first tool answers the weather
with the time now, so a live replay would differ from the recording, and the loopback model's next
request with it would not match.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from agents import Agent as OpenAIAgent
from agents import OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from agents.mcp import MCPServerStdio
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from llm_server import LLMServer
from openai import AsyncOpenAI
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from roundtrip import SENTINEL, sockets_refused

import llmvcr

set_tracing_disabled(True)  # the tracing exporter would post to api.openai.com

SERVER = str(Path(__file__).parents[1] / "mcp" / "clock_server.py")
pytestmark = pytest.mark.slow  # each test starts the MCP server once


async def _roundtrip(
    name: str, scenario: Callable[[], Awaitable[Any]], server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> tuple[Any, Any, list[str]]:
    """Record ``scenario``, then replay it offline; the outputs and the cassette's providers."""
    before = server.request_count
    with llmvcr.recording(name) as cassette:
        live = await scenario()
    count = server.request_count
    assert count > before or all(e.provider == "mcp" for e in cassette.entries)
    providers = [e.provider for e in cassette.entries]
    started: list[Any] = []
    real = anyio.open_process

    async def counting(*args: Any, **kwargs: Any) -> Any:
        started.append(args)
        return await real(*args, **kwargs)

    monkeypatch.setattr(anyio, "open_process", counting)
    with sockets_refused() as attempts, llmvcr.recording(name, record_mode="none") as replayed_cassette:
        replayed = await scenario()
    assert attempts == [] and started == [] and server.request_count == count
    assert replayed_cassette.unplayed == []
    return live, replayed, providers


async def test_pydantic_ai_mcp_toolset_over_stdio(server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:

    async def scenario() -> str:
        model = AnthropicModel(
            "claude-sonnet-4-5", provider=AnthropicProvider(api_key=SENTINEL, base_url=server.url)
        )
        tools = MCPToolset(Client(StdioTransport(command=sys.executable, args=[SERVER])))
        agent = Agent(model, toolsets=[tools])
        async with agent:
            return (await agent.run("What is the weather in Paris?")).output

    live, replayed, providers = await _roundtrip("pydantic-ai-mcp", scenario, server, monkeypatch)
    assert "The tool said: 21C in Paris at " in live and replayed == live  # the recorded time
    assert "anthropic" in providers and "mcp" in providers


async def test_openai_agents_mcp_server_stdio(server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:

    async def scenario() -> str:
        client = AsyncOpenAI(api_key=SENTINEL, base_url=server.url + "/v1", max_retries=0)
        async with MCPServerStdio(params={"command": sys.executable, "args": [SERVER]}) as clock:
            agent = OpenAIAgent(
                name="weather",
                instructions="Use tools.",
                model=OpenAIChatCompletionsModel(model="gpt-4o", openai_client=client),
                mcp_servers=[clock],
            )
            return str((await Runner.run(agent, "What is the weather in Paris?")).final_output)

    live, replayed, providers = await _roundtrip("openai-agents-mcp", scenario, server, monkeypatch)
    assert "The tool said: 21C in Paris at " in live and replayed == live
    assert "openai" in providers and "mcp" in providers


async def test_fastmcp_client_over_stdio(server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:

    async def scenario() -> list[str]:
        async with Client(StdioTransport(command=sys.executable, args=[SERVER])) as client:
            tools = [t.name for t in await client.list_tools()]
            now = await client.call_tool("now", {})
            return [*tools, str(now.data)]

    live, replayed, providers = await _roundtrip("fastmcp-client", scenario, server, monkeypatch)
    assert live[:4] == ["weather", "now", "add", "ask"] and replayed == live
    assert set(providers) == {"mcp"}
