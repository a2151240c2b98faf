"""A traced model call's GenAI semantic-convention attributes as the request body and reply it stands for.

``request_body`` writes the messages, system instructions, tool definitions and request
parameters back as the provider's SDK sends them (Anthropic ``messages.create``, Chat Completions,
Gemini ``generateContent``); ``neutral_response`` reads the output messages, finish reason and
usage into the neutral reply ``convert.to_wire`` writes as each provider's body or stream. What the
trace lacks is appended to ``notes`` for the caller to warn about.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .neutral import JSON, parse_arguments, text_block, tool_use_block, usage
from .otel_dialects import EXACT_BODY
from .otel_gemini import gemini_request

__all__ = ["json_attr", "neutral_response", "request_body"]

_FINISH = {  # semantic-convention finish reasons -> the neutral stop reason
    "stop": "end_turn",
    "end_turn": "end_turn",
    "tool_call": "tool_use",
    "tool_calls": "tool_use",
    "tool_use": "tool_use",
    "length": "max_tokens",
    "max_tokens": "max_tokens",
    "content_filter": "refusal",
    "refusal": "refusal",
    "stop_sequence": "stop_sequence",
}
_ANTHROPIC_PARAMS = {
    "gen_ai.request.temperature": "temperature",
    "gen_ai.request.top_p": "top_p",
    "gen_ai.request.top_k": "top_k",
    "gen_ai.request.stop_sequences": "stop_sequences",
}
_OPENAI_PARAMS = {
    "gen_ai.request.temperature": "temperature",
    "gen_ai.request.top_p": "top_p",
    "gen_ai.request.seed": "seed",
    "gen_ai.request.stop_sequences": "stop",
    "gen_ai.request.presence_penalty": "presence_penalty",
    "gen_ai.request.frequency_penalty": "frequency_penalty",
    "gen_ai.request.choice.count": "n",
}


# -- one model call --------------------------------------------------------------------------------
def json_attr(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return [{"type": "text", "content": value}]
    return value


def _parts(message: Any) -> list[JSON]:
    parts = message.get("parts") if isinstance(message, Mapping) else None
    return [p for p in parts or [] if isinstance(p, dict)]


def _text(parts: list[JSON]) -> str:
    return "".join(str(p.get("content", "")) for p in parts if p.get("type") == "text")


def _neutral_blocks(parts: list[JSON], notes: list[str], where: str) -> list[JSON]:
    """Semantic-convention parts as neutral blocks (text, thinking, tool_use, tool_result)."""
    blocks: list[JSON] = []
    for part in parts:
        kind = part.get("type")
        if kind == "text":
            blocks.append(text_block(str(part.get("content", ""))))
        elif kind == "reasoning":
            notes.append(f"{where}: a reasoning part has no signature in the trace")
            blocks.append({"type": "thinking", "thinking": str(part.get("content", "")), "signature": None})
        elif kind == "tool_call":
            blocks.append(
                tool_use_block(
                    str(part.get("id", "")), str(part.get("name", "")), parse_arguments(part.get("arguments"))
                )
            )
        elif kind == "tool_call_response":
            response = part.get("response")
            blocks.append(
                {
                    "type": "tool_result",
                    "tool_use_id": str(part.get("id", "")),
                    "content": response if isinstance(response, str) else json.dumps(response),
                    "is_error": False,
                }
            )
        else:
            notes.append(f"{where}: a {kind!r} part is not kept by the converter; dropped")
    return blocks


def _anthropic_message(role: str, blocks: list[JSON]) -> JSON:
    if role == "tool":
        role = "user"
    wire = [{k: v for k, v in b.items() if v is not None and k != "is_error"} for b in blocks]
    if len(wire) == 1 and wire[0]["type"] == "text":
        return {"role": role, "content": wire[0]["text"]}  # one text part: the SDK's string shorthand
    return {"role": role, "content": wire}


def _openai_messages(role: str, blocks: list[JSON]) -> list[JSON]:
    text = "".join(b["text"] for b in blocks if b["type"] == "text")
    if role == "tool" or any(b["type"] == "tool_result" for b in blocks):
        return [
            {"role": "tool", "tool_call_id": b["tool_use_id"], "content": b["content"]}
            for b in blocks
            if b["type"] == "tool_result"
        ]
    if role != "assistant":
        return [{"role": role, "content": text}]
    message: JSON = {"role": "assistant", "content": text or None}
    calls = [b for b in blocks if b["type"] == "tool_use"]
    if calls:
        message["tool_calls"] = [
            {
                "id": b["id"],
                "type": "function",
                "function": {"name": b["name"], "arguments": json.dumps(b["input"])},
            }
            for b in calls
        ]
    return [message]


def _tools(definitions: Any, provider: str) -> list[JSON]:
    tools = []
    for d in definitions if isinstance(definitions, list) else []:
        if not isinstance(d, Mapping):
            continue
        fn: Any = d.get("function") if isinstance(d.get("function"), Mapping) else d
        schema = fn.get("input_schema", fn.get("parameters", {}))
        if provider == "anthropic":
            tool: JSON = {"name": fn.get("name"), "input_schema": schema}
            if fn.get("description"):
                tool["description"] = fn["description"]
        else:
            tool = {"type": "function", "function": {"name": fn.get("name"), "parameters": schema}}
            if fn.get("description"):
                tool["function"]["description"] = fn["description"]
        tools.append(tool)
    return tools


def _anthropic_body(body: JSON, inputs: list[Mapping[str, Any]], system: str, notes: list[str]) -> JSON:
    """A Messages API body: system messages folded into ``system``, max_tokens required."""
    body["messages"] = [
        _anthropic_message(str(m.get("role")), _neutral_blocks(_parts(m), notes, f"messages[{i}]"))
        for i, m in enumerate(inputs)
        if m.get("role") != "system"
    ]
    system = system or "\n".join(_text(_parts(m)) for m in inputs if m.get("role") == "system")
    if "max_tokens" not in body:
        notes.append("the trace does not hold max_tokens, which Anthropic requires; 1024 assumed")
        body["max_tokens"] = 1024
    if system:
        body["system"] = system
    return body


def _openai_body(body: JSON, inputs: list[Mapping[str, Any]], system: str, notes: list[str]) -> JSON:
    """A Chat Completions body: the system instructions as its first message."""
    body["messages"] = [
        wire
        for i, m in enumerate(inputs)
        for wire in _openai_messages(str(m.get("role")), _neutral_blocks(_parts(m), notes, f"messages[{i}]"))
    ]
    if system:
        body["messages"].insert(0, {"role": "system", "content": system})
    return body


def _note_missing_tools(
    attrs: JSON, inputs: list[Mapping[str, Any]], tools: list[JSON], notes: list[str]
) -> None:
    uses_tools = any(p.get("type") in ("tool_call", "tool_call_response") for m in inputs for p in _parts(m))
    if not tools and (uses_tools or "tool_call" in json.dumps(attrs.get("gen_ai.output.messages") or "")):
        notes.append(
            "the trace does not hold the tool definitions this call sent: strict replay differs at "
            "body.tools (replay with mode='sequential', or ignore=['tools'])"
        )


def request_body(provider: str, attrs: JSON, notes: list[str], streamed: bool) -> JSON:
    """The body the call sent, rebuilt from the trace (or as recorded, where the dialect holds it whole)."""
    exact = attrs.get(EXACT_BODY)
    if isinstance(exact, dict) and provider in ("anthropic", "openai"):
        # messages.stream() sends stream=true, which the SDK method was not given
        return {**exact, "stream": True} if streamed else dict(exact)
    inputs = [m for m in json_attr(attrs.get("gen_ai.input.messages")) or [] if isinstance(m, Mapping)]
    system = _text(
        [p for p in json_attr(attrs.get("gen_ai.system_instructions")) or [] if isinstance(p, dict)]
    )
    definitions = json_attr(attrs.get("gen_ai.tool.definitions"))
    tools = _tools(definitions, provider)
    _note_missing_tools(attrs, inputs, tools, notes)
    if provider == "google":
        return gemini_request(
            attrs, inputs, system, definitions if isinstance(definitions, list) else [], notes
        )
    body: JSON = {"model": attrs.get("gen_ai.request.model", "")}
    if isinstance(attrs.get("gen_ai.request.max_tokens"), int):
        body["max_tokens"] = attrs["gen_ai.request.max_tokens"]
    if provider == "anthropic":
        body, params = _anthropic_body(body, inputs, system, notes), _ANTHROPIC_PARAMS
    else:
        body, params = _openai_body(body, inputs, system, notes), _OPENAI_PARAMS
    if tools:
        body["tools"] = tools
    body.update({key: attrs[attr] for attr, key in params.items() if attr in attrs})
    if streamed:
        body["stream"] = True
        if provider == "openai":
            body["stream_options"] = {"include_usage": True}
            notes.append("stream_options is not in the trace; include_usage assumed")
    return body


def neutral_response(provider: str, attrs: JSON, notes: list[str]) -> JSON:
    """The reply of the call (first choice, finish reason, usage) in the neutral form."""
    outputs = json_attr(attrs.get("gen_ai.output.messages")) or []
    if not outputs:
        notes.append("the trace holds no output message for this call; the reply is empty")
    parts = [p for m in outputs[:1] for p in _parts(m)]
    if len(outputs) > 1:
        notes.append(f"{len(outputs)} choices in the trace; the first is kept")
    reasons = attrs.get("gen_ai.response.finish_reasons") or []
    finish = (
        attrs.get("anthropic.message.stop_reason")
        or (outputs[0].get("finish_reason") if outputs and isinstance(outputs[0], Mapping) else None)
        or (reasons[0] if reasons else None)
    )
    return {
        "message": {"role": "assistant", "content": _neutral_blocks(parts, notes, "output")},
        "stop_reason": _FINISH.get(str(finish), "other"),
        "usage": usage(
            attrs.get("gen_ai.usage.input_tokens"),
            attrs.get("gen_ai.usage.output_tokens"),
            attrs.get("gen_ai.usage.cache_read.input_tokens"),
            attrs.get(
                "gen_ai.usage.cache_creation.input_tokens", attrs.get("gen_ai.usage.cache_write.input_tokens")
            ),
        ),
        "model": str(attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model") or ""),
    }
