"""Token usage read from recorded responses, and what those tokens cost at list price.

Prices come from ``genai-prices`` (kept by the pydantic team, updated as providers change them),
installed with the optional extra ``pip install 'pyllmvcr[prices]'``. Without it, tokens are
still counted and dollars are omitted (``cost_of`` returns None); :data:`PRICES_HINT` says how to
get them. llmvcr keeps no price table of its own: a hand-kept one goes stale silently.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

from .cassette import Entry

__all__ = ["PRICES_HINT", "cost_of", "price", "prices_available", "tokens_of"]

PRICES_HINT = "dollars omitted: install the prices extra for them (pip install 'pyllmvcr[prices]')"
_PROVIDERS = {"anthropic": "anthropic", "openai": "openai", "azure": "azure", "google": "google"}


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


@functools.cache
def _genai_prices() -> Any:
    """The ``genai_prices`` module, or None when the prices extra is not installed."""
    try:
        return importlib.import_module("genai_prices")
    except ImportError:
        return None


def prices_available() -> bool:
    """Whether list prices are known here (the ``prices`` extra, ``genai-prices``, is installed)."""
    return _genai_prices() is not None


@functools.lru_cache(maxsize=1024)
def _rates(model: str, provider: str) -> tuple[float, float] | None:
    """Dollars per input and per output token of ``model`` (its base tier), asked once per model: a
    replay of thousands of entries prices them by multiplication, not a lookup each."""
    prices = _genai_prices()
    if prices is None or not model:
        return None
    rates = []
    for usage in (prices.Usage(input_tokens=1000), prices.Usage(output_tokens=1000)):  # below every tier
        try:
            result = prices.calc_price(usage, model, provider_id=_PROVIDERS.get(provider))
        except LookupError:  # a model genai-prices does not know (a fine-tune, a test double)
            return None
        rates.append(float(result.total_price) / 1000)
    return rates[0], rates[1]


def price(model: str, provider: str, input_tokens: int, output_tokens: int) -> float | None:
    """List-price dollars of a call (base-tier prices: long-context surcharges are not applied), or
    None when the model or its price is unknown, or the prices extra is not installed."""
    rates = _rates(model, provider)
    if rates is None:
        return None
    return input_tokens * rates[0] + output_tokens * rates[1]


def cost_of(entry: Entry, tokens: tuple[int, int] | None = None) -> float | None:
    """List-price dollars of the recorded call, or None when the price is unknown.

    ``tokens`` is ``tokens_of(entry)`` when the caller has it already.
    """
    body = entry.request.body
    model = body.get("model") if isinstance(body, dict) else None
    if not isinstance(model, str):
        return None
    inp, out = tokens if tokens is not None else tokens_of(entry)
    return price(model, entry.provider, inp, out)
