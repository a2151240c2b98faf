"""Token usage read from recorded responses, and what that usage costs at list price.

Prices come from ``genai-prices`` (kept by the pydantic team, updated as providers change them),
installed with the optional extra ``pip install 'pyllmvcr[prices]'``. The recorded usage is priced
as genai-prices itself reads it: its own usage extraction for the provider's response format (cache
reads and writes, reasoning tokens, long-context tiers), then its own price calculation. llmvcr
only finds where a response (or the events of a stream) reports its usage, and keeps no rate of its
own: a hand-kept one goes stale silently. Without the extra, tokens are still counted and dollars
are omitted (``cost_of`` returns None); :data:`PRICES_HINT` says how to get them.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

import orjson

from ..cassette import Entry
from ..wire import usage_keys

__all__ = ["PRICES_HINT", "CallUsage", "cost_of", "prices_available", "tokens_of", "usage_of"]

PRICES_HINT = (
    "dollars omitted: install llmvcr with its prices extra for them "
    "(pip install -e 'path/to/llmvcr[prices]', or a built wheel's [prices])"
)
_GOOGLE_MODEL = re.compile(r"/models/([^/:]+):")


class CallUsage(NamedTuple):
    """One recorded call's tokens and list-price dollars (``usd`` None: no known price)."""

    input_tokens: int
    output_tokens: int
    usd: float | None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _merge(found: dict[str, Any], usage: dict[str, Any], model: str | None) -> str | None:
    """Add the usage one body or event reports (later values win: stream counts are cumulative);
    the model it names when none was found before."""
    part = found.get("usage")
    if part is None:
        part = found.get("usageMetadata")  # Gemini's
    if isinstance(part, dict):
        usage.update((k, v) for k, v in part.items() if v is not None)
    if model is None:
        name = found.get("model") or found.get("modelVersion")
        model = name if isinstance(name, str) else None
    return model


def _recorded(entry: Entry) -> tuple[str | None, dict[str, Any]]:
    """The model and the usage the recorded response reports, a stream's events merged into one."""
    response = entry.response
    usage: dict[str, Any] = {}
    model: str | None = None
    if response.stream is not None:
        parts: Any = [event.get("data") for event in response.stream if isinstance(event, dict)]
    else:
        body = response.body
        parts = body if isinstance(body, list) else (body,)  # a Gemini stream kept as one JSON array
    for data in parts:
        if not isinstance(data, dict):
            continue  # "[DONE]"
        model = _merge(data, usage, model)
        # Anthropic's message_start, OpenAI Responses' response.* events: the usage one level down
        inner = data.get("message") or data.get("response")
        if isinstance(inner, dict):
            model = _merge(inner, usage, model)
    return model, usage


def _tokens(usage: Mapping[str, Any]) -> tuple[int, int]:
    """(input, output) tokens in any provider's usage: Anthropic's cache reads and writes are
    input tokens it reports apart; Gemini's thoughts are output it reports apart."""
    inp = _int(usage.get("input_tokens", usage.get("prompt_tokens", usage.get("promptTokenCount"))))
    inp += _int(usage.get("cache_creation_input_tokens")) + _int(usage.get("cache_read_input_tokens"))
    out = _int(usage.get("output_tokens", usage.get("completion_tokens", usage.get("candidatesTokenCount"))))
    out += _int(usage.get("thoughtsTokenCount"))
    return inp, out


def tokens_of(entry: Entry) -> tuple[int, int]:
    """(input, output) tokens the recorded response reports, streamed or not."""
    return _tokens(_recorded(entry)[1])


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


def _flavor(entry: Entry) -> tuple[str, tuple[str, ...], str, str]:
    """genai-prices' provider id and the API flavors to read the entry's usage as, with the keys its
    extractor reads the model and the usage from. A provider registered by the user (``groq``,
    ``mistral``) is looked up under its own name: genai-prices knows many."""
    return entry.provider, *usage_keys(entry.provider, entry.request.path)


@functools.lru_cache(maxsize=4096)
def _price(
    provider: str, flavors: tuple[str, ...], model_key: str, usage_key: str, model: str, usage: bytes
) -> float | None:
    """genai-prices' price of one usage record, asked once per distinct (provider, model, usage): a
    replay of thousands of entries repeats the same few."""
    prices = _genai_prices()
    document = {model_key: model, usage_key: orjson.loads(usage)}
    try:
        extracted = prices.extract_usage(document, provider_id=provider, api_flavor=flavors[0])
        return float(extracted.calc_price().total_price)
    except LookupError:  # a provider or a model it does not know (a fine-tune, a test double)
        return None
    except ValueError:  # not this flavor's usage record (or no flavor of that name): try the next
        return _price(provider, flavors[1:], model_key, usage_key, model, usage) if flavors[1:] else None


def _request_model(entry: Entry) -> str | None:
    """The model the request named, for a response that does not name it."""
    body = entry.request.body
    model = body.get("model") if isinstance(body, Mapping) else None
    if isinstance(model, str):
        return model
    found = _GOOGLE_MODEL.search(entry.request.path)
    return found.group(1) if found else None


def usage_of(entry: Entry) -> CallUsage:
    """Tokens and list-price dollars of the recorded call, read once.

    ``usd`` is None when the prices extra is not installed, or when the response reports usage that
    genai-prices cannot price (a model or a format it does not know); a response that reports no
    usage (an error, an embedding without it) costs nothing to replay and is 0.0.
    """
    model, usage = _recorded(entry)
    inp, out = _tokens(usage)
    if not prices_available():
        return CallUsage(inp, out, None)
    if not usage:
        return CallUsage(inp, out, 0.0)
    model = model or _request_model(entry)
    if model is None:
        return CallUsage(inp, out, None)
    try:
        key = orjson.dumps(usage, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # a value JSON cannot hold, so no price list reads it either
        return CallUsage(inp, out, None)
    return CallUsage(inp, out, _price(*_flavor(entry), model, key))


def cost_of(entry: Entry) -> float | None:
    """List-price dollars of the recorded call, or None when its price is unknown (see :func:`usage_of`)."""
    return usage_of(entry).usd
