"""The structural diff shown when a live request has no recorded entry, and the message around it."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

from ..cassette import Cassette
from ..cassette.entries import Entry, Request
from ..errors import ReplayDivergence

DiffRow = tuple[str, Any, Any]
_MISSING = "<missing>"


def structural_diff(recorded: Any, live: Any, prefix: str = "request") -> list[DiffRow]:
    """Every path where two JSON trees differ, with the recorded and the live value."""
    rows: list[DiffRow] = []
    _walk(recorded, live, prefix, rows)
    return rows


def _walk(a: Any, b: Any, path: str, rows: list[DiffRow]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            _walk(a.get(key, _MISSING), b.get(key, _MISSING), f"{path}.{key}", rows)
    elif isinstance(a, list) and isinstance(b, list):
        for i in range(max(len(a), len(b))):
            _walk(a[i] if i < len(a) else _MISSING, b[i] if i < len(b) else _MISSING, f"{path}[{i}]", rows)
    elif a != b or type(a) is not type(b):
        rows.append((path, a, b))


def shorten_pair(a: str, b: str, width: int = 60) -> tuple[str, str]:
    """Shorten two long strings around their first difference."""
    if len(a) <= width and len(b) <= width:
        return a, b
    first = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    start = max(0, first - width // 3)

    def cut(s: str) -> str:
        piece = s[start : start + width]
        return ("…" if start else "") + piece + ("…" if start + width < len(s) else "")

    return cut(a), cut(b)


def _show(value: Any) -> str:
    return _MISSING if value is _MISSING or value == _MISSING else repr(value)


def format_rows(rows: Iterable[DiffRow], limit: int = 20) -> str:
    lines = []
    rows = list(rows)
    for path, recorded, live in rows[:limit]:
        if isinstance(recorded, str) and isinstance(live, str) and recorded != _MISSING and live != _MISSING:
            recorded, live = shorten_pair(recorded, live)
        text_r = _show(recorded)
        text_l = _show(live)
        if len(text_r) > 200:
            text_r = text_r[:200] + "…"
        if len(text_l) > 200:
            text_l = text_l[:200] + "…"
        lines.append(f"  {path}: recorded {text_r} != live {text_l}")
    if len(rows) > limit:
        lines.append(f"  … and {len(rows) - limit} more differing paths")
    return "\n".join(lines)


def nearest_diff(
    entries: Iterable[Entry], normalised: dict[str, Any], prepare: Callable[[dict[str, Any]], Any]
) -> tuple[list[DiffRow], Entry | None]:
    """The recorded request on the same endpoint with the fewest differing paths (on a miss only).

    ``prepare`` is the fingerprinter's view (ignored paths dropped, placeholders put in), so the
    rows show only what matching saw.
    """
    best: tuple[int, list[DiffRow], Entry] | None = None
    live = prepare(normalised)
    for entry in entries:
        if entry.request.method != normalised["method"] or entry.request.path != normalised["path"]:
            continue
        rows = structural_diff(prepare(entry.request.normalised()), live)
        rows = [r for r in rows if not r[0].startswith("request.headers")] or rows
        if not rows:  # identical but already played
            rows = [("request", "(already played: each entry serves one call)", "(the same request again)")]
        if best is None or len(rows) < best[0]:
            best = (len(rows), rows, entry)
    return (best[1], best[2]) if best else ([], None)


def divergence_message(
    path: str,
    provider: str,
    request: Request,
    rows: list[DiffRow],
    nearest: Entry | None,
    record_mode: str,
    mode: str,
    cassette: Cassette,
) -> str:
    """What ``ReplayDivergence`` says: the file, the call, the diff, and how to re-record."""
    count = len(cassette)
    if cassette.read_only and not count and not os.path.lexists(path):  # never recorded: how to record it
        return f"llmvcr: {cassette.read_only}"
    head = (
        f"llmvcr: no recorded entry in {path} answers {provider} {request.method} {request.path} "
        f"(record_mode={record_mode!r}, mode={mode!r})."
    )
    if nearest is None:
        body = f"\nThe cassette holds no {request.method} {request.path} request ({count} entries in all)."
    else:
        body = "\nNearest recorded request differs at:\n" + format_rows(rows)
    hint = (
        f"\nTo re-record it: run again with record_mode='all', which rewrites {path} "
        f"(pytest: -k <test> --llmvcr-record-mode=all); 'new_episodes' appends instead and leaves "
        f"the stale entry unplayed. To tolerate volatile fields, see ignore= and match_on=."
    )
    if cassette.read_only:  # another recorder's file: re-recording starts with converting it
        hint = f"\n{cassette.read_only}"
    return head + body + hint


def divergence(
    path: str,
    provider: str,
    request: Request,
    normalised: dict[str, Any],
    cassette: Cassette,
    prepare: Callable[[dict[str, Any]], Any],
    record_mode: str,
    mode: str,
) -> ReplayDivergence:
    """The error for a request no entry answers, with the diff against the nearest recorded one."""
    rows, nearest = nearest_diff(cassette.entries, normalised, prepare)
    message = divergence_message(path, provider, request, rows, nearest, record_mode, mode, cassette)
    return ReplayDivergence(message, cassette_path=path, diff=rows, request=request, nearest=nearest)
