"""The neutral view written back as the SDKs send and receive it: request bodies, responses, events."""

from __future__ import annotations

import json
from typing import Any

from .neutral import JSON, OPENAI_FINISH


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


def anthropic_events(
    body: JSON, pieces: dict[int, list[str]] | None = None, *, done: bool = True
) -> list[JSON]:
    """An Anthropic Message body as the event stream that builds it (text split as ``pieces`` says)."""
    start = {**body, "content": [], "stop_reason": None, "usage": {**body["usage"], "output_tokens": 0}}
    events: list[JSON] = [{"event": "message_start", "data": {"type": "message_start", "message": start}}]

    def add(kind: str, **data: Any) -> None:
        events.append({"event": kind, "data": {"type": kind, **data}})

    for index, block in enumerate(body["content"]):
        kind = block["type"]
        split = (pieces or {}).get(index)
        if kind == "text":
            add("content_block_start", index=index, content_block={"type": "text", "text": ""})
            for piece in split if split is not None else [block["text"]]:
                add("content_block_delta", index=index, delta={"type": "text_delta", "text": piece})
        elif kind == "thinking":
            add(
                "content_block_start",
                index=index,
                content_block={"type": "thinking", "thinking": "", "signature": ""},
            )
            for piece in split if split is not None else [block["thinking"]]:
                add("content_block_delta", index=index, delta={"type": "thinking_delta", "thinking": piece})
            if block.get("signature"):
                add(
                    "content_block_delta",
                    index=index,
                    delta={"type": "signature_delta", "signature": block["signature"]},
                )
        elif kind == "tool_use":
            add("content_block_start", index=index, content_block={**block, "input": {}})
            arguments = split[0] if split else json.dumps(block.get("input") or {})
            add(
                "content_block_delta",
                index=index,
                delta={"type": "input_json_delta", "partial_json": arguments},
            )
        else:
            add("content_block_start", index=index, content_block=block)
        add("content_block_stop", index=index)
    if done:
        add(
            "message_delta",
            delta={"stop_reason": body["stop_reason"], "stop_sequence": None},
            usage={
                "input_tokens": body["usage"]["input_tokens"],
                "output_tokens": body["usage"]["output_tokens"],
            },
        )
        add("message_stop")
    return events


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


def chat_events(
    body: JSON,
    pieces: list[str] | None = None,
    reasoning: list[str] | None = None,
    *,
    with_usage: bool = True,
    done: bool = True,
) -> list[JSON]:
    """A Chat Completions body as the chunk stream that builds it, ending in ``[DONE]``."""
    message = body["choices"][0]["message"]
    base = {
        "id": body["id"],
        "object": "chat.completion.chunk",
        "created": body.get("created", 0),
        "model": body.get("model", ""),
    }

    def chunk(delta: JSON, finish: str | None = None) -> JSON:
        return {
            "data": {
                **base,
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
            }
        }

    events = [chunk({"role": "assistant", "content": ""})]
    events += [
        chunk({"reasoning_content": p})
        for p in (
            reasoning
            if reasoning is not None
            else [message["reasoning_content"]]
            if message.get("reasoning_content")
            else []
        )
    ]
    events += [
        chunk({"content": p})
        for p in (pieces if pieces is not None else [message["content"]] if message["content"] else [])
    ]
    for index, call in enumerate(message.get("tool_calls") or []):
        events.append(chunk({"tool_calls": [{"index": index, **call}]}))
    if done:
        events.append(chunk({}, body["choices"][0].get("finish_reason") or "stop"))
        if with_usage and body.get("usage"):
            events.append({"data": {**base, "choices": [], "usage": body["usage"]}})
        events.append({"data": "[DONE]"})
    return events
