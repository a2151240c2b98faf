"""litellm: openai models through the openai SDK, anthropic and gemini models through litellm's own
httpx clients (recognised by their wire format), async paths through aiohttp or httpx."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch of the price list at import

import litellm
from llm_server import LLMServer
from roundtrip import SENTINEL, TOOLS, Roundtrip

MODELS = {
    "openai": ("openai/gpt-4o", "/v1"),
    "anthropic": ("anthropic/claude-sonnet-4-5", ""),
    "gemini": ("gemini/gemini-2.5-flash", "/v1beta"),
}


def kwargs(server: LLMServer, which: str) -> dict[str, Any]:
    model, suffix = MODELS[which]
    return {"model": model, "api_base": server.url + suffix, "api_key": SENTINEL, "num_retries": 0}


QUESTION = [{"role": "user", "content": "What is the weather in Paris?"}]


def with_results(messages: list[Any], reply: Any) -> list[Any]:
    """The conversation after the model's tool calls, with each tool's result."""
    message = reply.choices[0].message
    results = [
        {
            "role": "tool",
            "tool_call_id": c.id,
            "content": f"21C in {json.loads(c.function.arguments)['city']}",
        }
        for c in message.tool_calls or []
    ]
    assert results, "the model called no tool"
    return [*messages, message.model_dump(), *results]


def tool_loop(server: LLMServer, which: str) -> str:
    first = litellm.completion(messages=QUESTION, tools=TOOLS, **kwargs(server, which))
    second = litellm.completion(messages=with_results(QUESTION, first), tools=TOOLS, **kwargs(server, which))
    return str(second.choices[0].message.content)


async def async_tool_loop(server: LLMServer, which: str) -> str:
    first = await litellm.acompletion(messages=QUESTION, tools=TOOLS, **kwargs(server, which))
    messages = with_results(QUESTION, first)
    second = await litellm.acompletion(messages=messages, tools=TOOLS, **kwargs(server, which))
    return str(second.choices[0].message.content)


@pytest.mark.parametrize("which", list(MODELS))
def test_sync(which: str, server: LLMServer, roundtrip: Roundtrip) -> None:
    def scenario() -> list[Any]:
        chat = litellm.completion(
            messages=[{"role": "user", "content": "Hello lite"}], **kwargs(server, which)
        )
        stream = litellm.completion(
            messages=[{"role": "user", "content": "Stream lite"}], stream=True, **kwargs(server, which)
        )
        pieces = [c.choices[0].delta.content for c in stream if c.choices and c.choices[0].delta.content]
        return [chat.choices[0].message.content, pieces, tool_loop(server, which)]

    out = roundtrip(f"litellm-{which}", scenario, framework="litellm")
    assert out[0] == "Echo: Hello lite"
    assert "".join(out[1]) == "Echo: Stream lite" and len(out[1]) > 1
    assert "21C in Paris" in out[2]


@pytest.mark.parametrize("which", list(MODELS))
async def test_async(which: str, server: LLMServer, roundtrip: Roundtrip) -> None:
    async def scenario() -> list[Any]:
        chat = await litellm.acompletion(
            messages=[{"role": "user", "content": "Hello async"}], **kwargs(server, which)
        )
        stream = await litellm.acompletion(
            messages=[{"role": "user", "content": "Stream async"}], stream=True, **kwargs(server, which)
        )
        pieces = [
            c.choices[0].delta.content async for c in stream if c.choices and c.choices[0].delta.content
        ]
        return [chat.choices[0].message.content, pieces, await async_tool_loop(server, which)]

    out = await roundtrip.run_async(f"litellm-async-{which}", scenario, framework="litellm")
    # one entry per request: the httpx seam owns a call its aiohttp transport then sends
    assert roundtrip.entries == roundtrip.requests == 4
    assert out[0] == "Echo: Hello async" and "".join(out[1]) == "Echo: Stream async"
    assert "21C in Paris" in out[2]
