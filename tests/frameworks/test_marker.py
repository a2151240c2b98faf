"""No user code beyond the marker: a user's test module driving every framework of the suite, each
as its documentation shows, recorded in one run, replayed in the next with the network blocked by
the plugin and the server untouched."""

from __future__ import annotations

import pytest
from llm_server import LLMServer
from roundtrip import SENTINEL

USER_TESTS = f'''
import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import anthropic
import dspy
import instructor
import litellm
import openai
import pytest
from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from google import genai
from google.genai import types
from langchain_anthropic import ChatAnthropic
from langchain_openai import ChatOpenAI
from pydantic import BaseModel
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.providers.anthropic import AnthropicProvider

URL = os.environ["LLM_SERVER_URL"]
KEY = "{SENTINEL}"
set_tracing_disabled(True)  # the Agents SDK's trace exporter would post to api.openai.com


class Weather(BaseModel):
    city: str


@pytest.mark.llmvcr
async def test_pydantic_ai():
    agent = PydanticAgent(AnthropicModel("claude-sonnet-4-5", provider=AnthropicProvider(api_key=KEY, base_url=URL)))
    assert (await agent.run("hi")).output == "Echo: hi"


@pytest.mark.llmvcr
def test_langchain():
    assert ChatAnthropic(model="claude-sonnet-4-5", api_key=KEY, base_url=URL).invoke("hi").content == "Echo: hi"
    assert ChatOpenAI(model="gpt-4o", api_key=KEY, base_url=URL + "/v1").invoke("hi").content == "Echo: hi"


@pytest.mark.llmvcr
async def test_openai_agents():
    client = openai.AsyncOpenAI(api_key=KEY, base_url=URL + "/v1")
    agent = Agent(name="echo", model=OpenAIChatCompletionsModel(model="gpt-4o", openai_client=client))
    assert (await Runner.run(agent, "hi")).final_output == "Echo: hi"


@pytest.mark.llmvcr
def test_instructor():
    client = instructor.from_anthropic(anthropic.Anthropic(api_key=KEY, base_url=URL), mode=instructor.Mode.TOOLS)
    weather = client.messages.create(
        model="claude-sonnet-4-5", max_tokens=100, response_model=Weather,
        messages=[{{"role": "user", "content": "The weather in Paris?"}}],
    )
    assert weather.city == "Paris"


@pytest.mark.llmvcr
def test_genai_sync():
    client = genai.Client(api_key=KEY, http_options=types.HttpOptions(base_url=URL))
    assert client.models.generate_content(model="m", contents="hi").text == "Echo: hi"


@pytest.mark.llmvcr
def test_dspy_default_engine():
    lm = dspy.LM("openai/gpt-4o", api_base=URL + "/v1", api_key=KEY, cache=False)
    assert lm("hi") == ["Echo: hi"]


@pytest.mark.llmvcr
def test_litellm_anthropic():
    reply = litellm.completion(
        model="anthropic/claude-sonnet-4-5", api_base=URL, api_key=KEY,
        messages=[{{"role": "user", "content": "hi"}}],
    )
    assert reply.choices[0].message.content == "Echo: hi"


@pytest.mark.llmvcr
async def test_genai_async():
    client = genai.Client(api_key=KEY, http_options=types.HttpOptions(base_url=URL))
    chunks = [c.text async for c in await client.aio.models.generate_content_stream(model="m", contents="yo")]
    assert "".join(chunks) == "Echo: yo"
'''


def test_marker_records_then_replays_with_the_network_blocked(
    pytester: pytest.Pytester, server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_SERVER_URL", server.url)
    pytester.makepyfile(test_user=USER_TESTS)
    pytester.makeini("[pytest]\nasyncio_mode = auto\n")
    before = server.request_count
    record = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--llmvcr-no-block-network")
    record.assert_outcomes(passed=8)
    recorded = server.request_count
    assert recorded == before + 9
    record.stdout.fnmatch_lines(["llmvcr: 0 LLM calls replayed, 9 recorded, 8 cassettes written*"])
    cassettes = list(pytester.path.rglob("*.yaml"))
    assert len(cassettes) == 8 and all(SENTINEL not in p.read_text() for p in cassettes)
    replay = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--llmvcr-record-mode=none", "--llmvcr-block-network"
    )
    replay.assert_outcomes(passed=8)
    replay.stdout.fnmatch_lines(["llmvcr: 9 LLM calls replayed, 0 recorded*"])
    assert "unrecorded" not in replay.stdout.str() + record.stdout.str()
    assert server.request_count == recorded
