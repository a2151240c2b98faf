"""The three pages: cassettes (one, several or a folder), a failed replay, two cassettes compared.

>>> write_view(["tests/cassettes"], "report.html")      # an index, a row per cassette
>>> write_diff(load_cassette("a.yaml"), load_cassette("b.yaml"), "diff.html")
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import timedelta

from ..cassette import Cassette
from ..convert import JSON
from .cassettes import gather
from .compare import diff_data
from .page import redacted, write

DEFAULT_OUTPUT = "llmvcr-view.html"


def write_view(
    paths: Sequence[str], output: str = DEFAULT_OUTPUT, *, max_age: timedelta | None = None
) -> str:
    """Write one page for the cassettes at ``paths`` (files or folders, any format llmvcr reads);
    ``max_age`` marks the older ones expired. Returns the path written."""
    cassettes = [redacted(c, c["path"]) for c in gather(paths, max_age=max_age)]
    if len(cassettes) == 1 and "error" not in cassettes[0]:
        title = f"llmvcr · {cassettes[0]['name']}"
    else:
        title = f"llmvcr · {len(cassettes)} cassettes in {', '.join(os.path.normpath(p) for p in paths)}"
    return write(output, "cassettes", title, {"cassettes": cassettes})


def write_diff(a: Cassette, b: Cassette, output: str) -> str:
    """Write the side-by-side page of ``llmvcr diff A B --html``; returns the path written."""
    data = redacted(diff_data(a, b), f"{a.path} and {b.path}")
    return write(output, "diff", f"llmvcr · diff {os.path.basename(a.path)} {os.path.basename(b.path)}", data)


def write_divergences(divergences: list[JSON], cassettes: list[JSON], output: str) -> str:
    """Write the page of a run's failed replays (:mod:`llmvcr.view.report` gathers them), with the
    cassette of the first one drawn below; returns the path written."""
    items = [redacted(d, d["cassette"]) for d in divergences]
    shown = [redacted(c, c["path"]) for c in cassettes]
    tests = ", ".join(d["test"] for d in items if d["test"]) or "a replay"
    title = f"llmvcr · {tests} diverged" if len(items) == 1 else f"llmvcr · {len(items)} replays diverged"
    return write(output, "divergence", title, {"divergences": items, "cassettes": shown})
