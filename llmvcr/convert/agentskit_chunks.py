"""An llmvcr entry as agentskit stream chunks: text, reasoning, tool_call, usage, error, done."""

from __future__ import annotations

import json

from ..cassette import Entry
from .neutral import JSON

ADAPTER_ERROR = {"code": "AK_ADAPTER_STREAM_FAILED", "name": "AdapterError"}


def _usage_chunk(prompt: int, completion: int) -> JSON:
    return {
        "type": "usage",
        "usage": {"promptTokens": prompt, "completionTokens": completion, "totalTokens": prompt + completion},
    }


def _tool_chunk(id: str, name: str, args: str) -> JSON:
    return {"type": "tool_call", "toolCall": {"id": id, "name": name, "args": args or "{}"}}


def _anthropic_chunks(events: list[JSON]) -> list[JSON]:
    """Anthropic stream events as chunks: deltas as they come, a tool call at its block's end."""
    chunks: list[JSON] = []
    blocks: dict[int, JSON] = {}
    prompt = 0
    for event in events:
        data = event.get("data")
        if not isinstance(data, dict):
            continue
        kind = data.get("type")
        if kind == "message_start":
            prompt = int(((data.get("message") or {}).get("usage") or {}).get("input_tokens") or 0)
        elif kind == "content_block_start":
            blocks[int(data.get("index", 0))] = {**(data.get("content_block") or {}), "args": ""}
        elif kind == "content_block_delta":
            delta, block = data.get("delta") or {}, blocks.setdefault(int(data.get("index", 0)), {"args": ""})
            if delta.get("type") == "text_delta" and delta.get("text"):
                chunks.append({"type": "text", "content": delta["text"]})
            elif delta.get("type") == "thinking_delta" and delta.get("thinking"):
                chunks.append({"type": "reasoning", "content": delta["thinking"]})
            elif delta.get("type") == "input_json_delta":
                block["args"] += str(delta.get("partial_json", ""))
        elif kind == "content_block_stop":
            block = blocks.get(int(data.get("index", 0))) or {}
            if block.get("type") == "tool_use":
                chunks.append(
                    _tool_chunk(str(block.get("id", "")), str(block.get("name", "")), block["args"])
                )
        elif kind == "message_delta":
            u = data.get("usage") or {}
            chunks.append(
                _usage_chunk(int(u.get("input_tokens") or prompt), int(u.get("output_tokens") or 0))
            )
        elif kind == "message_stop":
            chunks.append({"type": "done"})
        elif kind == "error":
            err = data.get("error") or {}
            chunks.append(
                {
                    "type": "error",
                    "content": str(err.get("message") or "stream error"),
                    "metadata": {"error": ADAPTER_ERROR},
                }
            )
    return chunks


def _chat_chunks(events: list[JSON]) -> list[JSON]:
    """Chat Completions chunks as agentskit's: text and usage as they come, tool calls at ``[DONE]``."""
    chunks: list[JSON] = []
    calls: dict[int, JSON] = {}

    def flush() -> None:
        chunks.extend(_tool_chunk(c["id"], c["name"], c["args"]) for _, c in sorted(calls.items()))
        calls.clear()

    for event in events:
        data = event.get("data")
        if data == "[DONE]":
            flush()
            chunks.append({"type": "done"})
            continue
        if not isinstance(data, dict):
            continue
        if "error" in data:
            err = data["error"]
            chunks.append(
                {
                    "type": "error",
                    "content": str(err.get("message") if isinstance(err, dict) else err),
                    "metadata": {"error": ADAPTER_ERROR},
                }
            )
            continue
        for choice in data.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("reasoning_content"):
                chunks.append({"type": "reasoning", "content": str(delta["reasoning_content"])})
            if delta.get("content"):
                chunks.append({"type": "text", "content": str(delta["content"])})
            for fragment in delta.get("tool_calls") or []:
                slot = calls.setdefault(int(fragment.get("index") or 0), {"id": "", "name": "", "args": ""})
                fn = fragment.get("function") or {}
                slot["id"] = fragment.get("id") or slot["id"]
                slot["name"] = fn.get("name") or slot["name"]
                slot["args"] += fn.get("arguments") or ""
        u = data.get("usage")
        if isinstance(u, dict):
            chunks.append(
                _usage_chunk(int(u.get("prompt_tokens") or 0), int(u.get("completion_tokens") or 0))
            )
    flush()
    return chunks


def _message_chunks(response: JSON, api: str) -> list[JSON]:
    """A whole (non-streamed) message as the chunks its stream would give, in agentskit's order."""
    chunks = []
    for b in response["message"]["content"]:
        if b["type"] == "tool_use":
            chunks.append(_tool_chunk(b["id"], b["name"], json.dumps(b["input"])))
        elif b["type"] in ("text", "thinking") and (b.get("text") or b.get("thinking")):
            chunks.append(
                {"type": "text", "content": b["text"]}
                if b["type"] == "text"
                else {"type": "reasoning", "content": b["thinking"]}
            )
    usage = _usage_chunk(response["usage"]["input_tokens"], response["usage"]["output_tokens"])
    if api == "anthropic":  # tool calls in block order; usage at message_delta
        return [*chunks, usage, {"type": "done"}]
    tools = [c for c in chunks if c["type"] == "tool_call"]  # OpenAI adapters flush tool calls at the end
    return [c for c in chunks if c["type"] != "tool_call"] + [usage] + tools + [{"type": "done"}]


def entry_chunks(entry: Entry, response: JSON | None, error: str | None, api: str) -> list[JSON]:
    res = entry.response
    if res.status >= 400:
        return [
            {
                "type": "error",
                "content": error or f"HTTP {res.status}",
                "metadata": {"error": ADAPTER_ERROR, "status": res.status, "body": res.body},
            }
        ]
    if res.stream is not None and api == "anthropic":
        chunks = _anthropic_chunks(res.stream)
    elif res.stream is not None and api == "openai-chat":
        chunks = _chat_chunks(res.stream)
    elif response is not None:
        chunks = _message_chunks(response, api)
    else:
        chunks = []
    if res.failure:
        chunks.append({"type": "error", "content": res.failure, "metadata": {"error": ADAPTER_ERROR}})
    return chunks
