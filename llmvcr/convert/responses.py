"""Responses into the neutral view (streams accumulated into their final message), and :func:`read_call`."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..cassette import Cassette, Entry
from ..wire import stream_finished as wire_finished
from .neutral import (
    JSON,
    OPENAI_STOP,
    STOP_REASONS,
    Call,
    api_of,
    parse_arguments,
    text_block,
    text_of,
    tool_use_block,
    usage,
)
from .requests import anthropic_block, anthropic_request, chat_request, responses_request


# -- responses ---------------------------------------------------------------------------------
def _anthropic_message(body: JSON, request_id: str | None, notes: list[str]) -> JSON:
    blocks = [
        b
        for b in (anthropic_block(b, notes, "response.content") for b in body.get("content") or [])
        if b is not None
    ]
    stop = body.get("stop_reason")
    u = body.get("usage") or {}
    return {
        "message": {"role": "assistant", "content": blocks},
        "stop_reason": stop if stop in STOP_REASONS else "other",
        "usage": usage(
            u.get("input_tokens"),
            u.get("output_tokens"),
            u.get("cache_read_input_tokens"),
            u.get("cache_creation_input_tokens"),
        ),
        "model": str(body.get("model", "")),
        "request_id": request_id,
    }


def accumulate_anthropic(events: list[JSON]) -> tuple[JSON, str | None]:
    """An Anthropic event stream folded into the message body it describes, and any in-stream error."""
    message: JSON = {}
    blocks: dict[int, JSON] = {}
    partial: dict[int, str] = {}
    error: str | None = None
    for event in events:
        data = event.get("data")
        if not isinstance(data, dict):
            continue
        kind = data.get("type") or event.get("event")
        if kind == "message_start":
            message = dict(data.get("message") or {})
            message["usage"] = dict(message.get("usage") or {})
        elif kind == "content_block_start":
            blocks[int(data.get("index", len(blocks)))] = dict(data.get("content_block") or {})
        elif kind == "content_block_delta":
            index = int(data.get("index", 0))
            block, delta = blocks.setdefault(index, {}), data.get("delta") or {}
            dtype = delta.get("type")
            if dtype == "text_delta":
                block["text"] = block.get("text", "") + str(delta.get("text", ""))
            elif dtype == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + str(delta.get("thinking", ""))
            elif dtype == "signature_delta":
                block["signature"] = delta.get("signature")
            elif dtype == "input_json_delta":
                partial[index] = partial.get(index, "") + str(delta.get("partial_json", ""))
        elif kind == "message_delta":
            delta = data.get("delta") or {}
            if "stop_reason" in delta:
                message["stop_reason"] = delta["stop_reason"]
            message.setdefault("usage", {}).update(
                {k: v for k, v in (data.get("usage") or {}).items() if v is not None}
            )
        elif kind == "error":
            err = data.get("error") or {}
            error = str(err.get("message") or err.get("type") or "stream error")
    for index, text in partial.items():
        if text:
            blocks[index]["input"] = parse_arguments(text)
    message["content"] = [blocks[i] for i in sorted(blocks)]
    return message, error


def _chat_message(body: JSON) -> JSON:
    choices = body.get("choices") or [{}]
    choice = choices[0] if isinstance(choices[0], dict) else {}
    wire = choice.get("message") or {}
    content: list[JSON] = []
    if wire.get("reasoning_content"):
        content.append({"type": "thinking", "thinking": str(wire["reasoning_content"]), "signature": None})
    text = text_of(wire.get("content"))
    if text:
        content.append(text_block(text))
    for call in wire.get("tool_calls") or []:
        fn = call.get("function") or {}
        content.append(
            tool_use_block(
                str(call.get("id", "")), str(fn.get("name", "")), parse_arguments(fn.get("arguments"))
            )
        )
    u = body.get("usage") or {}
    return {
        "message": {"role": "assistant", "content": content},
        "stop_reason": OPENAI_STOP.get(str(choice.get("finish_reason")), "other"),
        "usage": usage(
            u.get("prompt_tokens"),
            u.get("completion_tokens"),
            (u.get("prompt_tokens_details") or {}).get("cached_tokens"),
        ),
        "model": str(body.get("model", "")),
        "request_id": body.get("id"),
    }


def accumulate_chat(events: list[JSON]) -> tuple[JSON, str | None]:
    """A Chat Completions chunk stream folded into the completion it describes, and any in-stream error."""
    text: list[str] = []
    reasoning: list[str] = []
    calls: dict[int, JSON] = {}
    body: JSON = {}
    finish: Any = None
    error: str | None = None
    for event in events:
        data = event.get("data")
        if not isinstance(data, dict):
            continue
        if "error" in data:
            err = data["error"]
            error = str(err.get("message") if isinstance(err, dict) else err)
            continue
        body["id"] = data.get("id") or body.get("id")
        body["model"] = data.get("model") or body.get("model")
        if data.get("usage"):
            body["usage"] = data["usage"]
        for choice in data.get("choices") or []:
            finish = choice.get("finish_reason") or finish
            delta = choice.get("delta") or {}
            if delta.get("content"):
                text.append(str(delta["content"]))
            if delta.get("reasoning_content"):
                reasoning.append(str(delta["reasoning_content"]))
            for fragment in delta.get("tool_calls") or []:
                slot = calls.setdefault(
                    int(fragment.get("index") or 0), {"id": "", "name": "", "arguments": ""}
                )
                slot["id"] = fragment.get("id") or slot["id"]
                fn = fragment.get("function") or {}
                slot["name"] = fn.get("name") or slot["name"]
                slot["arguments"] += fn.get("arguments") or ""
    message: JSON = {"role": "assistant", "content": "".join(text) or None}
    if reasoning:
        message["reasoning_content"] = "".join(reasoning)
    if calls:
        message["tool_calls"] = [
            {
                "id": c["id"] or f"call_{i}",
                "type": "function",
                "function": {"name": c["name"], "arguments": c["arguments"]},
            }
            for i, c in sorted(calls.items())
        ]
    body["choices"] = [{"index": 0, "message": message, "finish_reason": finish}]
    return body, error


def _responses_message(body: JSON, notes: list[str]) -> JSON:
    content: list[JSON] = []
    for item in body.get("output") or []:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "message":
            content.extend(
                text_block(str(p.get("text", "")))
                for p in item.get("content") or []
                if isinstance(p, dict) and p.get("type") == "output_text"
            )
        elif kind == "function_call":
            content.append(
                tool_use_block(
                    str(item.get("call_id", "")),
                    str(item.get("name", "")),
                    parse_arguments(item.get("arguments")),
                )
            )
        elif kind == "reasoning":
            summary = "\n".join(
                str(s.get("text", "")) for s in item.get("summary") or [] if isinstance(s, dict)
            )
            content.append({"type": "thinking", "thinking": summary, "signature": None})
        else:
            notes.append(f"response.output: a {kind!r} item has no neutral form; dropped")
    incomplete = (body.get("incomplete_details") or {}).get("reason")
    stop = (
        "tool_use"
        if any(b["type"] == "tool_use" for b in content)
        else "max_tokens"
        if incomplete == "max_output_tokens"
        else "end_turn"
    )
    u = body.get("usage") or {}
    return {
        "message": {"role": "assistant", "content": content},
        "stop_reason": stop,
        "usage": usage(
            u.get("input_tokens"),
            u.get("output_tokens"),
            (u.get("input_tokens_details") or {}).get("cached_tokens"),
        ),
        "model": str(body.get("model", "")),
        "request_id": body.get("id"),
    }


def _responses_final(events: list[JSON]) -> tuple[JSON, str | None]:
    final: JSON = {}
    error: str | None = None
    for event in events:
        data = event.get("data")
        if not isinstance(data, dict):
            continue
        if data.get("type") in ("response.completed", "response.incomplete", "response.failed"):
            final = data.get("response") or {}
        elif data.get("type") == "error":
            error = str(data.get("message") or "stream error")
    return final, error


def error_message(entry: Entry, api: str) -> str:
    """How regista's providers word a failed call: ``Anthropic API returned 429: ...``."""
    body = entry.response.body
    err = body.get("error") if isinstance(body, dict) else None
    message = err.get("message") if isinstance(err, dict) else None
    text = str(message) if message else json.dumps(body)[:500] if not isinstance(body, str) else body[:500]
    if api == "anthropic":
        return f"Anthropic API returned {entry.response.status}: {text}"
    return f"endpoint returned {entry.response.status}: {text}"


def stream_finished(events: list[JSON]) -> bool:
    """Whether a stream holds its terminal event, by any provider's grammar (:mod:`llmvcr.wire`):
    openai's SDK closes a stream at ``[DONE]``, so a complete one could be recorded truncated."""
    return wire_finished(events)


def read_call(entry: Entry, position: int) -> Call | None:
    """The neutral view of one entry, or None when it is not a model call (embeddings, token counts)."""
    api = api_of(entry)
    if api is None:
        return None
    notes: list[str] = []
    body = entry.request.body
    reader = {
        "anthropic": anthropic_request,
        "openai-chat": chat_request,
        "openai-responses": responses_request,
    }
    request = reader[api](body, notes)
    res = entry.response
    stream = res.stream
    latency = 0
    if stream:
        last_t = stream[-1].get("t")
        latency = int(last_t) if isinstance(last_t, (int, float)) else 0
    if res.status >= 400:
        return Call(position, entry, api, request, None, error_message(entry, api), latency, notes)
    error: str | None = None
    if api == "anthropic":
        if stream is not None:
            message, error = accumulate_anthropic(stream)
        else:
            message = res.body if isinstance(res.body, dict) else {}
        response = _anthropic_message(message, res.headers.get("request-id"), notes)
    elif api == "openai-chat":
        if stream is not None:
            completion, error = accumulate_chat(stream)
        else:
            completion = res.body if isinstance(res.body, dict) else {}
        response = _chat_message(completion)
    else:
        if stream is not None:
            final, error = _responses_final(stream)
        else:
            final = res.body if isinstance(res.body, dict) else {}
        response = _responses_message(final, notes)
    if res.failure:
        error = error or f"connection to the API failed mid-stream: {res.failure}"
    if error is not None:
        return Call(position, entry, api, request, None, error, latency, notes)
    if res.truncated and not stream_finished(stream or []):
        notes.append("the stream was cut short while recording; the message is what arrived")
    return Call(position, entry, api, request, response, None, latency, notes)


def model_calls(
    cassette: Cassette, aside: Mapping[int, Sequence[str]] | None = None
) -> tuple[list[Call], list[str]]:
    """Every model call of ``cassette`` in the neutral view, and what the view leaves out: the entries
    that are not model calls (``entry 3 (openai POST /v1/embeddings) is not a model call; left out``)
    and what a call held that the view cannot. ``aside`` holds the entries the caller reads itself
    (a tool entry), by position, each with what to say of it in its place (often nothing)."""
    aside = aside or {}
    calls: list[Call] = []
    left_out: list[str] = []
    for position, entry in enumerate(cassette.entries):
        if position in aside:
            left_out.extend(aside[position])
            continue
        call = read_call(entry, position)
        if call is None:
            request = entry.request
            left_out.append(
                f"entry {position} ({entry.provider} {request.method} {request.path}) "
                "is not a model call; left out"
            )
            continue
        calls.append(call)
        left_out.extend(f"entry {position}: {note}" for note in call.notes)
    return calls, left_out
