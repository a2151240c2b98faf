"""Trace dialects: what each instrumentation writes on a model call's span, read into one form.

:func:`normalise` turns a span's attributes into the current GenAI semantic conventions
(``gen_ai.input.messages`` / ``gen_ai.output.messages`` / ``gen_ai.system_instructions`` /
``gen_ai.tool.definitions`` / ``gen_ai.usage.*``), which ``otel.py`` builds requests and
responses from. What it reads besides those:

- **traceloop / OpenLLMetry** before its move to the semantic conventions:
  ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` (and the older ``llm.prompts.N.*`` /
  ``llm.completions.N.*``), ``llm.request.functions.N.*``, ``llm.is_streaming``;
- **OpenInference** (Arize, Phoenix): ``openinference.span.kind=LLM``,
  ``llm.input_messages.N.message.*``, ``llm.output_messages.N.message.*``, ``llm.tools.N.*``,
  ``llm.invocation_parameters``, and ``input.value``, the request body as the SDK was given it;
- **Logfire**: the semantic conventions already, but a streamed call is a span without output
  followed by a ``streaming response ...`` log that holds it (:func:`fold_logfire_streams`).

Each dialect also says, where it can, whether the call streamed: ``STREAMED`` is set to True or
False on the attributes, and left out where the trace does not say.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "CAPTURE_SWITCHES",
    "EXACT_BODY",
    "STREAMED",
    "capture_switch",
    "fold_logfire_streams",
    "normalise",
]

JSON = dict[str, Any]
STREAMED = "llmvcr.streamed"
"""Attribute set by :func:`normalise`: True or False where the trace says whether the call streamed."""
EXACT_BODY = "llmvcr.request.body"
"""Attribute set by :func:`normalise`: the request body exactly as the SDK was given it (OpenInference)."""

# By instrumentation scope (longest prefix first): the setting that puts message content in its spans.
CAPTURE_SWITCHES: tuple[tuple[str, str], ...] = (
    (
        "opentelemetry.instrumentation.openai_v2",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only (2.4 and later; or event_only, "
        "span_and_event; =true is refused there and means no content); before 2.4: =true",
    ),
    (
        "opentelemetry.util.genai",  # the scope of openai-v2 2.4's spans, written through util-genai
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only (or event_only, span_and_event; "
        "opentelemetry-instrumentation-openai-v2 2.4 and later refuse =true, which means no content)",
    ),
    (
        "opentelemetry.instrumentation.google_genai",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only (or event_only, span_and_event)",
    ),
    (
        "opentelemetry.instrumentation.",  # traceloop's (anthropic, openai.v1, ...)
        "TRACELOOP_TRACE_CONTENT=true (traceloop's default; content is off when it is false)",
    ),
    (
        "com.anthropic.sdk.python",
        "ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE=content (or open_telemetry={'traces': "
        "{'content_mode': 'content'}} on the client)",
    ),
    (
        "openinference.instrumentation",
        "OPENINFERENCE_HIDE_INPUTS, OPENINFERENCE_HIDE_OUTPUTS, OPENINFERENCE_HIDE_INPUT_MESSAGES and "
        "OPENINFERENCE_HIDE_OUTPUT_MESSAGES unset or false (or a TraceConfig that hides nothing)",
    ),
    (
        "logfire",
        "logfire.instrument_openai() / instrument_anthropic() record content unless scrubbed: check "
        "logfire.configure(scrubbing=...)",
    ),
)


def capture_switch(scope: str) -> str | None:
    """The content-capture setting of the instrumentation whose scope name is ``scope``, if known."""
    return next((switch for prefix, switch in CAPTURE_SWITCHES if scope.startswith(prefix)), None)


def _loads(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


def _indexed(attrs: Mapping[str, Any], prefix: str) -> list[JSON]:
    """Flattened list attributes (``prefix.0.role``, ``prefix.0.content``...) as a list of dicts keyed by
    the rest of the name, in index order."""
    items: dict[int, JSON] = {}
    pattern = re.compile(re.escape(prefix) + r"\.(\d+)\.(.+)")
    for key, value in attrs.items():
        match = pattern.fullmatch(key)
        if match:
            items.setdefault(int(match.group(1)), {})[match.group(2)] = value
    return [items[i] for i in sorted(items)]


def _tool_call(call_id: Any, name: Any, arguments: Any) -> JSON:
    return {"type": "tool_call", "id": call_id, "name": name, "arguments": arguments}


# -- traceloop before the semantic conventions ----------------------------------------------------
def _block_parts(blocks: list[Any]) -> list[JSON]:
    """Anthropic content blocks (traceloop writes a message's block list as JSON text) as parts."""
    parts: list[JSON] = []
    for block in blocks:
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind == "text":
            parts.append({"type": "text", "content": block.get("text", "")})
        elif kind == "tool_use":
            parts.append(_tool_call(block.get("id"), block.get("name"), block.get("input")))
        elif kind == "tool_result":
            parts.append(
                {
                    "type": "tool_call_response",
                    "id": block.get("tool_use_id"),
                    "response": block.get("content"),
                }
            )
        else:
            parts.append({"type": str(kind)})  # the converter names what it drops
    return parts


def _traceloop_message(item: JSON) -> JSON:
    role = str(item.get("role") or "user")
    content = item.get("content")
    parsed = _loads(content) if isinstance(content, str) and content.lstrip().startswith("[") else None
    if role == "tool":
        parts = [{"type": "tool_call_response", "id": item.get("tool_call_id"), "response": content}]
    elif isinstance(parsed, list) and all(isinstance(b, Mapping) and "type" in b for b in parsed):
        parts = _block_parts(parsed)
    else:
        parts = [] if content in (None, "") else [{"type": "text", "content": content}]
    parts += [
        _tool_call(c.get("id"), c.get("name"), c.get("arguments")) for c in _indexed(item, "tool_calls")
    ]
    message: JSON = {"role": role, "parts": parts}
    if item.get("finish_reason"):
        message["finish_reason"] = item["finish_reason"]
    return message


def _traceloop(attrs: JSON) -> None:
    for prompts, completions in (("gen_ai.prompt", "gen_ai.completion"), ("llm.prompts", "llm.completions")):
        inputs, outputs = _indexed(attrs, prompts), _indexed(attrs, completions)
        if inputs or outputs:
            break
    if not (inputs or outputs):
        return
    attrs.setdefault("gen_ai.input.messages", [_traceloop_message(m) for m in inputs])
    if outputs:
        attrs.setdefault("gen_ai.output.messages", [_traceloop_message(m) for m in outputs])
    functions = _indexed(attrs, "llm.request.functions")
    if functions and "gen_ai.tool.definitions" not in attrs:
        attrs["gen_ai.tool.definitions"] = [
            {
                "name": f.get("name"),
                "description": f.get("description"),
                "parameters": _loads(f.get("parameters", f.get("input_schema"))) or {},
            }
            for f in functions
        ]
    for old, new in (
        ("gen_ai.usage.prompt_tokens", "gen_ai.usage.input_tokens"),
        ("gen_ai.usage.completion_tokens", "gen_ai.usage.output_tokens"),
        ("gen_ai.usage.cache_read_input_tokens", "gen_ai.usage.cache_read.input_tokens"),
        ("gen_ai.usage.cache_creation_input_tokens", "gen_ai.usage.cache_creation.input_tokens"),
    ):
        if old in attrs:
            attrs.setdefault(new, attrs[old])


# -- OpenInference ---------------------------------------------------------------------------------
def _openinference_message(item: JSON) -> JSON:
    role = str(item.get("message.role") or "user")
    if role == "tool":
        response = item.get("message.content")
        return {
            "role": "tool",
            "parts": [
                {"type": "tool_call_response", "id": item.get("message.tool_call_id"), "response": response}
            ],
        }
    contents = _indexed(item, "message.contents")
    parts: list[JSON] = []
    for c in contents:
        kind = c.get("message_content.type")
        if kind == "text":
            parts.append({"type": "text", "content": c.get("message_content.text", "")})
        elif kind not in ("tool_use", None):  # tool uses come again under message.tool_calls
            parts.append({"type": str(kind)})
    if not contents and item.get("message.content") not in (None, ""):
        parts.append({"type": "text", "content": item["message.content"]})
    parts += [
        _tool_call(
            c.get("tool_call.id"), c.get("tool_call.function.name"), c.get("tool_call.function.arguments")
        )
        for c in _indexed(item, "message.tool_calls")
    ]
    return {"role": role, "parts": parts}


def _openinference(attrs: JSON) -> None:
    provider = str(attrs.get("llm.provider") or attrs.get("llm.system") or "")
    attrs.setdefault("gen_ai.provider.name", provider)
    attrs.setdefault("gen_ai.operation.name", "chat")
    params = _loads(attrs.get("llm.invocation_parameters"))
    params = params if isinstance(params, dict) else {}
    body = _loads(attrs.get("input.value")) if attrs.get("input.mime_type") == "application/json" else None
    inputs = [_openinference_message(m) for m in _indexed(attrs, "llm.input_messages")]
    if inputs:
        attrs.setdefault("gen_ai.input.messages", inputs)
        if isinstance(body, dict) and isinstance(body.get("messages"), list):
            attrs[EXACT_BODY] = body
    outputs = [_openinference_message(m) for m in _indexed(attrs, "llm.output_messages")]
    if outputs:
        outputs[0]["finish_reason"] = attrs.get("llm.finish_reason")
        attrs.setdefault("gen_ai.output.messages", outputs)
    tools = [_loads(t.get("tool.json_schema")) for t in _indexed(attrs, "llm.tools")]
    if tools:
        attrs.setdefault("gen_ai.tool.definitions", [t for t in tools if isinstance(t, dict)])
    model = attrs.get("llm.request.model_name") or params.get("model") or attrs.get("llm.model_name")
    if model:
        attrs.setdefault("gen_ai.request.model", model)
    for key, name in (
        ("max_tokens", "gen_ai.request.max_tokens"),
        ("max_completion_tokens", "gen_ai.request.max_tokens"),
        ("temperature", "gen_ai.request.temperature"),
        ("top_p", "gen_ai.request.top_p"),
    ):
        if key in params:
            attrs.setdefault(name, params[key])
    answer = _loads(attrs.get("output.value"))
    if isinstance(answer, dict):
        for key, name in (("id", "gen_ai.response.id"), ("model", "gen_ai.response.model")):
            if isinstance(answer.get(key), str):
                attrs.setdefault(name, answer[key])
    for key, name in (
        ("llm.token_count.prompt", "gen_ai.usage.input_tokens"),
        ("llm.token_count.completion", "gen_ai.usage.output_tokens"),
        ("llm.token_count.prompt_details.cache_read", "gen_ai.usage.cache_read.input_tokens"),
        ("llm.token_count.prompt_details.cache_write", "gen_ai.usage.cache_creation.input_tokens"),
    ):
        if key in attrs:
            attrs.setdefault(name, attrs[key])
    # OpenInference records the parameters the SDK was called with: no "stream" there means none
    stream = params.get("stream", body.get("stream") if isinstance(body, dict) else None)
    attrs[STREAMED] = bool(stream)


# -- every dialect ---------------------------------------------------------------------------------
def normalise(span: JSON) -> None:
    """Rewrite ``span["attributes"]`` in place into the current semantic conventions.

    Keys already there win over what a dialect would derive; the original keys stay.
    """
    attrs: JSON = span["attributes"]
    if attrs.get("openinference.span.kind") == "LLM":
        _openinference(attrs)
        return
    _traceloop(attrs)
    if isinstance(attrs.get("gen_ai.system"), str):
        attrs["gen_ai.system"] = attrs["gen_ai.system"].lower()  # traceloop's anthropic says "Anthropic"
    for key in ("gen_ai.request.stream", "gen_ai.is_streaming", "llm.is_streaming"):
        if isinstance(attrs.get(key), bool):
            attrs.setdefault(STREAMED, attrs[key])
    scope = str(span.get("scope") or "")
    if scope == "com.anthropic.sdk.python" or scope.startswith("opentelemetry.instrumentation.google_genai"):
        attrs.setdefault(STREAMED, False)  # both set gen_ai.request.stream on every streamed call
    if scope.startswith("logfire.") and "gen_ai.output.messages" in attrs:
        attrs.setdefault(STREAMED, False)  # a streamed call's output is on its own log (below)


def fold_logfire_streams(spans: list[JSON]) -> list[JSON]:
    """Logfire writes a streamed call as a span without output, then a ``streaming response`` log
    holding the whole call: the log becomes the call (streamed, timed from the span) and the span goes."""
    spans = sorted(spans, key=lambda s: int(s.get("startTimeUnixNano") or 0))
    dropped: set[int] = set()
    for index, log in enumerate(spans):
        template = str(log["attributes"].get("logfire.msg_template") or "")
        if not (
            str(log.get("scope", "")).startswith("logfire.") and template.startswith("streaming response")
        ):
            continue
        log["attributes"][STREAMED] = True
        opened = [
            (i, s)
            for i, s in enumerate(spans[:index])
            if i not in dropped
            and s.get("scope") == log.get("scope")
            and s.get("traceId") == log.get("traceId")
            and s.get("parentSpanId") == log.get("parentSpanId")
            and s["attributes"].get("logfire.span_type") == "span"
            and "gen_ai.output.messages" not in s["attributes"]
            and s["attributes"].get("gen_ai.input.messages") == log["attributes"].get("gen_ai.input.messages")
        ]
        if opened:
            i, span = opened[-1]
            dropped.add(i)
            log["startTimeUnixNano"] = span.get("startTimeUnixNano")
    return [s for i, s in enumerate(spans) if i not in dropped]
