"""Usage and list-price cost per test: what replay saved (entries served from cassettes) and what
recording spent (entries recorded live), for the pytest summary and the JSON a CI job keeps
(``--llmvcr-usage-json=PATH``).

>>> ledger = Ledger()
>>> _active.add_listener(ledger.on_session)    # the pytest plugin does this
>>> ledger.as_json()["tests"][0]["recorded"]   # {"calls": 2, "input_tokens": ..., "usd": 0.0012}
"""

from __future__ import annotations

import importlib.metadata
import json
import threading
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from ..cassette import Cassette, Entry
from ..cassette.values import Value
from ..faults import NOT_LLM
from ..session import Session
from ..storage.writer import atomic_write
from ..wording import dollars, plural
from .usage import PRICES_HINT, prices_available, usage_of

__all__ = ["Ledger", "Tally", "cassette_cost", "recorded_entries"]


@dataclass(eq=False, repr=False)
class Tally(Value):
    """Calls, tokens and list-price dollars; ``unpriced`` calls had no known price."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    usd: float = 0.0
    unpriced: int = 0

    def add(self, entries: Iterable[Entry]) -> Tally:
        for entry in entries:
            inp, out, dollars = usage_of(entry)
            self.calls += 1
            self.input_tokens += inp
            self.output_tokens += out
            if dollars is None:
                self.unpriced += 1
            else:
                self.usd += dollars
        return self

    def merge(self, *others: Tally | None) -> Tally:
        """Add ``others`` to this tally (None: nothing known to add) and return it."""
        for other in filter(None, others):
            for name in ("calls", "input_tokens", "output_tokens", "usd", "unpriced"):
                setattr(self, name, getattr(self, name) + getattr(other, name))
        return self

    def dollars(self, at: str = "") -> str:
        """``$0.0123{at}``, with the calls left unpriced, or ``unpriced`` when none had a price."""
        return dollars(self.usd, self.calls - self.unpriced, self.unpriced, at)

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def as_json(self, priced: bool) -> dict[str, Any]:
        data: dict[str, Any] = asdict(self)
        data["usd"] = round(self.usd, 10) if priced else None
        return data


def recorded_entries(cassette: Cassette) -> list[Entry]:
    """The entries a session recorded: those after the ones its file held when it opened."""
    return [cassette.entry(i) for i in range(cassette.loaded_count, len(cassette))]


def cassette_cost(cassette: Cassette) -> Tally:
    """What recording every entry of ``cassette`` again would cost, from its recorded usage."""
    return Tally().add(cassette.entry(i) for i in range(len(cassette)))


@dataclass(eq=False, repr=False)
class PerTest(Value):
    """One test's tokens and list-price cost, replayed and recorded."""

    test: str
    replayed: Tally = field(default_factory=Tally)
    recorded: Tally = field(default_factory=Tally)


class Ledger:
    """Follows every session of a run and adds its usage to the test running at the time."""

    def __init__(self) -> None:
        self.test = ""
        self.per_test: dict[str, PerTest] = {}
        self.prices_hint = True  # off once the project has been told (the pytest cache remembers)
        self._lock = threading.Lock()

    def on_session(self, session: Session, event: str) -> None:
        if event != "exit":
            return
        replayed = Tally().add(e for e in session.served if e.provider not in NOT_LLM)
        fresh = recorded_entries(session.cassette) if session.recorded else []
        recorded = Tally().add(e for e in fresh if e.provider not in NOT_LLM)
        with self._lock:
            name = self.test or "(outside tests)"
            row = self.per_test.setdefault(name, PerTest(name))
            row.replayed.merge(replayed)
            row.recorded.merge(recorded)

    def spent(self) -> float:
        """List-price dollars recorded live so far in this run."""
        with self._lock:
            return sum(row.recorded.usd for row in self.per_test.values())

    # -- reporting -----------------------------------------------------------------------------------
    def as_json(self) -> dict[str, Any]:
        """The document ``--llmvcr-usage-json`` writes (and a pytest-xdist worker hands over)."""
        priced = prices_available()
        with self._lock:
            rows = sorted(self.per_test.values(), key=lambda r: r.test)
            replayed = Tally().merge(*(r.replayed for r in rows))
            recorded = Tally().merge(*(r.recorded for r in rows))
        return {
            "version": 1,
            "prices": _prices_version() if priced else None,
            "tests": [_row(r, priced) for r in rows if r.replayed.calls or r.recorded.calls],
            "totals": _row(PerTest("", replayed, recorded), priced),
        }

    def merge(self, data: dict[str, Any]) -> None:
        with self._lock:
            for raw in data.get("tests", []):
                row = self.per_test.setdefault(raw["test"], PerTest(raw["test"]))
                for kind in ("replayed", "recorded"):
                    values = {k: (v or 0) for k, v in raw[kind].items()}
                    getattr(row, kind).merge(Tally(**values))

    def write(self, path: str) -> None:
        """Write :meth:`as_json` to ``path`` atomically."""
        atomic_write(path, (json.dumps(self.as_json(), indent=1) + "\n").encode("utf-8"))

    def lines(self) -> list[str]:
        """What recording spent, per test (most expensive first), and how to get dollars when unpriced."""
        with self._lock:
            rows = [r for r in self.per_test.values() if r.recorded.calls]
            any_tokens = any(r.replayed.tokens or r.recorded.tokens for r in self.per_test.values())
        priced = prices_available()
        out: list[str] = []
        if rows:
            total = Tally().merge(*(r.recorded for r in rows))
            at = " at list price"
            cost = f" ({total.dollars(at)})" if priced and (total.usd or total.unpriced) else ""
            live = plural(total.calls, "live call")
            out.append(f"llmvcr: recording spent {total.tokens:,} tokens in {live}{cost}, per test:")
            rows.sort(key=lambda r: (-r.recorded.usd, -r.recorded.tokens, r.test))
            for r in rows[:10]:
                cost = f", {r.recorded.dollars()}" if priced else ""
                calls = plural(r.recorded.calls, "call")
                out.append(f"  {r.test}: {calls}, {r.recorded.tokens:,} tokens{cost}")
            if len(rows) > 10:
                out.append(f"  ... and {len(rows) - 10} more tests")
        if any_tokens and not priced and self.prices_hint:
            out.append(f"llmvcr: {PRICES_HINT}")
        return out


def _row(row: PerTest, priced: bool) -> dict[str, Any]:
    data = {"replayed": row.replayed.as_json(priced), "recorded": row.recorded.as_json(priced)}
    return {"test": row.test, **data} if row.test else data


def _prices_version() -> str:
    try:
        return f"genai-prices {importlib.metadata.version('genai-prices')}"
    except importlib.metadata.PackageNotFoundError:
        return "genai-prices"
