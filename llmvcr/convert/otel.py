"""OpenTelemetry GenAI traces: an OTLP JSON export of a production session, read into a cassette.

``from_otel`` reads the file ``opentelemetry-exporter-otlp`` or a collector's file exporter
writes (one ``{"resourceSpans": ...}`` / ``{"resourceLogs": ...}`` document, or one per line) and
builds one entry per model call, in start-time order. Requests and responses are rebuilt from the
GenAI semantic-convention attributes (``gen_ai.input.messages``, ``gen_ai.output.messages``,
``gen_ai.system_instructions``, ``gen_ai.tool.definitions``, ``gen_ai.request.*``,
``gen_ai.response.*``, ``gen_ai.usage.*``), read from the span itself or from the log records and
span events that carry them. Two spans of one call (an SDK's own span and an instrumentation's,
both naming the same ``gen_ai.response.id``) are merged. A streamed call becomes an event stream
paced by the span's timing. The trace and span ids go to ``cassette.metadata["otel"]``.

>>> cassette = llmvcr.from_otel("trace.jsonl")
>>> client = llmvcr.create_replay_adapter(cassette, anthropic.Anthropic(), mode="sequential")

A trace holds what the instrumentation chose to record; what it lacks is warned per entry with
:class:`~llmvcr.convert.ConversionWarning`, and a trace without message content is an error.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from ..cassette import Cassette, Entry, Request, Response
from ..errors import CassetteFormatError, ConversionWarning
from ..matching import default_request_hash
from ..schema import LLMVCR_VERSION
from .neutral import JSON, digest, parse_arguments, text_block, tool_use_block, usage
from .otlp import genai_calls, read_export, source_name
from .wire import anthropic_body, anthropic_events, chat_body, chat_events

__all__ = ["CONTENT_SWITCHES", "from_otel"]

CONTENT_SWITCHES = (
    "opentelemetry-instrumentation-openai-v2 2.4 and later: "
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only (or event_only, span_and_event; "
    "=true is refused there and means no content); before 2.4: =true",
    "opentelemetry-instrumentation-anthropic: TRACELOOP_TRACE_CONTENT=true (its default; "
    "content is off when it is false)",
)
_FINISH = {  # semantic-convention finish reasons -> the neutral stop reason
    "stop": "end_turn",
    "end_turn": "end_turn",
    "tool_call": "tool_use",
    "tool_calls": "tool_use",
    "tool_use": "tool_use",
    "length": "max_tokens",
    "max_tokens": "max_tokens",
    "content_filter": "refusal",
    "refusal": "refusal",
    "stop_sequence": "stop_sequence",
}
_ANTHROPIC_PARAMS = {
    "gen_ai.request.temperature": "temperature",
    "gen_ai.request.top_p": "top_p",
    "gen_ai.request.top_k": "top_k",
    "gen_ai.request.stop_sequences": "stop_sequences",
}
_OPENAI_PARAMS = {
    "gen_ai.request.temperature": "temperature",
    "gen_ai.request.top_p": "top_p",
    "gen_ai.request.seed": "seed",
    "gen_ai.request.stop_sequences": "stop",
    "gen_ai.request.presence_penalty": "presence_penalty",
    "gen_ai.request.frequency_penalty": "frequency_penalty",
    "gen_ai.request.choice.count": "n",
}


# -- one model call --------------------------------------------------------------------------------
def _json_attr(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return [{"type": "text", "content": value}]
    return value


def _parts(message: Any) -> list[JSON]:
    parts = message.get("parts") if isinstance(message, Mapping) else None
    return [p for p in parts or [] if isinstance(p, dict)]


def _text(parts: list[JSON]) -> str:
    return "".join(str(p.get("content", "")) for p in parts if p.get("type") == "text")


def _neutral_blocks(parts: list[JSON], notes: list[str], where: str) -> list[JSON]:
    """Semantic-convention parts as neutral blocks (text, thinking, tool_use, tool_result)."""
    blocks: list[JSON] = []
    for part in parts:
        kind = part.get("type")
        if kind == "text":
            blocks.append(text_block(str(part.get("content", ""))))
        elif kind == "reasoning":
            notes.append(f"{where}: a reasoning part has no signature in the trace")
            blocks.append({"type": "thinking", "thinking": str(part.get("content", "")), "signature": None})
        elif kind == "tool_call":
            blocks.append(
                tool_use_block(
                    str(part.get("id", "")), str(part.get("name", "")), parse_arguments(part.get("arguments"))
                )
            )
        elif kind == "tool_call_response":
            response = part.get("response")
            blocks.append(
                {
                    "type": "tool_result",
                    "tool_use_id": str(part.get("id", "")),
                    "content": response if isinstance(response, str) else json.dumps(response),
                    "is_error": False,
                }
            )
        else:
            notes.append(f"{where}: a {kind!r} part is not kept by the converter; dropped")
    return blocks


def _anthropic_message(role: str, blocks: list[JSON]) -> JSON:
    if role == "tool":
        role = "user"
    wire = [{k: v for k, v in b.items() if v is not None and k != "is_error"} for b in blocks]
    if len(wire) == 1 and wire[0]["type"] == "text":
        return {"role": role, "content": wire[0]["text"]}  # one text part: the SDK's string shorthand
    return {"role": role, "content": wire}


def _openai_messages(role: str, blocks: list[JSON]) -> list[JSON]:
    text = "".join(b["text"] for b in blocks if b["type"] == "text")
    if role == "tool" or any(b["type"] == "tool_result" for b in blocks):
        return [
            {"role": "tool", "tool_call_id": b["tool_use_id"], "content": b["content"]}
            for b in blocks
            if b["type"] == "tool_result"
        ]
    if role != "assistant":
        return [{"role": role, "content": text}]
    message: JSON = {"role": "assistant", "content": text or None}
    calls = [b for b in blocks if b["type"] == "tool_use"]
    if calls:
        message["tool_calls"] = [
            {
                "id": b["id"],
                "type": "function",
                "function": {"name": b["name"], "arguments": json.dumps(b["input"])},
            }
            for b in calls
        ]
    return [message]


def _tools(definitions: Any, provider: str) -> list[JSON]:
    tools = []
    for d in definitions if isinstance(definitions, list) else []:
        if not isinstance(d, Mapping):
            continue
        fn: Any = d.get("function") if isinstance(d.get("function"), Mapping) else d
        schema = fn.get("input_schema", fn.get("parameters", {}))
        if provider == "anthropic":
            tool: JSON = {"name": fn.get("name"), "input_schema": schema}
            if fn.get("description"):
                tool["description"] = fn["description"]
        else:
            tool = {"type": "function", "function": {"name": fn.get("name"), "parameters": schema}}
            if fn.get("description"):
                tool["function"]["description"] = fn["description"]
        tools.append(tool)
    return tools


def _request(provider: str, attrs: JSON, notes: list[str]) -> JSON:
    inputs = _json_attr(attrs.get("gen_ai.input.messages")) or []
    system = _text(
        [p for p in _json_attr(attrs.get("gen_ai.system_instructions")) or [] if isinstance(p, dict)]
    )
    body: JSON = {"model": attrs.get("gen_ai.request.model", "")}
    tools = _tools(_json_attr(attrs.get("gen_ai.tool.definitions")), provider)
    uses_tools = any(p.get("type") in ("tool_call", "tool_call_response") for m in inputs for p in _parts(m))
    if not tools and (uses_tools or "tool_call" in json.dumps(attrs.get("gen_ai.output.messages") or "")):
        notes.append(
            "the trace does not hold the tool definitions this call sent: strict replay differs at "
            "body.tools (replay with mode='sequential', or ignore=['tools'])"
        )
    if isinstance(attrs.get("gen_ai.request.max_tokens"), int):
        body["max_tokens"] = attrs["gen_ai.request.max_tokens"]
    if provider == "anthropic":
        messages = [
            _anthropic_message(str(m.get("role")), _neutral_blocks(_parts(m), notes, f"messages[{i}]"))
            for i, m in enumerate(inputs)
            if m.get("role") != "system"
        ]
        system = system or "\n".join(_text(_parts(m)) for m in inputs if m.get("role") == "system")
        body["messages"] = messages
        if "max_tokens" not in body:
            notes.append("the trace does not hold max_tokens, which Anthropic requires; 1024 assumed")
            body["max_tokens"] = 1024
        if system:
            body["system"] = system
        params = _ANTHROPIC_PARAMS
    else:
        body["messages"] = [
            wire
            for i, m in enumerate(inputs)
            for wire in _openai_messages(
                str(m.get("role")), _neutral_blocks(_parts(m), notes, f"messages[{i}]")
            )
        ]
        if system:
            body["messages"].insert(0, {"role": "system", "content": system})
        params = _OPENAI_PARAMS
    if tools:
        body["tools"] = tools
    body.update({key: attrs[attr] for attr, key in params.items() if attr in attrs})
    if attrs.get("gen_ai.request.stream") or attrs.get("gen_ai.is_streaming"):
        body["stream"] = True
        if provider == "openai":
            body["stream_options"] = {"include_usage": True}
            notes.append("stream_options is not in the trace; include_usage assumed")
    return body


def _neutral_response(provider: str, attrs: JSON, notes: list[str]) -> JSON:
    outputs = _json_attr(attrs.get("gen_ai.output.messages")) or []
    if not outputs:
        notes.append("the trace holds no output message for this call; the reply is empty")
    parts = [p for m in outputs[:1] for p in _parts(m)]
    if len(outputs) > 1:
        notes.append(f"{len(outputs)} choices in the trace; the first is kept")
    reasons = attrs.get("gen_ai.response.finish_reasons") or []
    finish = (
        attrs.get("anthropic.message.stop_reason")
        or (outputs[0].get("finish_reason") if outputs and isinstance(outputs[0], Mapping) else None)
        or (reasons[0] if reasons else None)
    )
    return {
        "message": {"role": "assistant", "content": _neutral_blocks(parts, notes, "output")},
        "stop_reason": _FINISH.get(str(finish), "other"),
        "usage": usage(
            attrs.get("gen_ai.usage.input_tokens"),
            attrs.get("gen_ai.usage.output_tokens"),
            attrs.get("gen_ai.usage.cache_read.input_tokens"),
            attrs.get(
                "gen_ai.usage.cache_creation.input_tokens", attrs.get("gen_ai.usage.cache_write.input_tokens")
            ),
        ),
        "model": str(attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model") or ""),
    }


def _paced(events: list[JSON], span: JSON, attrs: JSON) -> list[JSON]:
    """Events spread over the span: the first at time-to-first-chunk (when known), the last at its end."""
    duration = (int(span.get("endTimeUnixNano") or 0) - int(span.get("startTimeUnixNano") or 0)) / 1e6
    first = attrs.get("gen_ai.response.time_to_first_chunk")
    start = float(first) * 1000 if isinstance(first, (int, float)) else 0.0
    end = max(duration, start)
    step = (end - start) / max(len(events) - 1, 1)
    return [{**e, "t": round(start + i * step, 1)} for i, e in enumerate(events)]


def _entry(call: JSON, provider: str, notes: list[str]) -> Entry:
    attrs = call["attributes"]
    body = _request(provider, attrs, notes)
    if (call.get("status") or {}).get("code") == 2:
        status = attrs.get("http.response.status_code")
        status = status if isinstance(status, int) and status >= 400 else 500
        error = {
            "type": str(attrs.get("error.type") or "api_error"),
            "message": (call.get("status") or {}).get("message") or str(attrs.get("error.type") or "error"),
        }
        notes.append(
            f"the call failed ({status}); the trace holds no error body, one is made from its status"
        )
        reply = {"type": "error", "error": error}  # both SDKs read the error from body["error"]
        response = Response(status, {"content-type": "application/json"}, body=reply)
    else:
        neutral = _neutral_response(provider, attrs, notes)
        rid = str(attrs.get("gen_ai.response.id") or "")
        headers = {"content-type": "application/json"}
        if provider == "anthropic":
            answer = anthropic_body(neutral, rid or "msg_" + digest(body, neutral))
            if attrs.get("anthropic.request.id"):
                headers["request-id"] = str(attrs["anthropic.request.id"])
        else:
            answer = chat_body(neutral, rid or "chatcmpl-" + digest(body, neutral))
        if body.get("stream"):
            events = anthropic_events(answer) if provider == "anthropic" else chat_events(answer)
            response = Response(
                200, {**headers, "content-type": "text/event-stream"}, stream=_paced(events, call, attrs)
            )
        else:
            response = Response(200, headers, body=answer)
    path = "/v1/messages" if provider == "anthropic" else "/v1/chat/completions"
    request = Request("POST", path, body=body)
    return Entry(provider, request, response, default_request_hash(request.normalised()))


def _iso(nanos: Any) -> str:
    return datetime.fromtimestamp(int(nanos or 0) / 1e9, timezone.utc).isoformat(timespec="milliseconds")


def from_otel(
    source: str | os.PathLike[str] | Mapping[str, Any] | list[Any],
    *,
    trace_id: str | None = None,
    stream: bool | None = None,
) -> Cassette:
    """An OTLP JSON export of GenAI spans as a cassette: one entry per model call, in start-time order.

    ``source`` is a file (one JSON document, or JSON lines) or the parsed document(s). With several
    traces in the file, ``trace_id`` picks one session; without it every call is kept, in order, and
    a ``ConversionWarning`` says so. ``stream=True`` (or False) writes every call as streamed (or
    not), for traces that do not say (openai-v2's; the anthropic SDK's own span does say). Replay
    with ``mode="sequential"`` unless every request was rebuilt exactly (see the warnings): a trace
    does not hold every byte the SDK sent.
    """
    where = source_name(source)
    spans, logs = read_export(source)
    calls = genai_calls(spans, logs)
    if trace_id is not None:
        calls = [c for c in calls if c.get("traceId") == trace_id]
    if not calls:
        picked = f" in trace {trace_id}" if trace_id else ""
        raise CassetteFormatError(where, f"no GenAI chat spans{picked} (gen_ai.operation.name 'chat')")
    bare = [c for c in calls if "gen_ai.input.messages" not in c["attributes"]]
    if bare:
        raise CassetteFormatError(
            where,
            f"{len(bare)} of {len(calls)} model calls were traced without message content (span "
            f"{bare[0].get('spanId')}), so there is nothing to replay. Turn content capture on in the "
            "service and export the session again: " + "; ".join(CONTENT_SWITCHES),
        )
    traces = list(dict.fromkeys(str(c.get("traceId")) for c in calls))
    if len(traces) > 1:
        warnings.warn(
            f"{where}: {len(traces)} traces ({', '.join(traces)}) merged in start-time order; "
            "pass trace_id= to keep one session",
            ConversionWarning,
            stacklevel=2,
        )
    cassette = Cassette(recorded_with={"llmvcr": LLMVCR_VERSION})
    described = []
    for call in calls:
        attrs = call["attributes"]
        provider = str(attrs.get("gen_ai.provider.name") or attrs.get("gen_ai.system"))
        provider = "openai" if "openai" in provider else provider
        if provider not in ("anthropic", "openai"):
            warnings.warn(
                f"{where}: span {call.get('spanId')}: provider {provider!r} is not supported; left out",
                ConversionWarning,
                stacklevel=2,
            )
            continue
        notes: list[str] = []
        if stream is not None:
            attrs["gen_ai.request.stream"] = stream
        elif not {"gen_ai.request.stream", "gen_ai.is_streaming", "anthropic.request.id"} & attrs.keys():
            # the anthropic SDK's own span (the one with anthropic.request.id) marks streamed calls
            notes.append(
                "the trace does not say whether this call was streamed; written as a plain call "
                "(from_otel(..., stream=True) if the service streams)"
            )
        cassette.append(_entry(call, provider, notes))
        start, end = int(call.get("startTimeUnixNano") or 0), int(call.get("endTimeUnixNano") or 0)
        described.append(
            {
                "trace_id": call.get("traceId"),
                "span_id": call.get("spanId"),
                "spans": call["merged"],
                "name": call.get("name"),
                "start": _iso(start),
                "duration_ms": round((end - start) / 1e6, 1),
            }
        )
        for note in notes:
            warnings.warn(
                f"{where}: entry {len(cassette) - 1} (span {call.get('spanId')}): {note}",
                ConversionWarning,
                stacklevel=2,
            )
    cassette.metadata["otel"] = {"trace_ids": traces, "calls": described}
    return cassette
