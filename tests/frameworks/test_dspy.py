"""DSPy 3.4 on its default engine (lm15, vendored: its own sockets, no httpx, no SDK), and on litellm."""

from __future__ import annotations

import json
import os
import time
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch of the model list at first call

import dspy
from dspy._vendor.lm15.transports import StdlibTransport, TransportRequest
from llm_server import LLMServer
from roundtrip import SENTINEL, TOOLS, Roundtrip, sockets_refused

import llmvcr


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"21C in {city}"


class Ask(dspy.Signature):
    question: str = dspy.InputField()
    tools: list[dspy.Tool] = dspy.InputField()
    outputs: dspy.ToolCalls = dspy.OutputField()


MODELS = {"openai": ("openai/gpt-4o", "/v1"), "anthropic": ("anthropic/claude-sonnet-4-5", "")}


def make_lm(server: LLMServer, which: str, engine: str = "auto") -> Any:
    model, suffix = MODELS[which]
    if which == "anthropic" and engine != "litellm":
        suffix = "/v1"  # lm15 appends /messages to the base; litellm appends /v1/messages
    return dspy.LM(model, api_base=server.url + suffix, api_key=SENTINEL, cache=False, engine=engine)


@pytest.mark.parametrize("engine", ["auto", "litellm"])
@pytest.mark.parametrize("which", list(MODELS))
def test_chat_and_tool_call(which: str, engine: str, server: LLMServer, roundtrip: Roundtrip) -> None:
    def scenario() -> list[Any]:
        lm = make_lm(server, which, engine)
        chat = lm("Hello dspy")
        with dspy.context(lm=lm, adapter=dspy.ChatAdapter(use_native_function_calling=True)):
            asked = dspy.Predict(Ask)(
                question="What is the weather in Paris?", tools=[dspy.Tool(get_weather)]
            )
        results = [call.execute(functions=[dspy.Tool(get_weather)]) for call in asked.outputs.tool_calls]
        return [chat, results]

    assert roundtrip(f"dspy-{which}-{engine}", scenario, framework="dspy") == [
        ["Echo: Hello dspy"],
        ["21C in Paris"],
    ]


def field(call: Any, name: str) -> Any:
    """A tool call's field: lm15 gives dicts, litellm its own objects."""
    return call[name] if isinstance(call, dict) else getattr(call, name)


@pytest.mark.filterwarnings("ignore:Passing OpenAI-style message:DeprecationWarning")  # DSPy 3.5's change
@pytest.mark.parametrize("engine", ["auto", "litellm"])
@pytest.mark.parametrize("which", list(MODELS))
def test_tool_loop(which: str, engine: str, server: LLMServer, roundtrip: Roundtrip) -> None:
    """The model asks for a tool, the tool's result goes back, the model answers with it."""

    def scenario() -> list[Any]:
        lm = make_lm(server, which, engine)
        messages: list[Any] = [{"role": "user", "content": "What is the weather in Paris?"}]
        calls = lm(messages=messages, tools=TOOLS)[0]["tool_calls"]
        messages.append({"role": "assistant", "content": None, "tool_calls": []})
        for call in calls:
            function = field(call, "function")
            arguments, name = field(function, "arguments"), field(function, "name")
            messages[-1]["tool_calls"].append(
                {
                    "id": field(call, "id"),
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }
            )
            result = get_weather(**json.loads(arguments))
            messages.append({"role": "tool", "tool_call_id": field(call, "id"), "content": result})
        return [len(calls), lm(messages=messages, tools=TOOLS)]

    out = roundtrip(f"dspy-loop-{which}-{engine}", scenario, framework="dspy")
    assert out == [1, ["The tool said: 21C in Paris"]]


# litellm sends an anthropic model's JSON schema as a forced tool the loopback server does not follow
@pytest.mark.parametrize(
    ("which", "engine"), [("openai", "auto"), ("openai", "litellm"), ("anthropic", "auto")]
)
async def test_stream(which: str, engine: str, server: LLMServer, roundtrip: Roundtrip) -> None:
    async def scenario() -> list[Any]:
        lm = make_lm(server, which, engine)
        listener = dspy.streaming.StreamListener(signature_field_name="answer")
        program = dspy.streamify(dspy.Predict("question -> answer"), stream_listeners=[listener])
        with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
            items = [item async for item in program(question="hi")]
        chunks = [i.chunk for i in items if isinstance(i, dspy.streaming.StreamResponse)]
        return [chunks, items[-1].answer]

    out = await roundtrip.run_async(f"dspy-stream-{which}-{engine}", scenario, framework="dspy")
    assert out[0] and out[1] == "x"


def test_lm15_stream_replays_at_its_recorded_pace_with_replay_speed(server: LLMServer) -> None:
    body = b'{"model":"m","stream":true,"messages":[{"role":"user","content":"a b c d __slow_stream__"}]}'

    def stream() -> tuple[list[Any], float]:
        start = time.perf_counter()
        request = TransportRequest(
            "POST", server.url + "/v1/chat/completions", [("content-type", "application/json")], body
        )
        with StdlibTransport().stream(request) as response:
            lines = [line[6:].strip() for line in response.iter_lines() if line.startswith(b"data: ")]
        chunks = [json.loads(line) if line != b"[DONE]" else "[DONE]" for line in lines]
        return chunks, time.perf_counter() - start

    with llmvcr.recording("lm15-paced"):
        live, live_time = stream()
    with sockets_refused(), llmvcr.recording("lm15-paced", record_mode="none", replay_speed=1.0):
        paced, paced_time = stream()
    with sockets_refused(), llmvcr.recording("lm15-paced", record_mode="none"):
        fast, fast_time = stream()
    assert live == paced == fast and len(live) > 5 and live[-1] == "[DONE]"
    assert live_time >= 0.2 and paced_time >= 0.2 and fast_time < 0.15
