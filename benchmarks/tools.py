"""A replayed ``@llmvcr.tool`` call against calling the tool's function directly.

``python -m benchmarks tools [--calls 500] [--rounds 9]``

Two tools, each called with ``--calls`` distinct arguments per round:

* ``save_note``: a side-effecting tool as agents have them, one row inserted into an SQLite file and
  committed. Replay returns the recorded result without running it, so the ratio says what replay
  costs against the effect it skips.
* ``add``: a pure function of two integers, so the ratio is the whole per-call cost of replay
  (binding the arguments, redacting, hashing, matching) against a bare Python call.

Rows: each body called directly; the decorated tool outside any cassette (a pass-through); the
decorated tool replayed from a cassette (``record_mode="none"``, recorded once beforehand). Each
figure is the median over rounds of the mean per call; rounds alternate the contenders.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import llmvcr


def make_tools(folder: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
    db = sqlite3.connect(os.path.join(folder, "notes.db"), check_same_thread=False)
    db.execute("create table notes (id integer primary key, title text, body text)")

    def save_note(title: str, body: str) -> dict[str, Any]:
        """Save a note; its id."""
        cursor = db.execute("insert into notes (title, body) values (?, ?)", (title, body))
        db.commit()
        return {"id": cursor.lastrowid, "title": title}

    def add(a: int, b: int) -> int:
        """The sum."""
        return a + b

    return save_note, add


def per_call(call: Callable[[int], Any], calls: int, cassette: str | None) -> float:
    """Mean microseconds per call over ``calls`` calls, inside ``cassette`` (replay-only) if given."""
    if cassette is None:
        start = time.perf_counter()
        for i in range(calls):
            call(i)
        return (time.perf_counter() - start) / calls * 1e6
    with llmvcr.use_cassette(cassette, record_mode="none"):
        start = time.perf_counter()
        for i in range(calls):
            call(i)
        elapsed = time.perf_counter() - start
    return elapsed / calls * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks tools")
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args(argv)
    folder = tempfile.mkdtemp(prefix="llmvcr-tools-")
    save_note, add = make_tools(folder)
    tools = {"save_note": (save_note, llmvcr.tool(save_note)), "add": (add, llmvcr.tool(add))}
    callers = {
        "save_note": lambda fn: lambda i: fn(f"note {i}", "a body of a few words " * 4),
        "add": lambda fn: lambda i: fn(i, 2 * i),
    }
    cassettes = {}
    for name, (_, decorated) in tools.items():
        cassettes[name] = os.path.join(folder, f"{name}.json")
        with llmvcr.use_cassette(cassettes[name], record_mode="all"):
            for i in range(args.calls):
                callers[name](decorated)(i)
    times: dict[tuple[str, str], list[float]] = {}
    for round_ in range(args.rounds):
        print(f"round {round_ + 1}/{args.rounds}", file=sys.stderr)
        for name, (plain, decorated) in tools.items():
            for kind, fn, cassette in (
                ("direct", plain, None),
                ("outside", decorated, None),
                ("replayed", decorated, cassettes[name]),
            ):
                times.setdefault((name, kind), []).append(per_call(callers[name](fn), args.calls, cassette))
    print("| tool | called directly | decorated, outside a cassette | replayed | replayed / direct |")
    print("|---|---|---|---|---|")
    for name in tools:
        direct, outside, replayed = (
            statistics.median(times[(name, k)]) for k in ("direct", "outside", "replayed")
        )
        print(
            f"| {name} | {direct:.2f} µs | {outside:.2f} µs ({outside / direct:.2f}x) | {replayed:.2f} µs "
            f"| {replayed / direct:.2f}x |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
