"""The neutral view written back as the SDKs send and receive it: request bodies and responses; the
event streams that build a response are each provider's grammar in :mod:`llmvcr.wire`."""

from __future__ import annotations

import json

from ..wire.anthropic import events as anthropic_events
from ..wire.openai import chat_events
from .neutral import JSON, OPENAI_FINISH

__all__ = [
    "anthropic_body",
    "anthropic_events",
    "anthropic_wire",
    "chat_body",
    "chat_events",
    "openai_wire",
]


# -- writing requests back as an SDK sends them --------------------------------------------------
def _wire_block(block: JSON, compact: bool) -> JSON:
    out = {k: v for k, v in block.items() if v is not None}  # regista dumps with exclude_none
    if compact and out.get("type") == "tool_result" and not out.get("is_error"):
        out.pop("is_error", None)
    return out


def anthropic_wire(request: JSON, *, compact: bool = False) -> JSON:
    """A neutral request as an Anthropic ``messages.create`` body.

    The default is exactly what regista's ``AnthropicProvider`` sends (block lists, the system prompt
    as a cached text block); ``compact`` writes text-only messages and the system prompt as strings.
    """
    messages = []
    for m in request["messages"]:
        blocks = [_wire_block(b, compact) for b in m["content"]]
        plain = compact and len(blocks) == 1 and blocks[0]["type"] == "text"
        messages.append({"role": m["role"], "content": blocks[0]["text"] if plain else blocks})
    body: JSON = {"model": request["model"], "max_tokens": request["max_tokens"], "messages": messages}
    if request.get("system"):
        body["system"] = (
            request["system"]
            if compact
            else [{"type": "text", "text": request["system"], "cache_control": {"type": "ephemeral"}}]
        )
    if request.get("tools"):
        body["tools"] = [
            {"name": t["name"], "description": t["description"], "input_schema": t["input_schema"]}
            for t in request["tools"]
        ]
    body.update(request.get("params") or {})
    return body


def openai_wire(request: JSON) -> JSON:
    """A neutral request as a Chat Completions body, the way regista's ``OpenAICompatProvider`` sends it."""
    wire: list[JSON] = [{"role": "system", "content": request["system"]}] if request.get("system") else []
    for message in request["messages"]:
        wire.extend(
            {"role": "tool", "tool_call_id": block["tool_use_id"], "content": block["content"]}
            for block in message["content"]
            if block["type"] == "tool_result"
        )
        text = "".join(b["text"] for b in message["content"] if b["type"] == "text")
        calls = [
            {
                "id": b["id"],
                "type": "function",
                "function": {"name": b["name"], "arguments": json.dumps(b["input"])},
            }
            for b in message["content"]
            if b["type"] == "tool_use"
        ]
        if message["role"] == "assistant":
            if text or calls:
                entry: JSON = {"role": "assistant", "content": text or None}
                if calls:
                    entry["tool_calls"] = calls
                wire.append(entry)
        elif text:
            wire.append({"role": message["role"], "content": text})
    body: JSON = {"model": request["model"], "max_tokens": request["max_tokens"], "messages": wire}
    if request.get("tools"):
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t["name"],
                    "description": t["description"],
                    "parameters": t["input_schema"],
                },
            }
            for t in request["tools"]
        ]
    body.update(request.get("params") or {})
    return body


def anthropic_body(response: JSON, id: str) -> JSON:
    """A neutral response as an Anthropic Message body."""
    stop = response.get("stop_reason")
    u = response.get("usage") or {}
    return {
        "id": id,
        "type": "message",
        "role": "assistant",
        "model": response.get("model", ""),
        "content": [_wire_block(b, False) for b in response["message"]["content"]],
        "stop_reason": None if stop == "other" else stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": u.get("input_tokens", 0),
            "output_tokens": u.get("output_tokens", 0),
            "cache_read_input_tokens": u.get("cache_read_tokens", 0),
            "cache_creation_input_tokens": u.get("cache_write_tokens", 0),
        },
    }


def chat_body(response: JSON, id: str) -> JSON:
    """A neutral response as a Chat Completions body."""
    content = response["message"]["content"]
    text = "".join(b["text"] for b in content if b["type"] == "text")
    message: JSON = {"role": "assistant", "content": text or None, "refusal": None}
    thinking = "".join(b["thinking"] for b in content if b["type"] == "thinking")
    if thinking:
        message["reasoning_content"] = thinking
    calls = [
        {
            "id": b["id"],
            "type": "function",
            "function": {"name": b["name"], "arguments": json.dumps(b["input"])},
        }
        for b in content
        if b["type"] == "tool_use"
    ]
    if calls:
        message["tool_calls"] = calls
    u = response.get("usage") or {}
    chat_usage: JSON = {
        "prompt_tokens": u.get("input_tokens", 0),
        "completion_tokens": u.get("output_tokens", 0),
        "total_tokens": u.get("input_tokens", 0) + u.get("output_tokens", 0),
    }
    if u.get("cache_read_tokens"):
        chat_usage["prompt_tokens_details"] = {"cached_tokens": u["cache_read_tokens"]}
    return {
        "id": id,
        "object": "chat.completion",
        "created": 0,
        "model": response.get("model", ""),
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": OPENAI_FINISH.get(str(response.get("stop_reason")), "stop"),
            }
        ],
        "usage": chat_usage,
    }
