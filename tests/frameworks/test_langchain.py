"""langchain-anthropic and langchain-openai: invoke, stream and a tool loop, sync and async."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_anthropic import ChatAnthropic
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI, OpenAIEmbeddings
from llm_server import LLMServer
from roundtrip import SENTINEL, Roundtrip


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"21C in {city}"


def anthropic_chat(server: LLMServer) -> Any:
    return ChatAnthropic(model="claude-sonnet-4-5", api_key=SENTINEL, base_url=server.url, max_retries=0)


def openai_chat(server: LLMServer) -> Any:
    return ChatOpenAI(model="gpt-4o", api_key=SENTINEL, base_url=server.url + "/v1", max_retries=0)


def which(make: Any) -> str:
    return str(make.__name__.split("_")[0])


def text_of(message: Any) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content if isinstance(p, dict))


def tool_loop(model: Any) -> str:
    bound = model.bind_tools([get_weather])
    messages: list[Any] = [HumanMessage("What is the weather in Paris?")]
    reply = bound.invoke(messages)
    messages.append(reply)
    messages.extend(
        ToolMessage(get_weather.invoke(c["args"]), tool_call_id=c["id"]) for c in reply.tool_calls
    )
    return text_of(bound.invoke(messages))


async def async_tool_loop(model: Any) -> str:
    bound = model.bind_tools([get_weather])
    messages: list[Any] = [HumanMessage("What is the weather in Paris?")]
    reply = await bound.ainvoke(messages)
    messages.append(reply)
    for call in reply.tool_calls:
        messages.append(ToolMessage(await get_weather.ainvoke(call["args"]), tool_call_id=call["id"]))
    return text_of(await bound.ainvoke(messages))


@pytest.mark.parametrize("make", [anthropic_chat, openai_chat], ids=["anthropic", "openai"])
def test_sync(make: Any, server: LLMServer, roundtrip: Roundtrip) -> None:
    def scenario() -> list[Any]:
        model = make(server)
        chat = text_of(model.invoke("Hello chain"))
        pieces = [text_of(c) for c in model.stream("Stream chain")]
        return [chat, [p for p in pieces if p], tool_loop(model)]

    out = roundtrip(f"langchain-{which(make)}", scenario, framework=f"langchain-{which(make)}")
    assert out[0] == "Echo: Hello chain"
    assert "".join(out[1]) == "Echo: Stream chain" and len(out[1]) > 1
    assert out[2] == "The tool said: 21C in Paris"


@pytest.mark.parametrize("make", [anthropic_chat, openai_chat], ids=["anthropic", "openai"])
async def test_async(make: Any, server: LLMServer, roundtrip: Roundtrip) -> None:
    async def scenario() -> list[Any]:
        model = make(server)
        chat = text_of(await model.ainvoke("Hello async chain"))
        pieces = [text_of(c) async for c in model.astream("Stream async chain")]
        return [chat, [p for p in pieces if p], await async_tool_loop(model)]

    out = await roundtrip.run_async(
        f"langchain-async-{which(make)}", scenario, framework=f"langchain-{which(make)}"
    )
    assert out[0] == "Echo: Hello async chain" and "".join(out[1]) == "Echo: Stream async chain"
    assert out[2] == "The tool said: 21C in Paris"


def test_openai_embeddings(server: LLMServer, roundtrip: Roundtrip) -> None:
    def scenario() -> list[list[float]]:
        embeddings = OpenAIEmbeddings(
            model="text-embedding-3-small",
            api_key=SENTINEL,
            base_url=server.url + "/v1",
            check_embedding_ctx_length=False,
        )
        return embeddings.embed_documents(["a", "b"])

    assert len(roundtrip("langchain-embeddings", scenario, framework="langchain-openai")) == 2
