"""One recorded call as the page shows it: the neutral conversation, tokens, dollars and timing.

Each call keeps only what it adds to the call it continues (its ``parent``): an agent session of 40
turns is one growing conversation in the page, not 40 copies of it. Images, which the neutral view
has no block for, are taken from the request as it was sent and shown as thumbnails.
"""

from __future__ import annotations

import json
from typing import Any

from ..cassette import Entry
from ..convert import JSON, api_stop_reason, read_call
from ..convert.tool_calls import tool_call_of
from ..freshness.usage import usage_of
from ..wire import error_message, lookup, model_of, stream_finished

PREVIEW = 300  # characters of a request that is not a model call (embeddings, token counts)
_LISTS = ("messages", "input", "contents")  # where each API keeps the conversation it sends


def image_of(part: Any) -> JSON | None:
    """An image part of a request as an ``image`` block (``data`` + ``media_type``, or ``url``),
    in any of the shapes Anthropic, OpenAI (chat and responses) and Gemini send."""
    if not isinstance(part, dict):
        return None
    kind = part.get("type")
    if kind == "image" and isinstance(part.get("source"), dict):
        source = part["source"]
        if isinstance(source.get("data"), str):
            return {"type": "image", "media_type": str(source.get("media_type", "")), "data": source["data"]}
        if isinstance(source.get("url"), str):
            return {"type": "image", "url": source["url"]}
    if kind in ("image_url", "input_image"):
        url = part.get("image_url")
        url = url.get("url") if isinstance(url, dict) else url
        if isinstance(url, str):
            return {"type": "image", "url": url}
    inline = part.get("inline_data", part.get("inlineData"))
    if isinstance(inline, dict) and isinstance(inline.get("data"), str):
        media = inline.get("mime_type", inline.get("mimeType", ""))
        if str(media).startswith("image/"):
            return {"type": "image", "media_type": str(media), "data": inline["data"]}
    return None


def images_in(node: Any, found: list[JSON] | None = None) -> list[JSON]:
    """Every image anywhere inside a raw message (a tool result may hold one too)."""
    found = [] if found is None else found
    image = image_of(node)
    if image is not None:
        found.append(image)
    elif isinstance(node, dict):
        for value in node.values():
            images_in(value, found)
    elif isinstance(node, list):
        for value in node:
            images_in(value, found)
    return found


def raw_messages(body: Any) -> list[Any]:
    """The conversation list of a request body as sent (messages, input or contents)."""
    if isinstance(body, dict):
        for name in _LISTS:
            if isinstance(body.get(name), list):
                return list(body[name])
    return []


def _common_prefix(a: list[Any], b: list[Any]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class Threads:
    """Which earlier call each call continues, and how much of its conversation it keeps."""

    def __init__(self) -> None:
        self.histories: dict[int, list[JSON]] = {}  # position -> messages sent, then the reply
        self.systems: dict[int, tuple[str, list[Any]]] = {}  # position -> (system prompt, tool names)
        self.last: int | None = None

    def place(self, position: int, messages: list[JSON], hint: int | None) -> tuple[int | None, int]:
        """``(parent, kept)``: the call whose conversation (request and reply) shares the longest
        start with ``messages``, among the one the linear layout names and the call before."""
        best: tuple[int | None, int] = (None, 0)
        for candidate in (hint, self.last):
            history = self.histories.get(candidate) if candidate is not None else None
            if history is None:
                continue
            kept = _common_prefix(history, messages)
            if kept > best[1]:
                best = (candidate, kept)
        return best

    def add(self, position: int, history: list[JSON]) -> None:
        self.histories[position] = history
        self.last = position


def call_data(entry: Entry, position: int, threads: Threads, hint: int | None) -> JSON:
    """What the page holds of one entry (its raw form is kept apart, once, by the caller)."""
    res = entry.response
    wire_format = lookup(entry.provider)
    streams = wire_format.answers_with_stream(res) if wire_format else res.stream is not None
    last = res.stream[-1].get("t") if res.stream else None
    tokens = usage_of(entry)
    data: JSON = {
        "i": position,
        "provider": entry.provider,
        "method": entry.request.method,
        "path": entry.request.path,
        "model": model_of(entry.provider, entry.request),
        "status": res.status,
        "stream": bool(streams and res.stream is not None),
        "events": len(res.stream) if res.stream is not None else 0,
        "ms": last if isinstance(last, (int, float)) and not isinstance(last, bool) else None,
        "truncated": bool(res.truncated and not stream_finished(res.stream or [], entry.provider)),
        "failure": res.failure,
        "in": tokens[0],
        "out": tokens[1],
        "usd": tokens.usd,
    }
    tool = tool_call_of(entry)
    if tool is not None:  # linked to the tool_use that asked for it by the caller, which sees them all
        data["tool"] = {
            "name": tool.name,
            "arguments": tool.arguments,
            "returned": tool.returned,
            "raised": tool.raised,
            "yielded": tool.yielded,
        }
        return data
    call = read_call(entry, position)
    if call is None:
        body = entry.request.body
        summary = json.dumps(body.get("input", body) if isinstance(body, dict) else body, ensure_ascii=False)
        data["preview"] = summary[:PREVIEW] + ("…" if len(summary) > PREVIEW else "")
        if res.status >= 400:
            data["error"] = error_message(entry.provider, res.body)
        return data
    messages: list[JSON] = call.request["messages"]
    parent, kept = threads.place(position, messages, hint)
    previous = threads.systems.get(parent) if parent is not None else None
    system, tools = call.request["system"], [t.get("name") for t in call.request["tools"]]
    data.update(api=call.api, parent=parent, kept=kept, notes=call.notes)
    if parent is None or previous != (system, tools):
        data["system"], data["tools"] = system, tools
    new = [dict(m) for m in messages[kept:]]
    sent = raw_messages(entry.request.body)
    if len(sent) == len(messages):  # one raw message per neutral one: images go where they were
        for message, raw in zip(new, sent[kept:], strict=True):
            images = images_in(raw)
            if images:
                message["content"] = [*message["content"], *images]
    else:
        data["images"] = [
            image for raw in sent[kept if parent is not None else 0 :] for image in images_in(raw)
        ]
    data["new"] = new
    threads.systems[position] = (system, tools)
    if call.response is None:
        data["error"], data["history"] = call.error, len(messages)
        threads.add(position, list(messages))
        return data
    reply = call.response["message"]
    stop = api_stop_reason(call.api, call.response["stop_reason"])
    data["reply"] = {"content": reply["content"], "stop": stop}
    if call.error:  # a stream that ended in an error event after some of the answer
        data["error"] = call.error
    data["history"] = len(messages) + 1
    threads.add(position, [*messages, reply])
    return data
