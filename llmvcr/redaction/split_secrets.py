"""Secrets split across stream events: a key a model repeats arrives a few characters per delta.

Each event is redacted on its own first; then the text pieces that one stream builds up (every
``delta.text`` of an Anthropic stream, every ``choices[0].delta.content`` of an OpenAI one) are
joined, searched again, and a secret that crosses pieces is replaced: the first piece it touches
gets the marker, the others lose their share of it, so the replayed text reads as redacted.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterator
from itertools import accumulate
from typing import Any

# Keys whose string values a stream concatenates into the message (text, tool input, reasoning).
TEXT_KEYS = frozenset({"text", "content", "delta", "partial_json", "thinking", "arguments"})

Span = tuple[int, int, str]  # start, end, kind


def redact_across(events: list[dict[str, Any]], spans: Callable[[str], list[Span]]) -> None:
    """Replace, in place, each secret ``spans`` finds that crosses the pieces of one text run."""
    runs: dict[tuple[Any, ...], list[tuple[dict[str, Any], str]]] = {}
    for event in events:
        data = event.get("data")
        if isinstance(data, dict):
            for owner, key, signature in _pieces(data, ()):
                runs.setdefault(signature, []).append((owner, key))
    for pieces in runs.values():
        if len(pieces) > 1:
            _redact_run(pieces, spans)


def _pieces(node: Any, path: tuple[Any, ...]) -> Iterator[tuple[dict[str, Any], str, tuple[Any, ...]]]:
    """Each text piece in an event's data: its dict, its key, and the path that names its run."""
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(value, str) and key in TEXT_KEYS:
                yield node, key, (*path, key)
            elif isinstance(value, (dict, list)):
                yield from _pieces(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _pieces(value, (*path, i))


def _redact_run(pieces: list[tuple[dict[str, Any], str]], spans: Callable[[str], list[Span]]) -> None:
    texts = [owner[key] for owner, key in pieces]
    starts = list(accumulate((len(t) for t in texts), initial=0))
    crossing = []
    for start, end, kind in spans("".join(texts)):
        first, last = bisect_right(starts, start) - 1, bisect_right(starts, end - 1) - 1
        if first != last:  # inside one piece, the event's own redaction already replaced it
            crossing.append((start, end, kind, first, last))
    # last first, so that an edit never moves the text an earlier secret is found at
    for start, end, kind, first, last in sorted(crossing, reverse=True):
        for i in range(first, last + 1):
            lo, hi = max(start, starts[i]) - starts[i], min(end, starts[i + 1]) - starts[i]
            marker = f"<REDACTED:{kind}>" if i == first else ""
            texts[i] = texts[i][:lo] + marker + texts[i][hi:]
    for (owner, key), text in zip(pieces, texts, strict=True):
        owner[key] = text
