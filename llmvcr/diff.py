"""The structural diff shown when a live request has no recorded entry."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

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
