"""OTLP JSON, the file format of ``opentelemetry-exporter-otlp`` and a collector's file exporter.

A file holds one ``ExportTraceServiceRequest`` / ``ExportLogsServiceRequest`` document, or one per
line (JSON lines). Values are typed (``{"stringValue": ...}``, ``{"intValue": "42"}``,
``{"arrayValue": {"values": [...]}}``, ``{"kvlistValue": ...}``); :func:`read_export` returns every
span and log record with its attributes as plain data. Plain JSON: no OpenTelemetry package needed.

>>> spans, logs = read_export("trace.jsonl")
>>> spans[0]["attributes"]["gen_ai.request.model"]
'claude-sonnet-4-5'
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import CassetteFormatError
from .otel_dialects import fold_logfire_streams, normalise

__all__ = ["any_value", "attributes", "genai_calls", "is_otlp", "read_export", "scopes_of", "source_name"]

JSON = dict[str, Any]


def any_value(value: Any) -> Any:
    """An OTLP ``AnyValue`` as plain data (int64 values arrive as strings)."""
    if not isinstance(value, Mapping):
        return value
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        return int(value["intValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "arrayValue" in value:
        return [any_value(v) for v in (value["arrayValue"] or {}).get("values") or []]
    if "kvlistValue" in value:
        return attributes((value["kvlistValue"] or {}).get("values") or [])
    if "bytesValue" in value:
        return value["bytesValue"]
    return None


def attributes(pairs: Iterable[Any]) -> JSON:
    """A list of ``{"key", "value"}`` pairs as a dict."""
    return {str(p.get("key")): any_value(p.get("value")) for p in pairs if isinstance(p, Mapping)}


def source_name(source: Any) -> str:
    """How errors and warnings name the input: its path, or ``<document>``."""
    return "<document>" if isinstance(source, (Mapping, list)) else os.fspath(source)


def is_otlp(path: str | os.PathLike[str]) -> bool:
    """Whether a file looks like an OTLP JSON export: its first 4 KB name resourceSpans or resourceLogs."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    return b'"resourceSpans"' in head or b'"resourceLogs"' in head


def _documents(source: Any, where: str) -> list[JSON]:
    if isinstance(source, Mapping):
        return [dict(source)]
    if isinstance(source, list):
        return [d for d in source if isinstance(d, dict)]
    with open(source, encoding="utf-8") as f:
        text = f.read()
    try:
        whole = json.loads(text)
    except ValueError:
        whole = None
    if isinstance(whole, (dict, list)):
        return _documents(whole, where)
    documents = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                documents.append(json.loads(line))
            except ValueError as exc:
                raise CassetteFormatError(where, f"line {number} is not JSON: {exc}") from None
    return documents


def read_export(source: Any) -> tuple[list[JSON], list[JSON]]:
    """Every span and log record of an export (a path, a parsed document or a list of them).

    Each keeps its OTLP fields (``traceId``, ``spanId``, ``startTimeUnixNano``, ``status``...) with
    ``attributes`` turned into a dict; a span also gets ``scope`` and ``scope_version``, its
    instrumentation's name and version.
    """
    where = source_name(source)
    spans: list[JSON] = []
    logs: list[JSON] = []
    for document in _documents(source, where):
        for resource in document.get("resourceSpans") or []:
            for scope in resource.get("scopeSpans") or resource.get("instrumentationLibrarySpans") or []:
                library = scope.get("scope") or scope.get("instrumentationLibrary") or {}
                spans.extend(
                    {
                        **span,
                        "attributes": attributes(span.get("attributes") or []),
                        "scope": str(library.get("name", "")),
                        "scope_version": str(library.get("version", "")),
                    }
                    for span in scope.get("spans") or []
                )
        for resource in document.get("resourceLogs") or []:
            for scope in resource.get("scopeLogs") or []:
                logs.extend(
                    {**record, "attributes": attributes(record.get("attributes") or [])}
                    for record in scope.get("logRecords") or []
                )
    if not spans and not logs:
        raise CassetteFormatError(where, "no resourceSpans or resourceLogs: not an OTLP JSON export")
    return spans, logs


# -- GenAI model calls -----------------------------------------------------------------------------
CHAT_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
CONTENT_KEYS = (
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.definitions",
)
_MESSAGE_EVENTS = {  # semantic conventions up to 1.30: one event per message
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


def _event_parts(role: str, body: Any) -> list[JSON]:
    """A 1.30-style message event body as semantic-convention parts."""
    body = body if isinstance(body, dict) else {}
    content = body.get("content")
    if role == "tool":
        return [{"type": "tool_call_response", "id": body.get("id"), "response": content}]
    parts: list[JSON] = [] if content in (None, "") else [{"type": "text", "content": content}]
    for call in body.get("tool_calls") or []:
        fn = (call.get("function") or {}) if isinstance(call, dict) else {}
        # arguments stay the JSON text the event holds; the converter parses them
        parts.append(
            {
                "type": "tool_call",
                "id": call.get("id"),
                "name": fn.get("name"),
                "arguments": fn.get("arguments"),
            }
        )
    return parts


def _from_events(records: list[JSON]) -> JSON:
    """The content one span's 1.30-style message events hold, as the newer attributes."""
    inputs: list[JSON] = []
    outputs: list[JSON] = []
    for record in records:
        name, body = record["name"], any_value(record.get("body"))
        if name in _MESSAGE_EVENTS:
            inputs.append({"role": _MESSAGE_EVENTS[name], "parts": _event_parts(_MESSAGE_EVENTS[name], body)})
        elif name == "gen_ai.choice" and isinstance(body, dict):
            message = body.get("message") if isinstance(body.get("message"), dict) else {}
            outputs.append(
                {
                    "role": "assistant",
                    "parts": _event_parts("assistant", message),
                    "finish_reason": body.get("finish_reason"),
                }
            )
    found: JSON = {"gen_ai.input.messages": inputs} if inputs else {}
    if outputs:
        found["gen_ai.output.messages"] = outputs
    return found


def _within(inner: JSON, outer: JSON) -> bool:
    start, end = int(inner.get("startTimeUnixNano") or 0), int(inner.get("endTimeUnixNano") or 0)
    return (
        inner.get("traceId") == outer.get("traceId")
        and int(outer.get("startTimeUnixNano") or 0) <= start
        and end <= int(outer.get("endTimeUnixNano") or 0)
    )


def _fold_bare(groups: list[list[JSON]]) -> None:
    """A call's spans without content (the SDK's own, say, when it failed and named no response id)
    join the span with content that encloses them in time."""
    full = [g for g in groups if any("gen_ai.input.messages" in s["attributes"] for s in g)]
    for group in groups:
        if group in full:
            continue
        host = next((f for f in full if all(any(_within(s, o) for o in f) for s in group)), None)
        if host is not None:
            host.extend(group)
            group.clear()


def scopes_of(spans: list[JSON]) -> list[str]:
    """The instrumentations behind ``spans``, as ``name version``, each once, in order of appearance."""
    return list(
        dict.fromkeys(f"{s.get('scope') or '?'} {s.get('scope_version') or ''}".strip() for s in spans)
    )


def genai_calls(spans: list[JSON], logs: list[JSON]) -> list[JSON]:
    """The chat spans, one per model call, in start order, with the content their log records and
    span events carry merged into ``attributes``; spans naming the same ``gen_ai.response.id`` (an
    SDK's own span and an instrumentation's) are one call, listed in ``merged``, its instrumentations
    in ``scopes``. Each span is first read into the current semantic conventions
    (:func:`~llmvcr.convert.otel_dialects.normalise`)."""
    by_span = _records_by_span(spans, logs)
    for span in spans:
        normalise(span)
    groups: dict[tuple[str, str], list[JSON]] = {}
    for span in fold_logfire_streams(spans):
        attrs = span["attributes"]
        provider = attrs.get("gen_ai.provider.name") or attrs.get("gen_ai.system")
        if provider is None or attrs.get("gen_ai.operation.name", "chat") not in CHAT_OPERATIONS:
            continue
        own = by_span.get(str(span.get("spanId")), [])
        carried = _from_events(own)
        for record in own:
            carried.update({k: record["attributes"][k] for k in CONTENT_KEYS if k in record["attributes"]})
        attrs.update({k: v for k, v in carried.items() if k not in attrs})
        key = str(attrs.get("gen_ai.response.id") or span.get("spanId"))
        groups.setdefault((str(span.get("traceId")), key), []).append(span)
    _fold_bare(list(groups.values()))
    calls = [_merged(group) for group in groups.values() if group]
    calls.sort(key=lambda s: int(s.get("startTimeUnixNano") or 0))
    return calls


def _records_by_span(spans: list[JSON], logs: list[JSON]) -> dict[str, list[JSON]]:
    """The log records and span events that carry content, by the span they belong to, in time order."""
    records = [
        {
            **r,
            "name": r.get("eventName") or r["attributes"].get("event.name") or r.get("name"),
            "at": int(r.get("timeUnixNano") or r.get("observedTimeUnixNano") or 0),
        }
        for r in logs
    ] + [
        {
            **e,
            "spanId": s.get("spanId"),
            "attributes": attributes(e.get("attributes") or []),
            "at": int(e.get("timeUnixNano") or 0),
        }
        for s in spans
        for e in s.get("events") or []
    ]
    by_span: dict[str, list[JSON]] = {}
    for record in sorted(records, key=lambda r: r["at"]):
        if record.get("spanId"):
            by_span.setdefault(str(record["spanId"]), []).append(record)
    return by_span


def _merged(group: list[JSON]) -> JSON:
    """The spans of one call as one: the one with content first, each attribute from the first that has it."""
    group.sort(key=lambda s: "gen_ai.input.messages" not in s["attributes"])
    merged: JSON = {}
    for span in group:
        merged.update({k: v for k, v in span["attributes"].items() if k not in merged})
    return {
        **group[0],
        "attributes": merged,
        "merged": [s.get("spanId") for s in group],
        "scopes": scopes_of(group),
    }
