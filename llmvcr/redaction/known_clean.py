"""Long strings already found to hold nothing to redact: a prompt sent on every call is scanned once.

The redaction check of a request body scans its JSON text for key shapes and known credentials.
In a suite, most of that text is the same system prompt or tool list on every call; scanning it
again each time was most of the check. A string of ``LONG`` characters or more that a check
found clean is remembered with the credentials (``needles``) it was checked against; the next
body that holds it is scanned without it. Shapes depend on the text alone, credentials on the
session, so a string counts as known only when every needle of the session now is among those it
was checked against (two clients' keys in one test, one key in the next). The remembered text is
bounded.
"""

from __future__ import annotations

import threading
from typing import Any

LONG = 512  # shorter strings cost less to scan than to look up
_MAX_CHARS = 8 << 20  # remembered text, at most; then forgotten all at once

Needles = frozenset[str]

_clean: dict[str, Needles] = {}
_chars = 0
_lock = threading.Lock()


def split(node: Any, needles: Needles, small: list[Any], unknown: list[str]) -> None:
    """Sort the strings of a JSON tree: long ones not known clean into ``unknown``, the rest
    (short strings and every key) into ``small``; long ones known clean against ``needles`` are left out."""
    stack = [node]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            if len(node) < LONG:
                small.append(node)
            else:
                checked = _clean.get(node)
                if checked is None or not needles <= checked:
                    unknown.append(node)
        elif isinstance(node, dict):
            small.append(list(node))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def remember(strings: list[str], needles: Needles) -> None:
    """``strings`` were scanned against ``needles`` and hold nothing to redact."""
    global _chars
    with _lock:
        for text in strings:
            if len(text) > _MAX_CHARS // 16:
                continue  # a huge string is cheaper to scan again than to keep
            if _chars + len(text) > _MAX_CHARS:
                _clean.clear()
                _chars = 0
            checked = _clean.get(text)
            if checked is None:
                _chars += len(text)
            _clean[text] = needles if checked is None else needles | checked


def remembered() -> int:
    """How many characters of clean text are remembered now."""
    return _chars


def forget() -> None:
    """Drop every remembered string (tests; a process that changed what counts as a secret)."""
    global _chars
    with _lock:
        _clean.clear()
        _chars = 0
