"""How llmvcr words numbers, money and paths in what it tells the user, the same in every message."""

from __future__ import annotations

import os


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 cassette``, ``2 cassettes``; ``many`` for irregular plurals (``entry``/``entries``)."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


def dollars(usd: float, priced: int, unpriced: int, at: str = "") -> str:
    """What calls cost: ``$0.0123{at}``, ``$0.0123{at}, 2 calls unpriced``, or ``unpriced`` when none
    had a known price (a model genai-prices does not know), never ``$0.0000`` for those."""
    if unpriced and not priced:
        return "unpriced"
    return f"${usd:.4f}{at}" + (f", {plural(unpriced, 'call')} unpriced" if unpriced else "")


def shown(path: str) -> str:
    """A path as the user would type it: relative to the current folder when it is below it."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative
