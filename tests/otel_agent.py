"""The small tool-calling agent the OpenTelemetry fixtures were exported from, and replayed against.

Plain SDK code, the way a production service would write it: ask, run the tool the model asks
for, send its result back, return the final answer. Nothing here knows about llmvcr or tracing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

TASK = "What is the weather in Paris?"
SYSTEM = "You are a weather bot."
TOOL_RESULT = "18C, sunny"
ANTHROPIC_MODEL = "claude-sonnet-4-5"
OPENAI_MODEL = "gpt-4o-mini"
MAX_TOKENS = 256
TOOL = {
    "name": "get_weather",
    "description": "Weather for a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
OPENAI_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": TOOL["input_schema"],
    },
}


def get_weather(city: str, result: str = TOOL_RESULT) -> str:
    return result


def anthropic_agent(client: Any, *, streamed: bool = False, tool_result: str = TOOL_RESULT) -> str:
    """A tool call, then a final answer, through ``messages.create`` (or ``messages.stream``)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
    while True:
        kwargs: dict[str, Any] = {
            "model": ANTHROPIC_MODEL,
            "max_tokens": MAX_TOKENS,
            "system": SYSTEM,
            "messages": messages,
            "tools": [TOOL],
        }
        if streamed:
            with client.messages.stream(**kwargs) as stream:
                reply = stream.get_final_message()
        else:
            reply = client.messages.create(**kwargs)
        content: list[dict[str, Any]] = []
        for block in reply.content:
            if block.type == "text":
                content.append({"type": "text", "text": block.text})
            elif block.type == "tool_use":
                content.append({"type": "tool_use", "id": block.id, "name": block.name, "input": block.input})
        messages.append({"role": "assistant", "content": content})
        if reply.stop_reason != "tool_use":
            return "".join(b.text for b in reply.content if b.type == "text")
        messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": b.id,
                        "content": get_weather(**b.input, result=tool_result),
                    }
                    for b in reply.content
                    if b.type == "tool_use"
                ],
            }
        )


def _streamed_completion(client: Any, **kwargs: Any) -> tuple[str | None, list[dict[str, Any]], str | None]:
    """``chat.completions.create(stream=True)`` read chunk by chunk: text, tool calls, finish reason."""
    text: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    finish = None
    for chunk in client.chat.completions.create(
        stream=True, stream_options={"include_usage": True}, **kwargs
    ):
        for choice in chunk.choices:
            finish = choice.finish_reason or finish
            if choice.delta.content:
                text.append(choice.delta.content)
            for fragment in choice.delta.tool_calls or []:
                call = calls.setdefault(fragment.index, {"id": "", "name": "", "arguments": ""})
                call["id"] = fragment.id or call["id"]
                if fragment.function:
                    call["name"] = fragment.function.name or call["name"]
                    call["arguments"] += fragment.function.arguments or ""
    tool_calls = [
        {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
        for _, c in sorted(calls.items())
    ]
    return "".join(text) or None, tool_calls, finish


def openai_agent(client: Any, *, streamed: bool | Sequence[bool] = False) -> str:
    """A tool call, then a final answer, through ``chat.completions.create`` (streamed or not; a
    sequence says it per turn)."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": TASK},
    ]
    turns = iter(streamed) if isinstance(streamed, Sequence) else None
    while True:
        stream_this = next(turns) if turns is not None else streamed
        kwargs = {
            "model": OPENAI_MODEL,
            "max_tokens": MAX_TOKENS,
            "messages": messages,
            "tools": [OPENAI_TOOL],
        }
        if stream_this:
            content, tool_calls, finish = _streamed_completion(client, **kwargs)
        else:
            choice = client.chat.completions.create(**kwargs).choices[0]
            content, finish = choice.message.content, choice.finish_reason
            tool_calls = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.function.name, "arguments": call.function.arguments},
                }
                for call in choice.message.tool_calls or []
            ]
        turn: dict[str, Any] = {"role": "assistant", "content": content}
        if tool_calls:
            turn["tool_calls"] = tool_calls
        messages.append(turn)
        if finish != "tool_calls":
            return str(content)
        messages.extend(
            {
                "role": "tool",
                "tool_call_id": call["id"],
                "content": get_weather(**json.loads(call["function"]["arguments"])),
            }
            for call in tool_calls
        )


GEMINI_MODEL = "gemini-2.5-flash"


def google_agent(client: Any, *, streamed: bool = False) -> str:
    """A tool call, then a final answer, through google-genai's ``generate_content`` (or its stream)."""
    from google.genai import types

    config = types.GenerateContentConfig(
        system_instruction=SYSTEM,
        max_output_tokens=MAX_TOKENS,
        tools=[
            types.Tool(
                function_declarations=[
                    types.FunctionDeclaration(
                        name=TOOL["name"],
                        description=TOOL["description"],
                        parameters_json_schema=TOOL["input_schema"],
                    )
                ]
            )
        ],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    contents: list[Any] = [types.Content(role="user", parts=[types.Part.from_text(text=TASK)])]
    while True:
        if streamed:
            parts = [
                part
                for chunk in client.models.generate_content_stream(
                    model=GEMINI_MODEL, contents=contents, config=config
                )
                for candidate in chunk.candidates or []
                for part in (candidate.content.parts if candidate.content else None) or []
            ]
        else:
            reply = client.models.generate_content(model=GEMINI_MODEL, contents=contents, config=config)
            content = reply.candidates[0].content
            parts = list(content.parts or []) if content else []
        contents.append(types.Content(role="model", parts=parts))
        calls = [p.function_call for p in parts if p.function_call]
        if not calls:
            return "".join(p.text or "" for p in parts)
        contents.append(
            types.Content(
                role="user",
                parts=[
                    types.Part.from_function_response(
                        name=str(call.name), response={"result": get_weather(**(call.args or {}))}
                    )
                    for call in calls
                ],
            )
        )
