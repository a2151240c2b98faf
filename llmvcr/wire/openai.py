"""OpenAI's APIs on the wire (Azure OpenAI included): Chat Completions, Responses, embeddings.

``"stream": true`` in the body asks for server-sent events. Chat Completions sends unnamed
``chat.completion.chunk`` events, a usage-only chunk when ``stream_options.include_usage`` is set,
then ``data: [DONE]``; the SDK stops reading there, before the connection's bytes run out. The
Responses API sends named events whose ``type`` repeats the name, from ``response.created`` to
``response.completed`` (or ``.incomplete`` / ``.failed``). An error is ``{"error": {"message",
"type", "code"}}`` with its HTTP status.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..cassette.entries import Request
from .format import ApiKey, WireFormat

TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed", "error"})

JSON = dict[str, Any]


def asks_stream(request: Request) -> bool:
    """The body says ``"stream": true``."""
    return isinstance(request.body, dict) and request.body.get("stream") is True


def plain_request(request: Request) -> Request:
    """The same call without ``stream`` and ``stream_options``."""
    if not isinstance(request.body, dict) or not {"stream", "stream_options"} & request.body.keys():
        return request
    body = {k: v for k, v in request.body.items() if k not in ("stream", "stream_options")}
    return Request(request.method, request.path, body, request.query, request.headers)


def finished(events: list[JSON]) -> bool:
    """The stream reached ``[DONE]`` (chat) or a final ``response.*`` event (Responses)."""
    for event in reversed(events):
        data = event.get("data")
        if data == "[DONE]" or (isinstance(data, dict) and data.get("type") in TERMINAL):
            return True
    return False


def events_of(request: Request, body: Any) -> list[JSON]:
    """The event stream the API sends for a final ``body``: Responses events on ``/responses``,
    chat chunks otherwise (with the usage chunk when the request asks for it)."""
    body = body if isinstance(body, dict) else {}
    if request.path.rstrip("/").endswith("/responses"):
        return response_events(body)
    options = request.body.get("stream_options") if isinstance(request.body, dict) else None
    usage = isinstance(options, dict) and bool(options.get("include_usage"))
    return chat_events(body, with_usage=usage)


def chat_events(
    body: JSON,
    pieces: list[str] | None = None,
    reasoning: list[str] | None = None,
    *,
    with_usage: bool = True,
    done: bool = True,
) -> list[JSON]:
    """A Chat Completions body as the chunk stream that builds it, ending in ``[DONE]``."""
    choices = body.get("choices") or [{}]
    message = choices[0].get("message") or {}
    base = {
        "id": body.get("id", ""),
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
    if reasoning is None:
        reasoning = [message["reasoning_content"]] if message.get("reasoning_content") else []
    events += [chunk({"reasoning_content": p}) for p in reasoning]
    if pieces is None:
        pieces = [message["content"]] if message.get("content") else []
    events += [chunk({"content": p}) for p in pieces]
    for index, call in enumerate(message.get("tool_calls") or []):
        events.append(chunk({"tool_calls": [{"index": index, **call}]}))
    if done:
        events.append(chunk({}, choices[0].get("finish_reason") or "stop"))
        if with_usage and body.get("usage"):
            events.append({"data": {**base, "choices": [], "usage": body["usage"]}})
        events.append({"data": "[DONE]"})
    return events


def response_events(body: JSON) -> list[JSON]:
    """A Responses API body as the named events that build it, ``response.created`` to ``.completed``."""
    out: list[JSON] = []

    def add(kind: str, **data: Any) -> None:
        out.append({"event": kind, "data": {"type": kind, "sequence_number": len(out), **data}})

    opening = {**body, "status": "in_progress", "output": [], "usage": None}
    add("response.created", response=opening)
    add("response.in_progress", response=opening)
    for index, item in enumerate(body.get("output") or []):
        kind = item.get("type")
        item_id = item.get("id", "")
        if kind == "message":
            add("response.output_item.added", output_index=index, item={**item, "content": []})
            for part_index, part in enumerate(item.get("content") or []):
                where = {"item_id": item_id, "output_index": index, "content_index": part_index}
                if part.get("type") != "output_text":
                    add("response.content_part.added", **where, part=part)
                    add("response.content_part.done", **where, part=part)
                    continue
                empty = {**part, "text": "", "annotations": []}
                add("response.content_part.added", **where, part=empty)
                add("response.output_text.delta", **where, delta=part.get("text", ""), logprobs=[])
                add("response.output_text.done", **where, text=part.get("text", ""), logprobs=[])
                add("response.content_part.done", **where, part=part)
        elif kind == "function_call":
            arguments = item.get("arguments")
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments or {})
            add("response.output_item.added", output_index=index, item={**item, "arguments": ""})
            where = {"item_id": item_id, "output_index": index}
            add("response.function_call_arguments.delta", **where, delta=arguments)
            add("response.function_call_arguments.done", **where, arguments=arguments)
        else:
            add("response.output_item.added", output_index=index, item=item)
        add("response.output_item.done", output_index=index, item=item)
    final = {
        "completed": "response.completed",
        "incomplete": "response.incomplete",
        "failed": "response.failed",
    }
    add(final.get(str(body.get("status")), "response.completed"), response=body)
    return out


def error_body(status: int, kind: str, message: str) -> JSON:
    """An error as the API sends it (most other APIs and clients read this shape too)."""
    return {"error": {"message": message, "type": kind, "param": None, "code": kind}}


def usage_flavors(path: str) -> tuple[str, ...]:
    """The API whose usage record a call's answer holds, by its path."""
    if path.endswith("/embeddings"):
        return ("embeddings",)
    return ("responses",) if "/responses" in path else ("chat",)


FORMAT = WireFormat(
    name="openai",
    hosts=("openai.com", "openai.azure.com"),
    api_host="api.openai.com",
    agents=("openai", "asyncopenai", "azureopenai"),
    marker_headers=("openai-beta",),
    meaning_headers=("openai-beta",),  # kept in the request: it changes its meaning
    credential_headers=("openai-organization", "openai-project"),
    sdk_headers={},
    endpoints=re.compile(r"/(?:chat/completions|completions|responses|embeddings)(?:/|$)"),
    seam_paths=(("/chat/completions", ""), ("/responses", ""), ("/embeddings", "")),
    asks_stream=asks_stream,
    plain_request=plain_request,
    events_of=events_of,
    finished=finished,
    error_body=error_body,
    usage_flavors=usage_flavors,
    api_key=ApiKey("OPENAI_API_KEY", "OPENAI_BASE_URL", "authorization"),
)
