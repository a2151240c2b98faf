"""agentskit cassettes: ``@agentskit/eval/replay``'s JSON of adapter requests and stream chunks.

A document is ``{version: 1, seed?, metadata?, entries: [{request: {messages, context?}, chunks}]}``.
Messages carry ``id``, ``role``, a string ``content``, ``status`` and an ISO ``createdAt`` (the
loader requires the last two kinds), plus ``toolCalls`` / ``toolCallId``; chunks are ``text``,
``reasoning``, ``tool_call`` (``args`` a JSON string), ``usage`` (``promptTokens``,
``completionTokens``, ``totalTokens``), ``error`` and ``done``. agentskit records no model, provider
or HTTP detail, so ``to_agentskit`` keeps those in ``context.metadata.llmvcr`` and
``from_agentskit`` reads them back when present.

>>> llmvcr.to_agentskit(cassette, "fixtures/bug-427.cassette.json")
>>> cassette = llmvcr.from_agentskit("fixtures/bug-427.cassette.json")
"""

from __future__ import annotations

import json
import os
import warnings
from typing import Any

from ..cassette import Cassette, Entry, Request, Response
from ..errors import CassetteFormatError
from ..matching import default_request_hash
from ..schema import LLMVCR_VERSION
from ..storage import atomic_write, load_cassette
from . import (
    JSON,
    ConversionWarning,
    anthropic_body,
    anthropic_events,
    anthropic_wire,
    chat_body,
    chat_events,
    digest,
    openai_wire,
    parse_arguments,
    read_call,
    text_block,
)

VERSION = 1
CREATED_AT = "1970-01-01T00:00:00.000Z"  # a fixed timestamp: exports stay byte-stable (not fingerprinted)
_ADAPTER_ERROR = {"code": "AK_ADAPTER_STREAM_FAILED", "name": "AdapterError"}


# -- messages ---------------------------------------------------------------------------------------
def _message(position: int, role: str, content: str, **extra: Any) -> JSON:
    message: JSON = {
        "id": f"msg-{position}-{digest(role, content, n=8)}",
        "role": role,
        "content": content,
        "status": "complete",
        "createdAt": CREATED_AT,
    }
    message.update({k: v for k, v in extra.items() if v})
    return message


def to_messages(request: JSON) -> list[JSON]:
    """Neutral messages as agentskit's: system first, tool results as ``role: "tool"`` messages."""
    out: list[JSON] = []
    if request.get("system"):
        out.append(_message(0, "system", request["system"]))
    for message in request["messages"]:
        role, blocks = message["role"], message["content"]
        if role == "assistant":
            text = "".join(b["text"] for b in blocks if b["type"] == "text")
            calls = [
                {"id": b["id"], "name": b["name"], "args": b["input"], "status": "complete"}
                for b in blocks
                if b["type"] == "tool_use"
            ]
            thinking = [
                {"thinking": b["thinking"], "signature": b.get("signature")}
                for b in blocks
                if b["type"] == "thinking"
            ]
            out.append(
                _message(
                    len(out),
                    "assistant",
                    text,
                    toolCalls=calls,
                    metadata={"llmvcr": {"thinking": thinking}} if thinking else None,
                )
            )
            continue
        texts: list[str] = []
        for block in [*blocks, {"type": "end"}]:
            if block["type"] == "text":
                texts.append(block["text"])
                continue
            if texts:
                out.append(_message(len(out), role, "".join(texts)))
                texts = []
            if block["type"] == "tool_result":
                metadata = {"llmvcr": {"is_error": True}} if block.get("is_error") else None
                out.append(
                    _message(
                        len(out), "tool", block["content"], toolCallId=block["tool_use_id"], metadata=metadata
                    )
                )
        if not blocks:
            out.append(_message(len(out), role, ""))
    return out


def from_messages(messages: list[JSON], system_prompt: Any) -> tuple[str, list[JSON]]:
    """agentskit messages as a neutral system prompt and neutral messages.

    ``context.systemPrompt`` wins; leading system messages are the prompt when it is absent, and are
    dropped when they repeat it (``createRuntime`` sends it both ways).
    """
    system = system_prompt if isinstance(system_prompt, str) else ""
    neutral: list[JSON] = []
    for m in messages:
        role, content = m.get("role"), str(m.get("content") or "")
        metadata = m.get("metadata")
        meta = (metadata.get("llmvcr") or {}) if isinstance(metadata, dict) else {}
        if role == "system" and not neutral and (not system or content == system):
            system = system or content
            continue
        if role == "tool":
            block = {
                "type": "tool_result",
                "tool_use_id": str(m.get("toolCallId", "")),
                "content": content,
                "is_error": bool(meta.get("is_error", False)),
            }
            last = neutral[-1] if neutral else None
            if (
                last
                and last["role"] == "user"
                and last["content"]
                and all(b["type"] == "tool_result" for b in last["content"])
            ):
                last["content"].append(block)
            else:
                neutral.append({"role": "user", "content": [block]})
        elif role == "assistant":
            blocks: list[JSON] = [
                {"type": "thinking", "thinking": str(t.get("thinking", "")), "signature": t.get("signature")}
                for t in meta.get("thinking") or []
            ]
            if content or not m.get("toolCalls"):
                blocks.append(text_block(content))
            blocks.extend(
                {
                    "type": "tool_use",
                    "id": str(call.get("id", "")),
                    "name": str(call.get("name", "")),
                    "input": parse_arguments(call.get("args")),
                }
                for call in m.get("toolCalls") or []
            )
            neutral.append({"role": "assistant", "content": blocks})
        else:
            neutral.append(
                {"role": "system" if role == "system" else "user", "content": [text_block(content)]}
            )
    return system, neutral


# -- chunks -----------------------------------------------------------------------------------------
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
                    "metadata": {"error": _ADAPTER_ERROR},
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
                    "metadata": {"error": _ADAPTER_ERROR},
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


def _chunks(entry: Entry, response: JSON | None, error: str | None, api: str) -> list[JSON]:
    res = entry.response
    if res.status >= 400:
        return [
            {
                "type": "error",
                "content": error or f"HTTP {res.status}",
                "metadata": {"error": _ADAPTER_ERROR, "status": res.status, "body": res.body},
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
        chunks.append({"type": "error", "content": res.failure, "metadata": {"error": _ADAPTER_ERROR}})
    return chunks


# -- cassette -> agentskit --------------------------------------------------------------------------
def _context(call_request: JSON, body: JSON, entry: Entry, api: str) -> JSON:
    core = {
        "model",
        "messages",
        "system",
        "instructions",
        "input",
        "tools",
        "stream",
        "temperature",
        "max_tokens",
        "max_output_tokens",
    }
    context: JSON = {}
    if call_request.get("system"):
        context["systemPrompt"] = call_request["system"]
    if isinstance(body.get("temperature"), (int, float)):
        context["temperature"] = body["temperature"]
    max_tokens = body.get("max_tokens", body.get("max_output_tokens"))
    if isinstance(max_tokens, int):
        context["maxTokens"] = max_tokens
    if call_request["tools"]:
        context["tools"] = [
            {"name": t["name"], "description": t["description"], "schema": t["input_schema"]}
            for t in call_request["tools"]
        ]
    context["metadata"] = {
        "llmvcr": {
            "provider": entry.provider,
            "api": api,
            "model": call_request["model"],
            "path": entry.request.path,
            "query": [list(p) for p in entry.request.query],
            "stream": bool(body.get("stream")),
            "params": {k: v for k, v in body.items() if k not in core},
        }
    }
    return context


def to_agentskit(cassette: Cassette | str | os.PathLike[str], path: str | os.PathLike[str]) -> str:
    """Write ``cassette`` as an agentskit replay cassette (JSON) at ``path``; returns the path.

    One entry per Anthropic or OpenAI model call, in recording order; streams keep their
    per-delta granularity as ``text`` / ``reasoning`` chunks. Other entries (embeddings, token
    counts) are left out with a :class:`~llmvcr.convert.ConversionWarning`.
    """
    cassette = cassette if isinstance(cassette, Cassette) else load_cassette(cassette)
    entries: list[JSON] = []
    left_out: list[str] = []
    for position, entry in enumerate(cassette.entries):
        call = read_call(entry, position)
        if call is None:
            left_out.append(
                f"entry {position} ({entry.provider} {entry.request.method} {entry.request.path}) "
                "is not a model call; left out"
            )
            continue
        left_out.extend(f"entry {position}: {note}" for note in call.notes)
        entries.append(
            {
                "request": {
                    "messages": to_messages(call.request),
                    "context": _context(call.request, entry.request.body, entry, call.api),
                },
                "chunks": _chunks(entry, call.response, call.error, call.api),
            }
        )
    document: JSON = {"version": VERSION}
    if cassette.seed is not None:
        document["seed"] = cassette.seed
    if cassette.metadata:
        document["metadata"] = cassette.metadata
    document["entries"] = entries
    target = os.fspath(path)
    atomic_write(target, (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    if left_out:
        warnings.warn(
            f"{cassette.path or 'the cassette'} -> {target}: " + "; ".join(left_out),
            ConversionWarning,
            stacklevel=2,
        )
    return target


# -- agentskit -> cassette --------------------------------------------------------------------------
def validate(document: Any, path: str) -> None:
    """agentskit's own ``parseCassette`` rules; raises ``CassetteFormatError`` naming the field."""
    if not isinstance(document, dict):
        raise CassetteFormatError(path, "an agentskit cassette is a JSON object")
    if document.get("version") != VERSION:
        raise CassetteFormatError(
            path, f"Unsupported cassette version: {document.get('version')!r}", field="version"
        )
    if not isinstance(document.get("entries"), list):
        raise CassetteFormatError(path, "entries missing", field="entries")
    seed = document.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (str, int, float))):
        raise CassetteFormatError(path, "a string or a finite number", field="seed")
    if "metadata" in document and not isinstance(document["metadata"], dict):
        raise CassetteFormatError(path, "expected an object", field="metadata")
    for i, entry in enumerate(document["entries"]):
        request = entry.get("request") if isinstance(entry, dict) else None
        if not isinstance(request, dict) or not isinstance(request.get("messages"), list):
            raise CassetteFormatError(
                path, "request.messages must be an array", entry=i, field="request.messages"
            )
        for j, message in enumerate(request["messages"]):
            where = f"request.messages[{j}]"
            if not isinstance(message, dict) or not isinstance(message.get("content"), str):
                raise CassetteFormatError(path, "content must be a string", entry=i, field=f"{where}.content")
            if not isinstance(message.get("createdAt"), str) or not _is_iso(message["createdAt"]):
                raise CassetteFormatError(
                    path, "createdAt must be an ISO date string", entry=i, field=f"{where}.createdAt"
                )
        chunks = entry.get("chunks")
        if not isinstance(chunks, list) or not all(
            isinstance(c, dict) and isinstance(c.get("type"), str) for c in chunks
        ):
            raise CassetteFormatError(
                path, "chunks must be an array of objects with a string type", entry=i, field="chunks"
            )


def _is_iso(text: str) -> bool:
    from datetime import datetime

    try:
        datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _response(chunks: list[JSON], api: str, model: str, stream: bool, seed: str) -> Response:
    pieces: list[tuple[str, Any]] = []  # ("text"|"reasoning", [str]) runs and ("tool", call), in order
    usage: JSON | None = None
    terminal: JSON | None = None
    for chunk in chunks:
        kind = chunk["type"]
        if kind in ("text", "reasoning"):
            if pieces and pieces[-1][0] == kind:
                pieces[-1][1].append(str(chunk.get("content") or ""))
            else:
                pieces.append((kind, [str(chunk.get("content") or "")]))
        elif kind == "tool_call":
            pieces.append(("tool", chunk.get("toolCall") or {}))
        elif kind == "usage":
            usage = chunk.get("usage") or {}
        elif kind in ("done", "error"):
            terminal = chunk
            break
    meta = (terminal or {}).get("metadata") or {}
    if (
        terminal is not None
        and terminal["type"] == "error"
        and not pieces
        and isinstance(meta.get("status"), int)
    ):
        body = (
            meta.get("body")
            if meta.get("body") is not None
            else {"error": {"message": terminal.get("content")}}
        )
        return Response(meta["status"], {"content-type": "application/json"}, body=body)
    content: list[JSON] = []
    for kind, value in pieces:
        if kind == "text":
            content.append(text_block("".join(value)))
        elif kind == "reasoning":
            content.append({"type": "thinking", "thinking": "".join(value), "signature": None})
        else:
            content.append(
                {
                    "type": "tool_use",
                    "id": str(value.get("id", "")),
                    "name": str(value.get("name", "")),
                    "input": parse_arguments(value.get("args")),
                }
            )
    u = usage or {}
    neutral = {
        "message": {"role": "assistant", "content": content},
        "stop_reason": "tool_use" if any(k == "tool" for k, _ in pieces) else "end_turn",
        "usage": {
            "input_tokens": int(u.get("promptTokens") or 0),
            "output_tokens": int(u.get("completionTokens") or 0),
            "cache_read_tokens": 0,
            "cache_write_tokens": 0,
        },
        "model": model,
        "request_id": None,
    }
    done = terminal is not None and terminal["type"] == "done"
    error = terminal.get("content") if terminal is not None and terminal["type"] == "error" else None
    splits = {
        i: value if kind != "tool" else [str(value.get("args") or "{}")]
        for i, (kind, value) in enumerate(pieces)
    }
    if api == "openai-chat":
        reply = chat_body(neutral, "chatcmpl-" + seed)
        tool_calls = [value for kind, value in pieces if kind == "tool"]
        for call, wire in zip(
            tool_calls, reply["choices"][0]["message"].get("tool_calls") or [], strict=False
        ):
            wire["function"]["arguments"] = str(call.get("args") or "{}")  # the recorded text, not re-dumped
        if not stream and done:
            return Response(200, {"content-type": "application/json"}, body=reply)
        events = chat_events(
            reply,
            [p for k, v in pieces if k == "text" for p in v],
            [p for k, v in pieces if k == "reasoning" for p in v],
            with_usage=usage is not None,
            done=done,
        )
        if error is not None:
            events.append(
                {"data": {"error": {"message": error, "type": "server_error", "param": None, "code": None}}}
            )
    else:
        reply = anthropic_body(neutral, "msg_" + seed)
        if not stream and done:
            return Response(200, {"content-type": "application/json"}, body=reply)
        events = anthropic_events(reply, splits, done=done)
        if error is not None:
            events.append(
                {
                    "event": "error",
                    "data": {"type": "error", "error": {"type": "api_error", "message": error}},
                }
            )
    return Response(200, {"content-type": "text/event-stream"}, stream=events, truncated=terminal is None)


def from_agentskit(
    path: str | os.PathLike[str],
    *,
    provider: str = "anthropic",
    model: str | None = None,
    stream: bool | None = None,
) -> Cassette:
    """Read an agentskit cassette into an llmvcr cassette of Anthropic (or ``provider="openai"``) calls.

    Entries exported by :func:`to_agentskit` get back their provider, model, path, parameters and
    streaming; for others ``provider``, ``model`` (default ``"agentskit"``) and ``stream`` (default
    True: agentskit records streams) decide the wire shape. Requests are written compactly (string
    contents), so the same SDK call made the plain way matches in strict mode.
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            document = json.loads(f.read())
    except FileNotFoundError:
        raise CassetteFormatError(path, "no such agentskit cassette") from None
    except ValueError as err:
        raise CassetteFormatError(path, f"not valid JSON ({err})") from None
    validate(document, path)
    if provider not in ("anthropic", "openai"):
        raise ValueError(f"provider must be 'anthropic' or 'openai', not {provider!r}")
    seed = document.get("seed")
    cassette = Cassette(
        path="",
        seed=None if seed is None else str(seed),
        recorded_with={"llmvcr": LLMVCR_VERSION, "agentskit": "cassette v1"},
        metadata=document.get("metadata") or {},
    )
    coerced: list[str] = []
    for i, entry in enumerate(document["entries"]):
        request, chunks = entry["request"], entry["chunks"]
        context = request.get("context") if isinstance(request.get("context"), dict) else {}
        meta = (
            (context.get("metadata") or {}).get("llmvcr")
            if isinstance(context.get("metadata"), dict)
            else None
        )
        meta = meta if isinstance(meta, dict) else {}
        api = meta.get("api") or ("openai-chat" if provider == "openai" else "anthropic")
        recorded_path = str(meta.get("path") or "")
        if api not in ("anthropic", "openai-chat"):
            coerced.append(f"entry {i} was an {api!r} call")
            api = "openai-chat" if str(api).startswith("openai") else "anthropic"
            recorded_path = ""  # the recorded endpoint does not take the body written below
        system, messages = from_messages(request["messages"], context.get("systemPrompt"))
        tools = [
            {
                "name": str(t.get("name", "")),
                "description": t.get("description"),
                "input_schema": t.get("schema") or {},
            }
            for t in context.get("tools") or []
            if isinstance(t, dict)
        ]
        params = dict(meta.get("params") or {})
        if isinstance(context.get("temperature"), (int, float)):
            params["temperature"] = context["temperature"]
        streamed = bool(meta["stream"]) if "stream" in meta else (True if stream is None else stream)
        model_name = str(meta.get("model") or model or "agentskit")
        neutral = {
            "model": model_name,
            "system": system,
            "messages": messages,
            "tools": tools,
            "max_tokens": context.get("maxTokens"),
            "params": params,
        }
        if api == "anthropic":
            neutral["max_tokens"] = neutral["max_tokens"] or 1024  # required by the Messages API
            body = _without_none_descriptions(anthropic_wire(neutral, compact=True))
        else:
            body = openai_wire({**neutral, "max_tokens": 0})
            if neutral["max_tokens"] is None or "max_completion_tokens" in params:
                body.pop("max_tokens")
            else:
                body["max_tokens"] = neutral["max_tokens"]
            for tool in body.get("tools") or []:
                if tool["function"]["description"] is None:
                    del tool["function"]["description"]
        if streamed:
            body["stream"] = True
        default_path = "/v1/messages" if api == "anthropic" else "/v1/chat/completions"
        record = Request(
            "POST",
            recorded_path or default_path,
            body=body,
            query=tuple((str(k), str(v)) for k, v in meta.get("query") or []),
        )
        response = _response(chunks, api, model_name, streamed, digest(i, request, chunks))
        name = "anthropic" if api == "anthropic" else "openai"
        cassette.append(
            Entry(
                str(meta.get("provider") or name), record, response, default_request_hash(record.normalised())
            )
        )
    if coerced:
        warnings.warn(
            f"{path}: " + "; ".join(coerced) + ": llmvcr writes agentskit entries back as Anthropic Messages "
            "or Chat Completions calls only, so these replay through chat.completions.create",
            ConversionWarning,
            stacklevel=2,
        )
    return cassette


def _without_none_descriptions(body: JSON) -> JSON:
    for tool in body.get("tools") or []:
        if tool.get("description") is None:
            del tool["description"]
    return body
