"""``@llmvcr.tool`` under each framework's own tool decorator: the same tool schema as without it,
and an agent whose tool has a side effect records, replays with the tool never run, and resumes after
a changed prompt running only the calls the recording does not hold.

The loopback server calls the first tool offered (city Paris) when a prompt says "weather". Each
scenario makes two agent runs; the resume changes the second run's prompt, so the first run is
served (its tool not run again) and the second runs for real from its first model call on.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from agents import (
    Agent as OpenAIAgent,
)
from agents import (
    OpenAIChatCompletionsModel,
    RunContextWrapper,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from agents.exceptions import UserError
from google import genai
from google.genai import types
from langchain_anthropic import ChatAnthropic
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool as langchain_tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from llm_server import LLMServer
from openai import AsyncOpenAI
from pydantic_ai import Agent, RunContext, Tool
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from roundtrip import SENTINEL, sockets_refused

import llmvcr
from llmvcr.errors import ToolDeniedError

set_tracing_disabled(True)  # the tracing exporter would post to api.openai.com

FIRST = "What is the weather in Paris?"
SECOND = "And the weather tomorrow?"
CHANGED = "And the weather next week?"
SENT: list[str] = []  # the side effect: a forecast mailed per real execution


def get_weather(city: str, unit: str = "C") -> str:
    """The weather in a city, mailed to the team.

    Args:
        city: the city to look up
        unit: C or F
    """
    SENT.append(city)
    return f"21{unit} in {city}"


def ctx_weather(ctx: RunContext[int], city: str) -> str:
    """The weather in a city, for the run's user."""
    SENT.append(city)
    return f"21C in {city} for user {ctx.deps}"


def wrapper_weather(ctx: RunContextWrapper[Any], city: str) -> str:
    """The weather in a city."""
    SENT.append(city)
    return f"21C in {city}"


Scenario = Callable[[str], Awaitable[list[Any]]]


async def record_replay_resume(name: str, scenario: Scenario, server: LLMServer, folder: Path) -> None:
    SENT.clear()
    before = server.request_count
    with llmvcr.recording(name) as cassette:
        live = await scenario(SECOND)
    assert SENT == ["Paris", "Paris"], f"{name}: one real execution per run while recording"
    stored = [e for e in cassette.entries if e.provider == "tool"]
    assert [e.request.body for e in stored] == [{"arguments": {"city": "Paris", **_unit(e)}} for e in stored]
    assert len(stored) == 2 and all("Paris" in json.dumps(e.response.body) for e in stored)
    recorded_requests = server.request_count - before
    assert recorded_requests == len(cassette.entries) - 2

    SENT.clear()
    count = server.request_count
    with sockets_refused() as attempts, llmvcr.use_cassette(name, record_mode="none", on_unplayed="fail"):
        replayed = await scenario(SECOND)
    assert replayed == live and all("The tool said" in out and "21C in Paris" in out for out in live)
    assert SENT == [] and attempts == [] and server.request_count == count, f"{name}: replay ran something"

    with llmvcr.use_cassette(name, record_mode="none", on_divergence="live", on_unplayed="ignore"):
        resumed = await scenario(CHANGED)
    assert SENT == ["Paris"], f"{name}: only the changed run's tool call runs"
    assert resumed[0] == live[0]
    assert server.request_count - count == recorded_requests // 2  # the second run's model calls only
    for path in folder.rglob("*"):
        assert not path.is_file() or SENTINEL not in path.read_text(), f"the key reached {path.name}"


def _unit(entry: Any) -> dict[str, str]:
    return {"unit": "C"} if "unit" in entry.request.body["arguments"] else {}


# -- pydantic-ai --------------------------------------------------------------------------------------
def test_pydantic_ai_builds_the_same_tool_schema() -> None:
    assert Tool(llmvcr.tool(get_weather)).tool_def == Tool(get_weather).tool_def
    assert (
        Tool(llmvcr.tool(ctx_weather), takes_ctx=True).tool_def == Tool(ctx_weather, takes_ctx=True).tool_def
    )
    plain, decorated = Agent("test"), Agent("test")
    plain.tool_plain(get_weather)
    decorated.tool_plain(llmvcr.tool(get_weather))
    plain.tool(ctx_weather)
    decorated.tool(llmvcr.tool(ctx_weather))
    schemas = [
        {n: t.tool_def for toolset in a.toolsets for n, t in toolset.tools.items()}  # type: ignore[attr-defined]
        for a in (plain, decorated)
    ]
    assert schemas[0] == schemas[1] and len(schemas[0]) == 2


@pytest.mark.parametrize("kind", ["tool_plain", "tool"])
async def test_pydantic_ai_agent_tool_replays_and_resumes(
    kind: str, server: LLMServer, cassette_dir: Path
) -> None:
    def make() -> Agent[int, str]:
        model = AnthropicModel(
            "claude-sonnet-4-5", provider=AnthropicProvider(api_key=SENTINEL, base_url=server.url)
        )
        agent = Agent(model, deps_type=int)
        if kind == "tool_plain":
            agent.tool_plain(llmvcr.tool(get_weather))
        else:
            agent.tool(llmvcr.tool(ctx_weather))
        return agent

    async def scenario(second: str) -> list[Any]:
        agent = make()
        return [(await agent.run(prompt, deps=7)).output for prompt in (FIRST, second)]

    await record_replay_resume(f"pydantic-ai-{kind}", scenario, server, cassette_dir)


# -- the OpenAI Agents SDK ------------------------------------------------------------------------------
def test_openai_agents_builds_the_same_tool_schema() -> None:
    for fn in (get_weather, wrapper_weather):
        plain, decorated = function_tool(fn), function_tool(llmvcr.tool(fn))
        assert (decorated.name, decorated.description) == (plain.name, plain.description)
        assert decorated.params_json_schema == plain.params_json_schema


async def test_openai_agents_tool_replays_and_resumes(server: LLMServer, cassette_dir: Path) -> None:
    weather = function_tool(llmvcr.tool(wrapper_weather))

    async def scenario(second: str) -> list[Any]:
        client = AsyncOpenAI(api_key=SENTINEL, base_url=server.url + "/v1", max_retries=0)
        model = OpenAIChatCompletionsModel(model="gpt-4o", openai_client=client)
        agent = OpenAIAgent(name="weather", instructions="Use tools.", model=model, tools=[weather])
        return [(await Runner.run(agent, prompt)).final_output for prompt in (FIRST, second)]

    await record_replay_resume("openai-agents", scenario, server, cassette_dir)


# -- LangChain ----------------------------------------------------------------------------------------
def test_langchain_builds_the_same_tool_schema() -> None:
    plain, decorated = langchain_tool(get_weather), langchain_tool(llmvcr.tool(get_weather))
    assert convert_to_openai_tool(decorated) == convert_to_openai_tool(plain)
    assert decorated.args_schema.model_json_schema() == plain.args_schema.model_json_schema()  # type: ignore[union-attr]


async def test_langchain_tool_replays_and_resumes(server: LLMServer, cassette_dir: Path) -> None:
    weather = langchain_tool(llmvcr.tool(get_weather))

    def run(prompt: str) -> str:
        model = ChatAnthropic(
            model="claude-sonnet-4-5", api_key=SENTINEL, base_url=server.url, max_retries=0
        ).bind_tools([weather])
        messages: list[Any] = [HumanMessage(prompt)]
        while True:
            reply = model.invoke(messages)
            messages.append(reply)
            if not reply.tool_calls:
                return str(reply.content if isinstance(reply.content, str) else reply.content[-1]["text"])
            for call in reply.tool_calls:
                messages.append(ToolMessage(weather.invoke(call["args"]), tool_call_id=call["id"]))

    async def scenario(second: str) -> list[Any]:
        return [run(FIRST), run(second)]

    await record_replay_resume("langchain", scenario, server, cassette_dir)


# -- google-genai's automatic function calling --------------------------------------------------------
def test_google_genai_builds_the_same_function_declaration(server: LLMServer) -> None:
    client = genai.Client(api_key=SENTINEL, http_options=types.HttpOptions(base_url=server.url))
    plain = types.FunctionDeclaration.from_callable(client=client, callable=get_weather)
    decorated = types.FunctionDeclaration.from_callable(client=client, callable=llmvcr.tool(get_weather))
    assert decorated == plain and decorated.name == "get_weather"


async def test_google_genai_automatic_function_calling_replays_and_resumes(
    server: LLMServer, cassette_dir: Path
) -> None:
    weather = llmvcr.tool(get_weather)

    async def scenario(second: str) -> list[Any]:
        client = genai.Client(api_key=SENTINEL, http_options=types.HttpOptions(base_url=server.url))
        config = types.GenerateContentConfig(tools=[weather])
        return [
            client.models.generate_content(model="gemini-2.5-flash", contents=prompt, config=config).text
            for prompt in (FIRST, second)
        ]

    await record_replay_resume("google-genai-afc", scenario, server, cassette_dir)


# -- tool_policy="deny" ---------------------------------------------------------------------------------
async def test_a_denied_tool_fails_the_run_under_each_framework(
    server: LLMServer, cassette_dir: Path
) -> None:
    """pydantic-ai and LangChain let a tool's exception through; the OpenAI Agents SDK turns it into a
    message for the model unless ``failure_error_function=None`` (google-genai's automatic function
    calling always does: the denial then reaches the model as the tool's error, see docs/agents.md)."""
    SENT.clear()
    deny = {"get_weather": "deny"}
    pydantic_agent = Agent(
        AnthropicModel("claude-sonnet-4-5", provider=AnthropicProvider(api_key=SENTINEL, base_url=server.url))
    )
    pydantic_agent.tool_plain(llmvcr.tool(get_weather))
    with (
        llmvcr.use_cassette("deny-pydantic-ai", tool_policy=deny),
        pytest.raises(ToolDeniedError, match="get_weather"),
    ):
        await pydantic_agent.run(FIRST)

    weather = langchain_tool(llmvcr.tool(get_weather))
    model = ChatAnthropic(model="claude-sonnet-4-5", api_key=SENTINEL, base_url=server.url, max_retries=0)
    with (
        llmvcr.use_cassette("deny-langchain", tool_policy=deny),
        pytest.raises(ToolDeniedError, match="get_weather"),
    ):
        reply = model.bind_tools([weather]).invoke([HumanMessage(FIRST)])
        weather.invoke(reply.tool_calls[0]["args"])

    client = AsyncOpenAI(api_key=SENTINEL, base_url=server.url + "/v1", max_retries=0)
    strict = function_tool(llmvcr.tool(get_weather), failure_error_function=None)
    openai_agent = OpenAIAgent(
        name="weather", model=OpenAIChatCompletionsModel(model="gpt-4o", openai_client=client), tools=[strict]
    )
    with llmvcr.use_cassette("deny-openai-agents", tool_policy=deny), pytest.raises(UserError) as caught:
        await Runner.run(openai_agent, FIRST)
    assert isinstance(caught.value.__cause__, ToolDeniedError), caught.value
    assert SENT == []  # denied: the tool body never ran
