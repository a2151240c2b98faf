"""OpenTelemetry GenAI traces: an OTLP JSON export of a production session, read into a cassette.

``from_otel`` reads the file ``opentelemetry-exporter-otlp`` or a collector's file exporter
writes (one ``{"resourceSpans": ...}`` / ``{"resourceLogs": ...}`` document, or one per line) and
builds one entry per model call (Anthropic, OpenAI Chat Completions, Gemini), in start-time order.
Requests and responses are rebuilt from the GenAI semantic-convention attributes
(``gen_ai.input.messages``, ``gen_ai.output.messages``, ``gen_ai.system_instructions``,
``gen_ai.tool.definitions``, ``gen_ai.request.*``, ``gen_ai.response.*``, ``gen_ai.usage.*``), read
from the span itself or from the log records and span events that carry them; the other dialects
real instrumentations write (traceloop's ``gen_ai.prompt.N.*``, OpenInference's
``llm.input_messages.N.*``, Logfire's streamed calls) are read into those first
(:mod:`~llmvcr.convert.otel_dialects`). Two spans of one call (an SDK's own span and an
instrumentation's, both naming the same ``gen_ai.response.id``) are merged. A call the trace says
was streamed becomes an event stream paced by the span's timing, one it says was not a plain body,
and one it says nothing about (openai-v2 records nothing) the plain call marked ``as_asked``:
replay serves it plain or streamed, as the live call asks, the stream built from the body.
The trace and span ids go to ``cassette.metadata["otel"]``.

>>> cassette = llmvcr.from_otel("trace.jsonl")
>>> client = llmvcr.create_replay_adapter(cassette, anthropic.Anthropic(), mode="sequential")

A trace holds what the instrumentation chose to record; what it lacks is warned per entry with
:class:`~llmvcr.convert.ConversionWarning`. A trace without message content, or one that yields no
entry at all, is a :class:`~llmvcr.CassetteFormatError` naming what was seen and what to do.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from ..cassette import Cassette, Entry, Request, Response
from ..cassette.schema import LLMVCR_VERSION
from ..errors import CassetteFormatError, ConversionWarning
from ..matching import default_request_hash
from ..wire.google import events_of as gemini_events
from .neutral import JSON, digest
from .otel_dialects import STREAMED, capture_switch
from .otel_gemini import gemini_path, gemini_response
from .otel_messages import json_attr, neutral_response, request_body
from .otel_tools import tool_entry, tool_spans
from .otlp import genai_calls, read_export, scopes_of, source_name
from .to_wire import anthropic_body, anthropic_events, chat_body, chat_events

__all__ = ["PROVIDERS", "from_otel"]

PROVIDERS = {  # gen_ai.provider.name / gen_ai.system (and the older names) -> the cassette's provider
    "anthropic": "anthropic",
    "openai": "openai",
    "azure.ai.openai": "openai",
    "az.ai.openai": "openai",
    "gemini": "google",
    "google": "google",
    "gcp.gemini": "google",
    "gcp.gen_ai": "google",
    "gcp.vertex_ai": "google",
    "vertex_ai": "google",
}
_PATHS = {"anthropic": "/v1/messages", "openai": "/v1/chat/completions"}


def _paced(events: list[JSON], span: JSON, attrs: JSON) -> list[JSON]:
    """Events spread over the span: the first at time-to-first-chunk (when known), the last at its end."""
    duration = (int(span.get("endTimeUnixNano") or 0) - int(span.get("startTimeUnixNano") or 0)) / 1e6
    first = attrs.get("gen_ai.response.time_to_first_chunk")
    start = float(first) * 1000 if isinstance(first, (int, float)) else 0.0
    end = max(duration, start)
    step = (end - start) / max(len(events) - 1, 1)
    return [{**e, "t": round(start + i * step, 1)} for i, e in enumerate(events)]


def _failure(call: JSON, provider: str, notes: list[str]) -> Response:
    """A failed call's reply, made from the span's status: the trace holds no error body."""
    attrs = call["attributes"]
    status = attrs.get("http.response.status_code")
    status = status if isinstance(status, int) and status >= 400 else 500
    message = (call.get("status") or {}).get("message") or str(attrs.get("error.type") or "error")
    notes.append(f"the call failed ({status}); the trace holds no error body, one is made from its status")
    if provider == "google":
        reply: JSON = {
            "error": {"code": status, "message": message, "status": str(attrs.get("error.type") or "")}
        }
    else:  # both SDKs read the error from body["error"]
        reply = {
            "type": "error",
            "error": {"type": str(attrs.get("error.type") or "api_error"), "message": message},
        }
    return Response(status, {"content-type": "application/json"}, body=reply)


def _entry(call: JSON, provider: str, streamed: bool | None, notes: list[str]) -> Entry:
    """One call's entry; ``streamed`` None (the trace does not say) writes the plain call marked
    ``as_asked``, which replay serves in the shape the live call asks for."""
    attrs = call["attributes"]
    body = request_body(provider, attrs, notes, bool(streamed))
    query: tuple[tuple[str, str], ...] = ()
    if provider == "google":
        path, query = gemini_path(str(attrs.get("gen_ai.request.model") or ""), bool(streamed))
    else:
        path = _PATHS[provider]
    if (call.get("status") or {}).get("code") == 2:
        response = _failure(call, provider, notes)
    else:
        rid = str(attrs.get("gen_ai.response.id") or "")
        headers = {"content-type": "application/json"}
        if provider == "google":
            outputs = json_attr(attrs.get("gen_ai.output.messages")) or []
            answer = gemini_response(attrs, outputs, notes, rid or digest(body, outputs, n=22))
            events = gemini_events(Request("POST", path, body=body, query=query), answer)
        elif provider == "anthropic":
            neutral = neutral_response(provider, attrs, notes)
            answer = anthropic_body(neutral, rid or "msg_" + digest(body, neutral))
            events = anthropic_events(answer)
            if attrs.get("anthropic.request.id"):
                headers["request-id"] = str(attrs["anthropic.request.id"])
        else:
            neutral = neutral_response(provider, attrs, notes)
            answer = chat_body(neutral, rid or "chatcmpl-" + digest(body, neutral))
            events = chat_events(answer)
        if streamed:
            response = Response(
                200, {**headers, "content-type": "text/event-stream"}, stream=_paced(events, call, attrs)
            )
        else:
            response = Response(200, headers, body=answer, as_asked=streamed is None)
    request = Request("POST", path, body=body, query=query)
    return Entry(provider, request, response, default_request_hash(request.normalised()))


def _iso(nanos: Any) -> str:
    return datetime.fromtimestamp(int(nanos or 0) / 1e9, timezone.utc).isoformat(timespec="milliseconds")


def _seen(spans: list[JSON]) -> str:
    """What an export held, for an error: its span count and the instrumentations behind them."""
    return f"{len(spans)} spans from {', '.join(scopes_of(spans)) or 'no instrumentation scope'}"


def _no_content(where: str, bare: list[JSON], calls: list[JSON]) -> CassetteFormatError:
    scopes = list(dict.fromkeys(s for c in bare for s in c["scopes"]))
    switches = list(dict.fromkeys(f"{s}: {capture_switch(s)}" for s in scopes if capture_switch(s)))
    advice = "; ".join(switches) or "see your instrumentation's documentation for its content-capture setting"
    return CassetteFormatError(
        where,
        f"{len(bare)} of {len(calls)} model calls were traced without message content (span "
        f"{bare[0].get('spanId')}, by {', '.join(scopes)}), so there is nothing to replay. Turn content "
        f"capture on in the service and export the session again: {advice}",
    )


def _add_tool(cassette: Cassette, span: JSON, where: str, stacklevel: int = 3) -> None:
    made = tool_entry(span)
    if isinstance(made, str):
        warnings.warn(
            f"{where}: span {span.get('spanId')}: {made}; left out", ConversionWarning, stacklevel=stacklevel
        )
    else:
        cassette.append(made)


def _model_calls(where: str, spans: list[JSON], calls: list[JSON], trace_id: str | None) -> list[JSON]:
    """The export's model calls (of ``trace_id`` when given); an error when there are none, or when
    they were traced without their messages."""
    if trace_id is not None:
        calls = [c for c in calls if c.get("traceId") == trace_id]
    if not calls:
        picked = f" in trace {trace_id}" if trace_id else ""
        raise CassetteFormatError(
            where,
            f"no model call{picked}: {_seen(spans)}, none a GenAI chat span (gen_ai.operation.name "
            "'chat' or 'generate_content' with gen_ai.provider.name, traceloop's gen_ai.prompt.N, or "
            "OpenInference's openinference.span.kind=LLM). Export the spans of an LLM instrumentation "
            "(docs/converters/otel.md lists those read)",
        )
    bare = [c for c in calls if "gen_ai.input.messages" not in c["attributes"]]
    if bare:
        raise _no_content(where, bare, calls)
    return calls


def _described(call: JSON) -> JSON:
    """Where a call came from, kept in the cassette's metadata."""
    start, end = int(call.get("startTimeUnixNano") or 0), int(call.get("endTimeUnixNano") or 0)
    return {
        "trace_id": call.get("traceId"),
        "span_id": call.get("spanId"),
        "spans": call["merged"],
        "scopes": call["scopes"],  # the instrumentations that wrote the call
        "name": call.get("name"),
        "start": _iso(start),
        "duration_ms": round((end - start) / 1e6, 1),
    }


def _add_tools_before(cassette: Cassette, ran: list[JSON], call: JSON, where: str) -> None:
    """The tool spans (``ran``, in start order) that started before ``call``, taken off ``ran`` and
    added to the cassette: a tool entry sits in its place in time."""
    start = int(call.get("startTimeUnixNano") or 0)
    while ran and int(ran[0].get("startTimeUnixNano") or 0) < start:
        _add_tool(cassette, ran.pop(0), where, stacklevel=4)


def from_otel(
    source: str | os.PathLike[str] | Mapping[str, Any] | list[Any],
    *,
    trace_id: str | None = None,
    stream: bool | None = None,
    tools: bool = False,
) -> Cassette:
    """An OTLP JSON export of GenAI spans as a cassette: one entry per model call, in start-time order.

    ``source`` is a file (one JSON document, or JSON lines) or the parsed document(s). With several
    traces in the file, ``trace_id`` picks one session; without it every call is kept, in order, and
    a ``ConversionWarning`` says so. Each call is written streamed or not as its trace says
    (the anthropic SDK's own spans, google-genai's, traceloop's, OpenInference's and Logfire's do),
    or, where it says nothing, as the plain call marked ``as_asked`` (``Response.as_asked``), which
    replay serves in the shape the live call asks for. ``stream=True`` (or False) overrides that for
    every call. Replay with ``mode="sequential"``
    unless every request was rebuilt exactly (see the warnings): a trace does not hold every byte
    the SDK sent. Raises :class:`~llmvcr.CassetteFormatError` when the export yields no entry.
    With ``tools=True`` each ``execute_tool`` span becomes a tool entry (``provider: tool``) in its
    place in time, for the same tool decorated with ``@llmvcr.tool`` (``llmvcr.convert.otel_tools``).
    """
    where = source_name(source)
    spans, logs = read_export(source)
    calls = _model_calls(where, spans, genai_calls(spans, logs), trace_id)
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
    unsupported: list[str] = []
    ran = tool_spans(spans, trace_id) if tools else []
    for call in calls:
        _add_tools_before(cassette, ran, call, where)
        attrs = call["attributes"]
        named = str(attrs.get("gen_ai.provider.name") or attrs.get("gen_ai.system")).lower()
        provider = PROVIDERS.get(named, "openai" if "openai" in named else named)
        if provider not in ("anthropic", "openai", "google"):
            unsupported.append(named)
            warnings.warn(
                f"{where}: span {call.get('spanId')}: provider {named!r} is not supported; left out",
                ConversionWarning,
                stacklevel=2,
            )
            continue
        notes: list[str] = []
        streamed = attrs.get(STREAMED) if stream is None else stream
        cassette.append(_entry(call, provider, streamed, notes))
        described.append(_described(call))
        for note in notes:
            warnings.warn(
                f"{where}: entry {len(cassette) - 1} (span {call.get('spanId')}): {note}",
                ConversionWarning,
                stacklevel=2,
            )
    for span in ran:
        _add_tool(cassette, span, where)
    if not cassette.entries:
        raise CassetteFormatError(
            where,
            f"{len(calls)} model calls, none of a provider llmvcr replays (seen: "
            f"{', '.join(repr(p) for p in dict.fromkeys(unsupported))}; read: anthropic, openai, gemini) "
            f"in {_seen(spans)}, so no entry was written. Record that service with llmvcr instead, or "
            "register the provider (llmvcr.register_provider) and record it",
        )
    cassette.metadata["otel"] = {"trace_ids": traces, "calls": described}
    return cassette
