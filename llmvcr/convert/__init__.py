"""Converters between llmvcr cassettes and other formats, and the provider-neutral view they share.

The view is regista's message vocabulary (the dumps of its ``ModelRequest`` and ``ModelResponse``):
a request is ``{model, system, messages, tools, max_tokens, params}``, a message is
``{role, content: [block]}`` with ``text``, ``thinking``, ``tool_use`` and ``tool_result`` blocks,
a response is ``{message, stop_reason, usage, model, request_id}``. Anthropic Messages, OpenAI Chat
Completions and OpenAI Responses entries, plain or streamed, read into it (streams accumulated into
their final message) with :func:`read_call`; :func:`anthropic_wire` and :func:`openai_wire` write a
neutral request back as the SDK would send it.

>>> call = read_call(cassette.entry(0), 0)
>>> call.request["messages"][0]
{'role': 'user', 'content': [{'type': 'text', 'text': 'What is the weather in Paris?'}]}

Nothing here imports an SDK.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from ..cassette import Entry
from ..errors import ConversionWarning
from ..sse import parse_events

__all__ = ["Call", "ConversionWarning", "anthropic_wire", "api_of", "openai_wire", "parse_sse", "read_call"]

JSON = dict[str, Any]
DEFAULT_MAX_TOKENS = 8192  # regista's ModelRequest default
STOP_REASONS = ("end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal", "pause_turn", "other")
FINAL_STOP_REASONS = frozenset({"end_turn", "stop_sequence", "refusal", "max_tokens", "other"})
_OPENAI_STOP = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}
OPENAI_FINISH = {
    "end_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
}


@dataclass(frozen=True, slots=True)
class Call:
    """One entry read as a model call: its neutral request and response (``None`` when it failed)."""

    position: int
    entry: Entry
    api: str  # "anthropic", "openai-chat" or "openai-responses"
    request: JSON
    response: JSON | None
    error: str | None = None
    latency_ms: int = 0
    notes: list[str] = field(default_factory=list)  # what the neutral view could not hold

    @property
    def label(self) -> str:
        request = self.entry.request
        return f"entry {self.position} ({self.entry.provider} {request.method} {request.path})"


# -- small pieces -----------------------------------------------------------------------------
def text_block(text: str) -> JSON:
    return {"type": "text", "text": text}


def tool_use_block(id: str, name: str, input: Any) -> JSON:
    return {"type": "tool_use", "id": id, "name": name, "input": input if isinstance(input, dict) else {}}


def parse_arguments(raw: Any) -> JSON:
    """Tool-call arguments (a JSON string) as a dict, the way regista reads them."""
    if isinstance(raw, dict):
        return raw
    if not raw:
        return {}
    try:
        parsed = json.loads(raw)
    except (TypeError, ValueError):
        return {"raw_arguments": raw}
    return parsed if isinstance(parsed, dict) else {"raw_arguments": raw}


def text_of(content: Any, notes: list[str] | None = None, where: str = "") -> str:
    """A string, or the joined text of a list of content parts (other parts noted as dropped)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    texts: list[str] = []
    for part in content if isinstance(content, list) else [content]:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif notes is not None:
            kind = part.get("type") if isinstance(part, dict) else type(part).__name__
            notes.append(f"{where}: a {kind!r} part has no text form; dropped")
    return "\n".join(texts)


def digest(*parts: Any, n: int = 24) -> str:
    """A short stable id derived from content (so conversions are deterministic)."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:n]


def usage(input_tokens: Any = 0, output_tokens: Any = 0, cache_read: Any = 0, cache_write: Any = 0) -> JSON:
    def n(value: Any) -> int:
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    return {
        "input_tokens": n(input_tokens),
        "output_tokens": n(output_tokens),
        "cache_read_tokens": n(cache_read),
        "cache_write_tokens": n(cache_write),
    }


def parse_sse(text: str) -> list[JSON]:
    """Server-sent events as llmvcr stores them: ``{"event"?: name, "data": json-or-text}``."""
    return parse_events(text.encode("utf-8"))


def api_of(entry: Entry) -> str | None:
    """Which model API an entry speaks, or None for anything else (embeddings, token counts...)."""
    path = entry.request.path.rstrip("/")
    body = entry.request.body
    if not isinstance(body, dict):
        return None
    if path.endswith("/messages") and "messages" in body:
        return "anthropic"
    if path.endswith("/chat/completions") and "messages" in body:
        return "openai-chat"
    if path.endswith("/responses") and "input" in body:
        return "openai-responses"
    return None


# -- requests ----------------------------------------------------------------------------------
_ANTHROPIC_CORE = ("model", "messages", "system", "tools", "max_tokens", "stream")
_CHAT_CORE = ("model", "messages", "tools", "max_tokens", "stream", "stream_options")
_RESPONSES_CORE = ("model", "instructions", "input", "tools", "max_output_tokens", "stream")


def _spec(name: Any, description: Any, schema: Any) -> JSON:
    return {
        "name": str(name),
        "description": description if isinstance(description, str) else "",
        "input_schema": schema if isinstance(schema, dict) else {},
        "parallel_safe": False,
    }


def _anthropic_block(block: Any, notes: list[str], where: str) -> JSON | None:
    if isinstance(block, str):
        return text_block(block)
    kind = block.get("type") if isinstance(block, dict) else None
    if kind == "text":
        return text_block(str(block.get("text", "")))
    if kind == "thinking":
        return {
            "type": "thinking",
            "thinking": str(block.get("thinking", "")),
            "signature": block.get("signature"),
        }
    if kind == "tool_use":
        return tool_use_block(str(block.get("id", "")), str(block.get("name", "")), block.get("input"))
    if kind == "tool_result":
        return {
            "type": "tool_result",
            "tool_use_id": str(block.get("tool_use_id", "")),
            "content": text_of(block.get("content"), notes, where),
            "is_error": bool(block.get("is_error", False)),
        }
    notes.append(f"{where}: a {kind!r} block has no neutral form; dropped")
    return None


def _anthropic_request(body: JSON, notes: list[str]) -> JSON:
    messages = []
    for i, m in enumerate(body.get("messages") or []):
        content = m.get("content") if isinstance(m, dict) else None
        raw = [content] if isinstance(content, str) else content if isinstance(content, list) else []
        blocks = [b for b in (_anthropic_block(b, notes, f"messages[{i}]") for b in raw) if b is not None]
        messages.append({"role": str(m.get("role", "user")), "content": blocks})
    tools = []
    for tool in body.get("tools") or []:
        if isinstance(tool, dict) and "input_schema" in tool:
            tools.append(_spec(tool.get("name"), tool.get("description"), tool.get("input_schema")))
        else:
            notes.append(
                f"tools: the server tool {tool.get('type') if isinstance(tool, dict) else tool!r} dropped"
            )
    max_tokens = body.get("max_tokens")
    return {
        "model": str(body.get("model", "")),
        "system": text_of(body.get("system"), notes, "system"),
        "messages": messages,
        "tools": tools,
        "max_tokens": max_tokens if isinstance(max_tokens, int) else DEFAULT_MAX_TOKENS,
        "params": {k: v for k, v in body.items() if k not in _ANTHROPIC_CORE},
    }


def _append_result(messages: list[JSON], block: JSON) -> None:
    """Tool results travel as one user message of tool_result blocks, in call order."""
    last = messages[-1] if messages else None
    if (
        last
        and last["role"] == "user"
        and last["content"]
        and all(b["type"] == "tool_result" for b in last["content"])
    ):
        last["content"].append(block)
    else:
        messages.append({"role": "user", "content": [block]})


def _append_tool_use(messages: list[JSON], block: JSON) -> None:
    if messages and messages[-1]["role"] == "assistant":
        messages[-1]["content"].append(block)
    else:
        messages.append({"role": "assistant", "content": [block]})


def _chat_request(body: JSON, notes: list[str]) -> JSON:
    system: list[str] = []
    messages: list[JSON] = []
    for i, m in enumerate(body.get("messages") or []):
        if not isinstance(m, dict):
            continue
        role, where = m.get("role"), f"messages[{i}]"
        if role in ("system", "developer"):
            text = text_of(m.get("content"), notes, where)
            if messages:
                messages.append({"role": "system", "content": [text_block(text)]})
            else:
                system.append(text)
        elif role == "tool":
            _append_result(
                messages,
                {
                    "type": "tool_result",
                    "tool_use_id": str(m.get("tool_call_id", "")),
                    "content": text_of(m.get("content"), notes, where),
                    "is_error": False,
                },
            )
        elif role == "assistant":
            content: list[JSON] = []
            if m.get("reasoning_content"):
                content.append(
                    {"type": "thinking", "thinking": str(m["reasoning_content"]), "signature": None}
                )
            text = text_of(m.get("content"), notes, where)
            if text:
                content.append(text_block(text))
            for call in m.get("tool_calls") or []:
                fn = call.get("function") or {}
                content.append(
                    tool_use_block(
                        str(call.get("id", "")), str(fn.get("name", "")), parse_arguments(fn.get("arguments"))
                    )
                )
            messages.append({"role": "assistant", "content": content})
        else:
            raw = m.get("content")
            parts = [raw] if isinstance(raw, str) else raw if isinstance(raw, list) else []
            blocks = []
            for part in parts:
                if isinstance(part, str) or (isinstance(part, dict) and isinstance(part.get("text"), str)):
                    blocks.append(text_block(part if isinstance(part, str) else part["text"]))
                else:
                    notes.append(
                        f"{where}: a {part.get('type') if isinstance(part, dict) else part!r} part dropped"
                    )
            messages.append({"role": "user", "content": blocks})
    tools = []
    for tool in body.get("tools") or []:
        fn = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(fn, dict):
            tools.append(_spec(fn.get("name"), fn.get("description"), fn.get("parameters")))
        else:
            notes.append(f"tools: a {tool.get('type') if isinstance(tool, dict) else tool!r} tool dropped")
    max_tokens = body.get("max_tokens", body.get("max_completion_tokens"))
    core = _CHAT_CORE + (("max_completion_tokens",) if "max_tokens" not in body else ())
    return {
        "model": str(body.get("model", "")),
        "system": "\n".join(system),
        "messages": messages,
        "tools": tools,
        "max_tokens": max_tokens if isinstance(max_tokens, int) else DEFAULT_MAX_TOKENS,
        "params": {k: v for k, v in body.items() if k not in core},
    }


def _responses_request(body: JSON, notes: list[str]) -> JSON:
    items = body.get("input")
    messages: list[JSON] = []
    for i, item in enumerate([{"role": "user", "content": items}] if isinstance(items, str) else items or []):
        if not isinstance(item, dict):
            continue
        kind, where = item.get("type", "message"), f"input[{i}]"
        if kind == "function_call":
            _append_tool_use(
                messages,
                tool_use_block(
                    str(item.get("call_id", "")),
                    str(item.get("name", "")),
                    parse_arguments(item.get("arguments")),
                ),
            )
        elif kind == "function_call_output":
            _append_result(
                messages,
                {
                    "type": "tool_result",
                    "tool_use_id": str(item.get("call_id", "")),
                    "content": text_of(item.get("output"), notes, where),
                    "is_error": False,
                },
            )
        elif kind == "message":
            role = item.get("role")
            role = (
                "system"
                if role == "developer"
                else role
                if role in ("user", "assistant", "system")
                else "user"
            )
            messages.append(
                {"role": role, "content": [text_block(text_of(item.get("content"), notes, where))]}
            )
        else:
            notes.append(f"{where}: a {kind!r} item has no neutral form; dropped")
    tools = [
        _spec(t.get("name"), t.get("description"), t.get("parameters"))
        for t in body.get("tools") or []
        if isinstance(t, dict) and t.get("type") == "function"
    ]
    max_tokens = body.get("max_output_tokens")
    return {
        "model": str(body.get("model", "")),
        "system": text_of(body.get("instructions"), notes, "instructions"),
        "messages": messages,
        "tools": tools,
        "max_tokens": max_tokens if isinstance(max_tokens, int) else DEFAULT_MAX_TOKENS,
        "params": {k: v for k, v in body.items() if k not in _RESPONSES_CORE},
    }


# -- responses ---------------------------------------------------------------------------------
def _anthropic_message(body: JSON, request_id: str | None, notes: list[str]) -> JSON:
    blocks = [
        b
        for b in (_anthropic_block(b, notes, "response.content") for b in body.get("content") or [])
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
        "stop_reason": _OPENAI_STOP.get(str(choice.get("finish_reason")), "other"),
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
    """Whether a stream holds its terminal event (openai's SDK closes a stream at ``[DONE]``, so a
    complete one can be recorded as truncated)."""
    for event in reversed(events):
        data = event.get("data")
        if data == "[DONE]" or (
            isinstance(data, dict)
            and data.get("type")
            in ("message_stop", "response.completed", "response.incomplete", "response.failed")
        ):
            return True
    return False


def read_call(entry: Entry, position: int) -> Call | None:
    """The neutral view of one entry, or None when it is not a model call (embeddings, token counts)."""
    api = api_of(entry)
    if api is None:
        return None
    notes: list[str] = []
    body = entry.request.body
    reader = {
        "anthropic": _anthropic_request,
        "openai-chat": _chat_request,
        "openai-responses": _responses_request,
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
