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

__all__ = ["any_value", "attributes", "read_export", "source_name"]

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
    ``attributes`` turned into a dict; a span also gets ``scope``, its instrumentation's name.
    """
    where = source_name(source)
    spans: list[JSON] = []
    logs: list[JSON] = []
    for document in _documents(source, where):
        for resource in document.get("resourceSpans") or []:
            for scope in resource.get("scopeSpans") or resource.get("instrumentationLibrarySpans") or []:
                name = (scope.get("scope") or scope.get("instrumentationLibrary") or {}).get("name", "")
                spans.extend(
                    {**span, "attributes": attributes(span.get("attributes") or []), "scope": name}
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
