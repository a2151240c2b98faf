"""Token usage read from recorded responses, and what those tokens would have cost."""

from __future__ import annotations

from typing import Any

from .cassette import Entry

# USD per million tokens (input, output), for models whose public list price is known.
PRICES: dict[str, tuple[float, float]] = {
    "claude-opus-4": (15.0, 75.0),
    "claude-sonnet-4": (3.0, 15.0),
    "claude-haiku-4": (1.0, 5.0),
    "claude-3-5-haiku": (0.8, 4.0),
    "gpt-4o-mini": (0.15, 0.6),
    "gpt-4o": (2.5, 10.0),
    "gpt-4.1-mini": (0.4, 1.6),
    "gpt-4.1": (2.0, 8.0),
    "gpt-5-mini": (0.25, 2.0),
    "gpt-5": (1.25, 10.0),
}
_BY_LENGTH = sorted(PRICES.items(), key=lambda kv: -len(kv[0]))  # the longest matching prefix wins


def _tokens(usage: Any) -> tuple[int, int]:
    if not isinstance(usage, dict):
        return 0, 0
    inp = usage.get("input_tokens", usage.get("prompt_tokens", 0)) or 0
    out = usage.get("output_tokens", usage.get("completion_tokens", 0)) or 0
    return (inp if isinstance(inp, int) else 0), (out if isinstance(out, int) else 0)


def tokens_of(entry: Entry) -> tuple[int, int]:
    """(input, output) tokens the recorded response reports, streamed or not."""
    response = entry.response
    if response.stream is None:
        body = response.body
        return _tokens(body.get("usage")) if isinstance(body, dict) else (0, 0)
    inp = out = 0
    for event in response.stream:
        data = event.get("data")
        if not isinstance(data, dict) or (
            "usage" not in data and "message" not in data and "response" not in data
        ):
            continue  # most events (text deltas) carry no usage
        for usage in (
            data.get("usage"),
            (data.get("message") or {}).get("usage") if isinstance(data.get("message"), dict) else None,
            (data.get("response") or {}).get("usage") if isinstance(data.get("response"), dict) else None,
        ):
            i, o = _tokens(usage)
            inp, out = max(inp, i), max(out, o)
    return inp, out


def cost_of(entry: Entry, tokens: tuple[int, int] | None = None) -> float | None:
    """List-price dollars of the recorded call, or None when the model's price is unknown.

    ``tokens`` is ``tokens_of(entry)`` when the caller has it already.
    """
    body = entry.request.body
    model = str(body.get("model", "")) if isinstance(body, dict) else ""
    for prefix, (pin, pout) in _BY_LENGTH:
        if model.startswith(prefix):
            inp, out = tokens if tokens is not None else tokens_of(entry)
            return (inp * pin + out * pout) / 1_000_000
    return None
