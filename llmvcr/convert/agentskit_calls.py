"""An agentskit entry read back as the provider call it stands for: its request messages and context
as an Anthropic Messages or Chat Completions request, its chunks as that API's answer (a body, or the
event stream that builds it). Each side is read into the neutral view, then written by the API's
own writer (``convert.to_wire``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..cassette import Entry, Request, Response
from ..matching import default_request_hash
from .agentskit_messages import from_messages
from .neutral import JSON, digest, parse_arguments, text_block
from .to_wire import anthropic_body, anthropic_events, anthropic_wire, chat_body, chat_events, openai_wire

APIS = ("anthropic", "openai-chat")  # what an agentskit entry is written back as


@dataclass(frozen=True)
class Chunks:
    """An entry's chunks in order: runs of ``text``/``reasoning`` pieces and ``tool`` calls, the
    usage chunk, and the ``done`` or ``error`` chunk that ended them (None: cut short)."""

    pieces: list[tuple[str, Any]]  # ("text"|"reasoning", [str]) and ("tool", call)
    usage: JSON | None
    terminal: JSON | None

    @property
    def done(self) -> bool:
        return self.terminal is not None and self.terminal["type"] == "done"

    @property
    def error(self) -> Any:
        return self.terminal.get("content") if self.terminal is not None and not self.done else None


def read_chunks(chunks: list[JSON]) -> Chunks:
    """The chunks up to the first ``done`` or ``error``."""
    pieces: list[tuple[str, Any]] = []
    usage: JSON | None = None
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
            return Chunks(pieces, usage, chunk)
    return Chunks(pieces, usage, None)


def _failed(read: Chunks) -> Response | None:
    """An error chunk before any answer, with the HTTP status the call failed with: that error."""
    meta = (read.terminal or {}).get("metadata") or {}
    if read.pieces or read.terminal is None or read.done or not isinstance(meta.get("status"), int):
        return None
    body = meta.get("body") if meta.get("body") is not None else {"error": {"message": read.error}}
    return Response(meta["status"], {"content-type": "application/json"}, body=body)


def _block(kind: str, value: Any) -> JSON:
    if kind == "text":
        return text_block("".join(value))
    if kind == "reasoning":
        return {"type": "thinking", "thinking": "".join(value), "signature": None}
    return {
        "type": "tool_use",
        "id": str(value.get("id", "")),
        "name": str(value.get("name", "")),
        "input": parse_arguments(value.get("args")),
    }


def neutral_reply(read: Chunks, model: str) -> JSON:
    """The chunks as the neutral view's response."""
    u = read.usage or {}
    return {
        "message": {"role": "assistant", "content": [_block(kind, value) for kind, value in read.pieces]},
        "stop_reason": "tool_use" if any(k == "tool" for k, _ in read.pieces) else "end_turn",
        "usage": {
            "input_tokens": int(u.get("promptTokens") or 0),
            "output_tokens": int(u.get("completionTokens") or 0),
            "cache_read_tokens": 0,
            "cache_write_tokens": 0,
        },
        "model": model,
        "request_id": None,
    }


def _chat_reply(read: Chunks, neutral: JSON, seed: str) -> JSON:
    reply = chat_body(neutral, "chatcmpl-" + seed)
    tool_calls = [value for kind, value in read.pieces if kind == "tool"]
    for call, wire in zip(tool_calls, reply["choices"][0]["message"].get("tool_calls") or [], strict=False):
        wire["function"]["arguments"] = str(call.get("args") or "{}")  # the recorded text, not re-dumped
    return reply


def _chat_events(read: Chunks, reply: JSON) -> list[JSON]:
    texts = [p for k, v in read.pieces if k == "text" for p in v]
    reasoning = [p for k, v in read.pieces if k == "reasoning" for p in v]
    events = chat_events(reply, texts, reasoning, with_usage=read.usage is not None, done=read.done)
    if read.error is not None:
        error = {"message": read.error, "type": "server_error", "param": None, "code": None}
        events.append({"data": {"error": error}})
    return events


def _anthropic_events(read: Chunks, reply: JSON) -> list[JSON]:
    splits = {
        i: value if kind != "tool" else [str(value.get("args") or "{}")]
        for i, (kind, value) in enumerate(read.pieces)
    }
    events = anthropic_events(reply, splits, done=read.done)
    if read.error is not None:
        error = {"type": "api_error", "message": read.error}
        events.append({"event": "error", "data": {"type": "error", "error": error}})
    return events


def response_of(chunks: list[JSON], api: str, model: str, stream: bool, seed: str) -> Response:
    """The recorded answer the chunks stand for, in ``api``'s shape: an error, a body, or a stream
    (cut short, ``truncated``, when no ``done`` or ``error`` chunk ended it)."""
    read = read_chunks(chunks)
    failed = _failed(read)
    if failed is not None:
        return failed
    neutral = neutral_reply(read, model)
    if api == "openai-chat":
        reply, stream_of = _chat_reply(read, neutral, seed), _chat_events
    else:
        reply, stream_of = anthropic_body(neutral, "msg_" + seed), _anthropic_events
    if not stream and read.done:
        return Response(200, {"content-type": "application/json"}, body=reply)
    events = stream_of(read, reply)
    return Response(
        200, {"content-type": "text/event-stream"}, stream=events, truncated=read.terminal is None
    )


def _written_as(meta: JSON, provider: str, i: int) -> tuple[str, str, str | None]:
    """``(api, recorded path, note)``: the API the entry is written back as; a call of another API
    (the Responses API) is written as the nearest one, on its default path, with a note saying so."""
    api = meta.get("api") or ("openai-chat" if provider == "openai" else "anthropic")
    if api in APIS:
        return api, str(meta.get("path") or ""), None
    nearest = "openai-chat" if str(api).startswith("openai") else "anthropic"
    return nearest, "", f"entry {i} was an {api!r} call"


def neutral_request(request: JSON, meta: JSON, model: str) -> JSON:
    """An agentskit request (messages and context) as the neutral view's request."""
    context: JSON = request["context"] if isinstance(request.get("context"), dict) else {}
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
    max_tokens = context.get("maxTokens")
    return {
        "model": model,
        "system": system,
        "messages": messages,
        "tools": tools,
        "max_tokens": max_tokens,
        "params": params,
    }


def _body(neutral: JSON, api: str) -> JSON:
    """The request body, written compactly (string contents) so the SDK's own call matches strictly."""
    if api == "anthropic":
        # max_tokens is required by the Messages API
        body = anthropic_wire({**neutral, "max_tokens": neutral["max_tokens"] or 1024}, compact=True)
        for tool in body.get("tools") or []:
            if tool.get("description") is None:
                del tool["description"]
        return body
    body = openai_wire({**neutral, "max_tokens": 0})
    if neutral["max_tokens"] is None or "max_completion_tokens" in neutral["params"]:
        body.pop("max_tokens")
    else:
        body["max_tokens"] = neutral["max_tokens"]
    for tool in body.get("tools") or []:
        if tool["function"]["description"] is None:
            del tool["function"]["description"]
    return body


def entry_of(
    i: int, entry: JSON, provider: str, model: str | None, stream: bool | None
) -> tuple[Entry, str | None]:
    """The ``i``-th agentskit entry as an llmvcr entry, and a note when its API had to change.

    What ``to_agentskit`` kept in ``context.metadata.llmvcr`` (provider, API, model, path, query,
    parameters, streaming) wins; otherwise ``provider``, ``model`` and ``stream`` decide."""
    request, chunks = entry["request"], entry["chunks"]
    context = request.get("context") if isinstance(request.get("context"), dict) else {}
    meta = (
        (context.get("metadata") or {}).get("llmvcr") if isinstance(context.get("metadata"), dict) else None
    )
    meta = meta if isinstance(meta, dict) else {}
    api, recorded_path, note = _written_as(meta, provider, i)
    streamed = bool(meta["stream"]) if "stream" in meta else (True if stream is None else stream)
    model_name = str(meta.get("model") or model or "agentskit")
    body = _body(neutral_request(request, meta, model_name), api)
    if streamed:
        body["stream"] = True
    default_path = "/v1/messages" if api == "anthropic" else "/v1/chat/completions"
    query = tuple((str(k), str(v)) for k, v in meta.get("query") or [])
    record = Request("POST", recorded_path or default_path, body=body, query=query)
    response = response_of(chunks, api, model_name, streamed, digest(i, request, chunks))
    name = str(meta.get("provider") or ("anthropic" if api == "anthropic" else "openai"))
    return Entry(name, record, response, default_request_hash(record.normalised())), note
