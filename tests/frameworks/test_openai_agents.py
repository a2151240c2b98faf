"""The OpenAI Agents SDK (it names itself ``Agents/Python`` in User-Agent): Responses and Chat Completions."""

from __future__ import annotations

from typing import Any

import pytest
from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from llm_server import LLMServer
from openai import AsyncOpenAI
from roundtrip import SENTINEL, Roundtrip

set_tracing_disabled(True)  # the tracing exporter would post to api.openai.com


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"21C in {city}"


def responses(client: AsyncOpenAI) -> Any:
    return OpenAIResponsesModel(model="gpt-4o", openai_client=client)


def chat_completions(client: AsyncOpenAI) -> Any:
    return OpenAIChatCompletionsModel(model="gpt-4o", openai_client=client)


@pytest.mark.parametrize("make", [responses, chat_completions], ids=["responses", "chat"])
async def test_chat_stream_tools(make: Any, server: LLMServer, roundtrip: Roundtrip) -> None:
    async def scenario() -> list[Any]:
        client = AsyncOpenAI(api_key=SENTINEL, base_url=server.url + "/v1", max_retries=0)
        agent = Agent(name="echo", instructions="Be brief.", model=make(client))
        chat = (await Runner.run(agent, "Hello agents")).final_output
        streamed = Runner.run_streamed(agent, "Stream agents")
        deltas = [
            e.data.delta
            async for e in streamed.stream_events()
            if e.type == "raw_response_event"
            and getattr(e.data, "type", "") in ("response.output_text.delta",)
        ]
        tools = Agent(name="weather", instructions="Use tools.", model=make(client), tools=[get_weather])
        loop = (await Runner.run(tools, "What is the weather in Paris?")).final_output
        return [chat, deltas, streamed.final_output, loop]

    out = await roundtrip.run_async(f"openai-agents-{make.__name__}", scenario, framework="openai-agents")
    assert out[0] == "Echo: Hello agents"
    assert out[2] == "Echo: Stream agents" and len(out[1]) > 1
    assert out[3] == "The tool said: 21C in Paris"
