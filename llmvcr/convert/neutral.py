"""The provider-neutral view converters share: regista's message vocabulary, and small pieces.

A request is ``{model, system, messages, tools, max_tokens, params}``, a message is ``{role,
content: [block]}`` with ``text``, ``thinking``, ``tool_use`` and ``tool_result`` blocks, a response
is ``{message, stop_reason, usage, model, request_id}``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from ..cassette import Entry
from ..wire.sse import parse_events

JSON = dict[str, Any]
DEFAULT_MAX_TOKENS = 8192  # regista's ModelRequest default
STOP_REASONS = ("end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal", "pause_turn", "other")
FINAL_STOP_REASONS = frozenset({"end_turn", "stop_sequence", "refusal", "max_tokens", "other"})
OPENAI_STOP = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}
OPENAI_FINISH = {
    "end_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
}


def api_stop_reason(api: str, reason: Any) -> Any:
    """A neutral stop reason in ``api``'s own word: Anthropic's ``end_turn`` is OpenAI's ``stop``."""
    return reason if api == "anthropic" else OPENAI_FINISH.get(reason, reason)


@dataclass(frozen=True, slots=True)
class Call:
    """One entry read as a model call: its neutral request and response (``None`` when it failed)."""

    position: int
    entry: Entry
    api: str  # "anthropic", "openai-chat" or "openai-responses"
    request: JSON
    response: JSON | None
    error: str | None = None
    latency_ms: int = 0
    notes: list[str] = field(default_factory=list)  # what the neutral view could not hold

    @property
    def label(self) -> str:
        request = self.entry.request
        return f"entry {self.position} ({self.entry.provider} {request.method} {request.path})"


# -- small pieces -----------------------------------------------------------------------------
def text_block(text: str) -> JSON:
    return {"type": "text", "text": text}


def tool_use_block(id: str, name: str, input: Any) -> JSON:
    return {"type": "tool_use", "id": id, "name": name, "input": input if isinstance(input, dict) else {}}


def parse_arguments(raw: Any) -> JSON:
    """Tool-call arguments (a JSON string) as a dict, the way regista reads them."""
    if isinstance(raw, dict):
        return raw
    if not raw:
        return {}
    try:
        parsed = json.loads(raw)
    except (TypeError, ValueError):
        return {"raw_arguments": raw}
    return parsed if isinstance(parsed, dict) else {"raw_arguments": raw}


def text_of(content: Any, notes: list[str] | None = None, where: str = "") -> str:
    """A string, or the joined text of a list of content parts (other parts noted as dropped)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    texts: list[str] = []
    for part in content if isinstance(content, list) else [content]:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif notes is not None:
            kind = part.get("type") if isinstance(part, dict) else type(part).__name__
            notes.append(f"{where}: a {kind!r} part has no text form; dropped")
    return "\n".join(texts)


def digest(*parts: Any, n: int = 24) -> str:
    """A short stable id derived from content (so conversions are deterministic)."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:n]


def usage(input_tokens: Any = 0, output_tokens: Any = 0, cache_read: Any = 0, cache_write: Any = 0) -> JSON:
    def n(value: Any) -> int:
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    return {
        "input_tokens": n(input_tokens),
        "output_tokens": n(output_tokens),
        "cache_read_tokens": n(cache_read),
        "cache_write_tokens": n(cache_write),
    }


def parse_sse(text: str) -> list[JSON]:
    """Server-sent events as llmvcr stores them: ``{"event"?: name, "data": json-or-text}``."""
    return parse_events(text.encode("utf-8"))


def api_of(entry: Entry) -> str | None:
    """Which model API an entry speaks, or None for anything else (embeddings, token counts...)."""
    path = entry.request.path.rstrip("/")
    body = entry.request.body
    if not isinstance(body, dict):
        return None
    if path.endswith("/messages") and "messages" in body:
        return "anthropic"
    if path.endswith("/chat/completions") and "messages" in body:
        return "openai-chat"
    if path.endswith("/responses") and "input" in body:
        return "openai-responses"
    return None
