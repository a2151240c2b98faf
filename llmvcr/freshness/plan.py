"""Re-recording, planned before it is paid for.

:class:`Plan` gathers what a replay-only run found (``pytest --llmvcr-plan``, or ``llmvcr plan``):
missing cassettes, divergences, expired cassettes and unplayed entries. It groups them by cause,
one cassette under its most serious cause, and estimates what recording each group again would
cost live, from the usage its cassettes recorded and list prices (``llmvcr.freshness.usage``).

:class:`Budget` (``--llmvcr-record-budget=USD``) lets cassettes record until the dollars recorded in
the run reach the budget. The check is made as a cassette opens, never during one, so a cassette is
recorded whole or not at all: the one that crosses the budget finishes, every later one that would
record is skipped and named in the summary with its estimated cost.
"""

from __future__ import annotations

import re
import shlex
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..cassette.values import Value
from ..errors import LLMVCRError, RecordBudgetSpent
from ..storage.files import load_cassette
from ..wording import plural, shown
from .budget import Tally, cassette_cost
from .check import Finding
from .usage import PRICES_HINT, prices_available

__all__ = ["CAUSES", "Budget", "Plan", "missing_path"]

# most serious first: a cassette is planned under the first cause it has
CAUSES = ("missing", "diverging", "expired", "failed", "unplayed")
_TITLES = {
    "missing": "missing cassettes (never recorded)",
    "diverging": "diverging cassettes (the code sends requests no entry answers)",
    "expired": "expired cassettes (older than max_age)",
    "failed": "cassettes whose test failed before using them (the test is the cause, not the cassette)",
    "unplayed": "cassettes with unplayed entries (the code no longer makes those calls)",
}
_MISSING = (re.compile(r"no cassette at (.+?), and record_mode"), re.compile(r"^(.+?): no such cassette"))


def missing_path(message: str) -> str | None:
    """The cassette a ``CassetteNotFoundError`` message names."""
    for pattern in _MISSING:
        found = pattern.search(message)
        if found:
            return found.group(1)
    return None


def _estimate(path: str) -> Tally | None:
    """What recording ``path`` again would cost, from the usage it recorded (None: no file to go by)."""
    try:
        return cassette_cost(load_cassette(path))
    except LLMVCRError:
        return None


def _money(tally: Tally | None) -> str:
    if tally is None:
        return "cost unknown (nothing recorded to go by)"
    if not prices_available():
        return f"{plural(tally.calls, 'call')}, {tally.tokens:,} tokens"
    return f"{plural(tally.calls, 'call')}, {tally.tokens:,} tokens, {_about(tally)}"


def _about(tally: Tally, at: str = "") -> str:
    """``~$0.0123{at}`` (with the calls left unpriced), or ``unpriced``: never ``~$0.0000`` for those."""
    cost = tally.dollars(at)
    return cost if cost == "unpriced" else "~" + cost


@dataclass(eq=False, repr=False)
class Item(Value):
    """A cassette the plan names, why, and the tests that use it."""

    path: str
    cause: str
    tests: set[str] = field(default_factory=set)
    detail: str = ""


class Plan:
    """What a replay-only run found, by cassette; :meth:`lines` is the plan."""

    def __init__(self) -> None:
        self.items: dict[str, Item] = {}
        self.failures: dict[str, str] = {}  # a test that failed on its own -> its exception, one line
        self._lock = threading.Lock()

    def test_failed(self, test: str, error: BaseException) -> None:
        """``test`` failed with an error of its own (not llmvcr's): its unused entries are no case for
        re-recording or pruning, the exception is the cause."""
        text = " ".join(str(error).split())
        text = text if len(text) <= 120 else text[:119] + "…"
        self.failures[test] = f"{type(error).__name__}: {text}" if text else type(error).__name__

    def add(self, cause: str, path: str, test: str, detail: str = "") -> None:
        with self._lock:
            item = self.items.get(path)
            if item is None or CAUSES.index(cause) < CAUSES.index(item.cause):
                item = Item(path, cause, set(item.tests) if item else set(), detail)
                self.items[path] = item
            if test:
                item.tests.add(test)

    def as_json(self) -> list[list[Any]]:
        """What a pytest-xdist worker hands its controller."""
        with self._lock:
            return [[i.path, i.cause, sorted(i.tests), i.detail] for i in self.items.values()]

    def merge(self, data: list[list[Any]]) -> None:
        for path, cause, tests, detail in data:
            for test in tests or [""]:
                self.add(cause, path, test, detail)

    def on_finding(self, finding: Finding) -> None:
        if finding.kind == "unplayed" and finding.test in self.failures:
            self.add("failed", finding.path, finding.test, self.failures[finding.test])
        elif finding.kind in ("expired", "unplayed"):
            self.add(finding.kind, finding.path, finding.test, finding.detail)

    def lines(self) -> list[str]:
        with self._lock:
            items = sorted(self.items.values(), key=lambda i: (CAUSES.index(i.cause), i.path))
        if not items:
            return ["llmvcr plan: every cassette replayed whole and in date; nothing to re-record"]
        out = [f"llmvcr plan: {plural(len(items), 'cassette')} to re-record or clean, by cause:"]
        total = Tally()
        unknown = 0
        for cause in CAUSES:
            group = [i for i in items if i.cause == cause]
            if group and cause == "failed":
                out += _failed_lines(group)
            elif group:
                costs = {i.path: (_estimate(i.path) if cause != "missing" else None) for i in group}
                unknown += sum(1 for t in costs.values() if t is None)
                total.merge(Tally().merge(*costs.values()))  # summed as the group line shows it
                out += _group_lines(cause, group, costs)
        if all(i.cause == "failed" for i in items):  # only tests that failed on their own: nothing to pay for
            return out
        dollars = f", {_about(total, ' at list price')}" if prices_available() else ""
        plus = f" plus {unknown} never recorded" if unknown else ""
        out.append(
            f"  total: {plural(total.calls, 'live call')}, {total.tokens:,} tokens{dollars}{plus}; "
            f"cap the spend with --llmvcr-record-budget=USD"
        )
        if not prices_available():
            out.append(f"  {PRICES_HINT}")
        return out


def _group_lines(cause: str, group: list[Item], costs: dict[str, Tally | None]) -> list[str]:
    """One cause's lines of the plan: its cassettes with their cost, and the command that records them."""
    known = (
        _money(Tally().merge(*costs.values())) if any(t is not None for t in costs.values()) else _money(None)
    )
    out = [f"  {_TITLES[cause]}: {len(group)}; re-recording: {known}"]
    for item in group[:10]:
        detail = f" [{item.detail}]" if item.detail else ""
        out.append(f"    {shown(item.path)}: {_money(costs[item.path])}{detail}")
    if len(group) > 10:
        out.append(f"    ... and {len(group) - 10} more")
    tests = sorted({t for i in group for t in i.tests})
    if tests:
        mode = "once" if cause == "missing" else "all"
        listed = " ".join(shlex.quote(t) for t in tests[:8]) + (" ..." if len(tests) > 8 else "")
        out.append(f"    record: pytest {listed} --llmvcr-record-mode={mode}")
        if cause == "unplayed":
            out.append("    or drop the unused entries for free: llmvcr prune PATH...")
    return out


def _failed_lines(group: list[Item]) -> list[str]:
    """Cassettes whose test failed with an error of its own: the exception, never a re-record or prune."""
    out = [f"  {_TITLES['failed']}: {len(group)}"]
    out += [f"    {shown(i.path)}: {', '.join(sorted(i.tests))} failed with {i.detail}" for i in group[:10]]
    if len(group) > 10:
        out.append(f"    ... and {len(group) - 10} more")
    tests = sorted({t for i in group for t in i.tests})
    listed = " ".join(shlex.quote(t) for t in tests[:8]) + (" ..." if len(tests) > 8 else "")
    out.append(f"    make them pass first (their cassettes may be fine; do not prune them): pytest {listed}")
    return out


@dataclass(eq=False, repr=False)
class Skipped(Value):
    """A test the record budget did not let record, and what recording it would have cost."""

    path: str
    test: str
    estimate: Tally | None


class Budget:
    """Lets cassettes record while the run's recorded dollars stay under ``usd`` (see the module)."""

    def __init__(self, usd: float, spent: Callable[[], float]) -> None:
        self.usd = usd
        self.spent = spent
        self.recorded: set[str] = set()
        self.skipped: list[Skipped] = []
        self._lock = threading.Lock()

    def gate(self, path: str, mode: str, exists: bool, test: str) -> None:
        """Before a cassette opens in ``mode``: ``RecordBudgetSpent`` when it would record and its
        estimated cost does not fit in what is left."""
        records = mode == "all" or (not exists and mode in ("once", "new_episodes")) or mode == "new_episodes"
        if not records:
            return
        estimate = _estimate(path) if exists and mode == "all" else None
        spent = self.spent()
        cost = estimate.usd if estimate is not None else 0.0
        if spent >= self.usd or spent + cost > self.usd:
            with self._lock:
                self.skipped.append(Skipped(path, test, estimate))
            left = max(self.usd - spent, 0.0)
            raise RecordBudgetSpent(
                f"{shown(path)}: not recorded: the record budget ${self.usd:.4f} has ${left:.4f} left and "
                f"recording it would cost {_money(estimate)}; raise --llmvcr-record-budget to record it"
            )
        with self._lock:
            self.recorded.add(path)

    def lines(self) -> list[str]:
        spent = self.spent()
        with self._lock:
            skipped = list(self.skipped)
            recorded = len(self.recorded)
        out = [
            f"llmvcr: record budget ${self.usd:.4f}: spent ${spent:.4f} recording "
            f"{plural(recorded, 'cassette')}; "
            f"skipped {len(skipped)} that would record"
            + (" (none half-written: the budget is checked before a cassette starts)" if skipped else "")
        ]
        out += [f"  skipped {shown(i.path)} ({i.test}): {_money(i.estimate)}" for i in skipped[:20]]
        if len(skipped) > 20:
            out.append(f"  ... and {len(skipped) - 20} more")
        return out
