"""OpenTelemetry GenAI ``execute_tool`` spans as tool entries (``provider: tool``), so a production
trace replays with its tools served too: the same tool decorated with ``@llmvcr.tool`` is answered
from the cassette and never runs.

The semantic conventions name a tool span's content ``gen_ai.tool.call.arguments`` and
``gen_ai.tool.call.result`` (opt-in); pydantic-ai's instrumentation before its version 3 writes
``tool_arguments`` and ``tool_response``. A span whose status is an error is the tool's raised
exception, named by its ``exception`` event.
"""

from __future__ import annotations

import builtins
import json
from typing import Any

from ..cassette import Entry, Request, Response
from ..matching import default_request_hash
from .neutral import JSON
from .otlp import attributes

ARGUMENTS = ("gen_ai.tool.call.arguments", "tool_arguments")
RESULTS = ("gen_ai.tool.call.result", "tool_response")
_ERROR = 2  # OTLP's STATUS_CODE_ERROR


def tool_spans(spans: list[JSON], trace_id: str | None = None) -> list[JSON]:
    """The ``execute_tool`` spans of an export (of one trace when ``trace_id`` is given), by start time."""
    found = [
        span
        for span in spans
        if span["attributes"].get("gen_ai.operation.name") == "execute_tool"
        and span["attributes"].get("gen_ai.tool.name")
        and (trace_id is None or span.get("traceId") == trace_id)
    ]
    return sorted(found, key=lambda span: int(span.get("startTimeUnixNano") or 0))


def _first(attrs: JSON, names: tuple[str, ...]) -> Any:
    return next((attrs[name] for name in names if name in attrs), None)


def _value(text: Any) -> Any:
    """A result as the tool returned it: a JSON object or list read back, any other text as it is."""
    if isinstance(text, str) and text[:1] in ("{", "["):
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def _class_path(kind: str) -> str:
    """``module:Class`` as a tool entry names an exception's class, from an ``exception.type``."""
    if ":" in kind:
        return kind
    if "." in kind:
        return ":".join(kind.rsplit(".", 1))
    return f"builtins:{kind}" if isinstance(getattr(builtins, kind, None), type) else kind


def tool_entry(span: JSON) -> Entry | str:
    """The tool entry of one ``execute_tool`` span, or why the span cannot make one."""
    attrs = span["attributes"]
    name = str(attrs["gen_ai.tool.name"])
    raw = _first(attrs, ARGUMENTS)
    try:
        arguments = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return f"tool {name}: its arguments are not JSON"
    if not isinstance(arguments, dict):
        return f"tool {name}: the span holds no arguments (content capture is off)"
    status = span.get("status") or {}
    if int(status.get("code") or 0) == _ERROR:
        raised = next(
            (
                attributes(e.get("attributes") or [])
                for e in span.get("events") or []
                if e.get("name") == "exception"
            ),
            {},
        )
        kind = str(raised.get("exception.type") or "ToolError")
        message = str(raised.get("exception.message") or status.get("message") or "")
        answer = Response(500, body={"error": {"type": _class_path(kind), "message": message}})
    else:
        result = _first(attrs, RESULTS)
        if result is None:
            return f"tool {name}: the span holds no result (content capture is off)"
        answer = Response(200, body={"return": _value(result)})
    request = Request("tool", name, body={"arguments": arguments})
    return Entry("tool", request, answer, default_request_hash(request.normalised()))
