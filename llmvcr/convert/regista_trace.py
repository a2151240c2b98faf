"""The regista trace format, and reading a trace back into a cassette.

``from_regista_trace`` reads a trace back into a cassette whose entries are the wire calls
regista's own Anthropic or OpenAI provider makes; ``canonical_hash`` is regista's request hash.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import warnings
from typing import Any

from ..cassette import Cassette, Entry, Request, Response
from ..cassette.schema import LLMVCR_VERSION
from ..errors import CassetteFormatError, ConversionWarning
from ..matching import default_request_hash
from .neutral import JSON, digest
from .to_wire import anthropic_body, anthropic_events, anthropic_wire, chat_body, chat_events, openai_wire

SCHEMA_VERSION = 1
EVENT_TYPES = frozenset(
    {
        "session.start",
        "llm.request",
        "llm.response",
        "tool.call",
        "permission.decision",
        "tool.result",
        "context.compaction",
        "error",
        "session.end",
    }
)
DEFAULT_CONTEXT = {"max_input_tokens": None, "keep_recent_messages": 4, "summary_max_tokens": 2048}
_CROCKFORD32 = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def canonical_hash(payload: Any) -> str:
    """regista's ``request_hash``: SHA-256 hex of its canonical JSON (sorted keys, compact, raw UTF-8)."""
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def new_ulid() -> str:
    """A 26-character ULID (48-bit millisecond time + 80 random bits), as regista names sessions."""
    value = ((int(time.time() * 1000) & ((1 << 48) - 1)) << 80) | int.from_bytes(os.urandom(10), "big")
    return "".join(_CROCKFORD32[(value >> (5 * i)) & 31] for i in range(25, -1, -1))


def read_trace(path: str | os.PathLike[str]) -> list[JSON]:
    """The events of a regista trace, checked the way ``regista.trace.Trace.load`` checks them."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        raise CassetteFormatError(path, "no such regista trace") from None
    except UnicodeDecodeError as err:
        raise CassetteFormatError(path, f"not UTF-8 text ({err})") from None
    events: list[JSON] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError as err:
            raise CassetteFormatError(
                path, f"line {number} is not JSON ({err}); is this a regista trace?"
            ) from None
        if not isinstance(event, dict) or event.get("type") not in EVENT_TYPES:
            raise CassetteFormatError(
                path,
                f"line {number}: not a regista event (type {event.get('type')!r})"
                if isinstance(event, dict)
                else f"line {number}: not a regista event",
            )
        if int(event.get("schema_version", SCHEMA_VERSION)) > SCHEMA_VERSION:
            raise CassetteFormatError(
                path,
                f"line {number}: trace schema v{event['schema_version']} is newer "
                f"than llmvcr reads (v{SCHEMA_VERSION})",
            )
        events.append(event)
    if not events or events[0]["type"] != "session.start":
        raise CassetteFormatError(path, "a regista trace begins with a session.start event")
    return events


def _entry(provider: str, request: JSON, response: JSON, stream: bool) -> Entry:
    if provider == "openai":
        body = openai_wire(request)
        path = "/v1/chat/completions"
        reply = chat_body(
            response, str(response.get("request_id") or "chatcmpl-" + digest(request, response))
        )
        headers = {"content-type": "application/json"}
    else:
        body = anthropic_wire(request)
        path = "/v1/messages"
        reply = anthropic_body(response, "msg_" + digest(request, response))
        headers = {"content-type": "application/json"}
        if response.get("request_id"):
            headers["request-id"] = str(response["request_id"])
    if stream:
        body["stream"] = True
        if provider == "openai":
            body["stream_options"] = {"include_usage": True}
        events = chat_events(reply) if provider == "openai" else anthropic_events(reply)
        recorded = Response(200, {**headers, "content-type": "text/event-stream"}, stream=events)
    else:
        recorded = Response(200, headers, body=reply)
    record = Request("POST", path, body=body)
    return Entry(provider, record, recorded, default_request_hash(record.normalised()))


def _tool_entries(events: list[JSON]) -> dict[int, list[Entry]]:
    """The tool calls a trace ran, as ``provider: tool`` entries, by how many ``llm.response`` events
    came before each ``tool.result``. A call its ``permission.decision`` denied never ran: it has no
    entry (the framework answers the model with the denial itself, as it will on replay); a result
    marked ``is_error`` is the tool's raised error."""
    calls: dict[str, JSON] = {}
    denied: set[str] = set()
    found: dict[int, list[Entry]] = {}
    responses = 0
    for event in events:
        kind, use_id = event["type"], str(event.get("tool_use_id"))
        if kind == "llm.response":
            responses += 1
        elif kind == "tool.call":
            calls[use_id] = event
        elif kind == "permission.decision" and (
            event.get("decision") == "deny" or event.get("resolution") == "denied"
        ):
            denied.add(use_id)
        elif kind == "tool.result" and use_id in calls and use_id not in denied:
            call = calls[use_id]
            arguments = call.get("input") if isinstance(call.get("input"), dict) else {}
            content = event.get("content")
            answer = (
                Response(500, body={"error": {"type": "regista:ToolError", "message": str(content)}})
                if event.get("is_error")
                else Response(200, body={"return": content})
            )
            request = Request("tool", str(call.get("name")), body={"arguments": arguments})
            entry = Entry("tool", request, answer, default_request_hash(request.normalised()))
            found.setdefault(responses, []).append(entry)
    return found


def from_regista_trace(
    path: str | os.PathLike[str], *, provider: str | None = None, stream: bool = False, tools: bool = False
) -> Cassette:
    """Read a regista trace into a cassette of the calls regista's provider made, one entry per LLM call.

    Each request is the body regista's ``AnthropicProvider`` (or, for ``openai_compat`` traces or
    ``provider="openai"``, its ``OpenAICompatProvider``) sends; each response is synthesised from
    the recorded neutral response (text, thinking, tool calls, stop reason, usage, model,
    request id), as a JSON body or, with ``stream=True``, as the event stream of a streamed call.
    Latency and cost stay in the trace; the cassette's metadata names the session. With
    ``tools=True`` each tool the session ran becomes a ``provider: tool`` entry after the model call
    that asked for it, served to the same tool decorated with ``@llmvcr.tool`` (its arguments as
    the model gave them; a call the permission policy denied never ran and has none).
    """
    events = read_trace(path)
    start = events[0]
    if provider is None:
        provider = "openai" if start.get("provider") == "openai_compat" else "anthropic"
    if provider not in ("anthropic", "openai"):
        raise ValueError(f"provider must be 'anthropic' or 'openai', not {provider!r}")
    requests = [e for e in events if e["type"] == "llm.request"]
    responses = [e for e in events if e["type"] == "llm.response"]
    found = start.get("llmvcr")  # written by to_regista_trace
    kept: JSON = found if isinstance(found, dict) else {}
    recorded_with = {str(k): str(v) for k, v in (kept.get("recorded_with") or {}).items()}
    recorded_with.setdefault("llmvcr", LLMVCR_VERSION)
    if not str(start.get("regista_version", "")).startswith("llmvcr-"):
        recorded_with["regista"] = str(start.get("regista_version", ""))
    seed = kept.get("seed")
    cassette = Cassette(
        seed=None if seed is None else str(seed),
        recorded_with=recorded_with,
        metadata={
            **(kept.get("metadata") or {}),
            "regista": {k: start.get(k) for k in ("session_id", "task", "model", "provider", "replay_of")},
        },
    )
    ran = _tool_entries(events) if tools else {}
    for entry in ran.get(0, []):
        cassette.append(entry)
    for n, (request_event, response_event) in enumerate(zip(requests, responses, strict=False), start=1):
        request, response = request_event.get("request"), response_event.get("response")
        if not isinstance(request, dict) or not isinstance(response, dict) or "message" not in response:
            raise CassetteFormatError(
                os.fspath(path),
                f"seq {request_event.get('seq')}: an llm.request/llm.response "
                "pair without a request or a response message",
            )
        request = {"system": None, "tools": [], "max_tokens": 8192, "params": {}, **request}
        cassette.append(_entry(provider, request, response, stream))
        for entry in ran.get(n, []):
            cassette.append(entry)
    if requests and not len(cassette):  # a conversion never succeeds empty
        raise CassetteFormatError(
            os.fspath(path),
            f"{len(requests)} llm.request event(s) but no llm.response to any: nothing to replay "
            "(the session ended in an error or crashed before its first model call answered)",
        )
    if len(requests) > len(responses):
        warnings.warn(
            f"{os.fspath(path)}: the last llm.request has no response (the session ended in an error "
            "or crashed); left out",
            ConversionWarning,
            stacklevel=2,
        )
    return cassette
