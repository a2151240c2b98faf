"""Two requests side by side, as the page draws them: a replay's live request beside the nearest
recorded one (``ReplayDivergence``), or two cassettes entry by entry (``llmvcr diff A B --html``).

The changed paths are :func:`llmvcr.matching.diff.structural_diff`'s rows, the ones the error message and
``llmvcr diff`` print; the text inside a changed string is diffed word by word here.
"""

from __future__ import annotations

import difflib
import os
import re
from typing import Any

from ..cassette import Cassette, Entry
from ..convert import JSON
from ..errors import ReplayDivergence
from ..matching.diff import DiffRow, structural_diff

MISSING = "<missing>"  # what structural_diff gives for a path one side lacks
WORD_LIMIT = 20_000  # tokens on both sides past which a changed text is shown whole, not word by word
_TOKENS = re.compile(r"\s+|\w+|[^\w\s]")


def word_diff(left: str, right: str) -> list[list[str]]:
    """``[[op, text], ...]`` with op ``=`` (both), ``-`` (left only) or ``+`` (right only), by word."""
    a, b = _TOKENS.findall(left), _TOKENS.findall(right)
    if len(a) + len(b) > WORD_LIMIT:
        return [["-", left], ["+", right]]
    segments: list[list[str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            segments.append(["=", "".join(a[i1:i2])])
            continue
        if i2 > i1:
            segments.append(["-", "".join(a[i1:i2])])
        if j2 > j1:
            segments.append(["+", "".join(b[j1:j2])])
    return segments


def comparison(
    left: Any, right: Any, rows: list[DiffRow], root: str, labels: tuple[str, str, str, str]
) -> JSON:
    """What the page's side-by-side view draws: both trees, the changed paths, the changed words.

    ``labels``: the two sides' headings, then their short names for the table of paths.
    """
    words = {
        path: word_diff(a, b)
        for path, a, b in rows
        if isinstance(a, str) and isinstance(b, str) and MISSING not in (a, b)
    }
    return {
        "root": root,
        "left": left,
        "right": right,
        "rows": [[path, a, b] for path, a, b in rows],
        "words": words,
        "left_label": labels[0],
        "right_label": labels[1],
        "left_short": labels[2],
        "right_short": labels[3],
    }


def entry_tree(entry: Entry) -> JSON:
    """An entry as ``llmvcr diff`` compares it: stream arrival offsets left out (they always differ)."""
    res = entry.response
    response: JSON = {"status": res.status, "headers": dict(res.headers)}
    if res.stream is not None:
        response["stream"] = [{k: v for k, v in event.items() if k != "t"} for event in res.stream]
    else:
        response["body"] = res.body
    response.update({"truncated": res.truncated, "failure": res.failure})
    return {"provider": entry.provider, "request": entry.request.normalised(), "response": response}


def diff_data(a: Cassette, b: Cassette) -> JSON:
    """Two cassettes entry by entry, for ``llmvcr diff A B --html``."""
    names = (a.path or "A", b.path or "B")
    pairs: list[JSON] = []
    for i in range(max(len(a), len(b))):
        left = entry_tree(a.entry(i)) if i < len(a) else None
        right = entry_tree(b.entry(i)) if i < len(b) else None
        only = "B" if left is None else "A" if right is None else None
        if only is None:
            rows = structural_diff(left, right, prefix=f"[{i}]")
        else:  # one side has nothing: the whole entry is the change
            rows = [
                (f"[{i}]", MISSING if left is None else "(entry)", MISSING if right is None else "(entry)")
            ]
        if not rows:
            pairs.append({"i": i, "same": True})
            continue
        labels = (f"A: {names[0]} [{i}]", f"B: {names[1]} [{i}]", "A", "B")
        compared = comparison(left, right, rows, f"[{i}]", labels)
        pairs.append({"i": i, "same": False, "only": only, "compare": compared})
    return {"a": names[0], "b": names[1], "a_count": len(a), "b_count": len(b), "pairs": pairs}


def _position(cassette: Cassette | None, entry: Entry | None) -> int | None:
    if cassette is None or entry is None:
        return None
    for i in range(len(cassette)):
        if cassette.stored_hash(i) == entry.request_hash:
            return i
    return None


def divergence_data(err: ReplayDivergence, test: str, cassette: Cassette | None) -> JSON:
    """One failed replay: the live request beside the nearest recorded one, with what changed."""
    live = err.request.normalised() if err.request is not None else None
    nearest: Entry | None = err.nearest
    recorded = nearest.request.normalised() if nearest is not None else None
    position = _position(cassette, nearest)
    where = os.path.basename(err.cassette_path) or "the cassette"
    labels = (
        f"recorded: {where} entry #{position}" if position is not None else f"recorded: nearest in {where}",
        "live: the request the code sent",
        "recorded",
        "live",
    )
    return {
        "test": test,
        "cassette": err.cassette_path,
        "message": str(err),
        "entry": position,
        "compare": comparison(recorded, live, list(err.diff), "request", labels),
    }
