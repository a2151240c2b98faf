"""pydantic-ai over the anthropic and openai SDKs (it sets its own User-Agent on their clients)."""

from __future__ import annotations

from typing import Any

import pytest
from llm_server import LLMServer
from pydantic_ai import Agent
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.openai import OpenAIProvider
from roundtrip import SENTINEL, Roundtrip


def anthropic_model(server: LLMServer) -> Any:
    return AnthropicModel(
        "claude-sonnet-4-5", provider=AnthropicProvider(api_key=SENTINEL, base_url=server.url)
    )


def openai_model(server: LLMServer) -> Any:
    return OpenAIChatModel("gpt-4o", provider=OpenAIProvider(api_key=SENTINEL, base_url=server.url + "/v1"))


def weather(city: str) -> str:
    """The weather in a city."""
    return f"21C in {city}"


@pytest.mark.parametrize("make_model", [anthropic_model, openai_model], ids=["anthropic", "openai"])
async def test_chat_stream_tools(make_model: Any, server: LLMServer, roundtrip: Roundtrip) -> None:
    async def scenario() -> list[Any]:
        agent = Agent(make_model(server))
        chat = (await agent.run("Hello agent")).output
        async with agent.run_stream("Stream please") as result:
            pieces = [p async for p in result.stream_text(delta=True, debounce_by=None)]
        tools = Agent(make_model(server), tools=[weather])
        loop = (await tools.run("What is the weather in Paris?")).output
        return [chat, pieces, loop]

    out = await roundtrip.run_async(
        f"pydantic-ai-{make_model.__name__.split('_')[0]}", scenario, framework="pydantic-ai-slim"
    )
    assert out[0] == "Echo: Hello agent"
    assert "".join(out[1]) == "Echo: Stream please" and len(out[1]) > 1
    assert "The tool said: 21C in Paris" in out[2]
