"""instructor over the openai and anthropic SDKs: structured output, a partial stream, tool calling."""

from __future__ import annotations

from typing import Any

import anthropic
import instructor
import openai
from llm_server import LLMServer
from pydantic import BaseModel
from roundtrip import SENTINEL, Roundtrip


class Reply(BaseModel):
    answer: str
    count: int


class Weather(BaseModel):
    city: str


def test_openai(server: LLMServer, roundtrip: Roundtrip) -> None:
    def scenario() -> list[Any]:
        raw = openai.OpenAI(api_key=SENTINEL, base_url=server.url + "/v1", max_retries=0)
        schema = instructor.from_openai(raw, mode=instructor.Mode.JSON_SCHEMA)
        chat = schema.chat.completions.create(
            model="gpt-4o", response_model=Reply, messages=[{"role": "user", "content": "Hello"}]
        )
        partials = schema.chat.completions.create_partial(
            model="gpt-4o", response_model=Reply, messages=[{"role": "user", "content": "Stream"}]
        )
        stream = [p.model_dump() for p in partials]
        tools = instructor.from_openai(raw, mode=instructor.Mode.TOOLS)
        weather = tools.chat.completions.create(
            model="gpt-4o",
            response_model=Weather,
            messages=[{"role": "user", "content": "The weather in Paris?"}],
        )
        return [chat.model_dump(), stream, weather.model_dump()]

    out = roundtrip("instructor-openai", scenario, framework="instructor")
    assert set(out[0]) == {"answer", "count"} and len(out[1]) > 1 and set(out[1][-1]) == {"answer", "count"}
    assert out[2] == {"city": "Paris"}


def test_anthropic(server: LLMServer, roundtrip: Roundtrip) -> None:
    """Tool mode (the server can follow no JSON instructions in a system prompt, which is what
    instructor's JSON modes fall back to on this anthropic release): a call and a partial stream."""

    def scenario() -> list[Any]:
        raw = anthropic.Anthropic(api_key=SENTINEL, base_url=server.url, max_retries=0)
        client = instructor.from_anthropic(raw, mode=instructor.Mode.TOOLS)
        ask = {"model": "claude-sonnet-4-5", "max_tokens": 100, "response_model": Weather}
        weather = client.messages.create(
            messages=[{"role": "user", "content": "The weather in Paris?"}], **ask
        )
        partials = client.messages.create_partial(
            messages=[{"role": "user", "content": "Stream the weather in Paris"}], **ask
        )
        return [weather.model_dump(), [p.model_dump() for p in partials]]

    out = roundtrip("instructor-anthropic", scenario, framework="instructor")
    assert out[0] == {"city": "Paris"} and len(out[1]) > 1 and out[1][-1] == {"city": "Paris"}
