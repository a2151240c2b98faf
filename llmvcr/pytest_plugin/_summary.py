"""The end-of-run line: what replay saved, what was recorded, what no test used, which HTTP calls
went out unrecorded because no provider claims them, and which calls a vcrpy or pytest-recording
cassette answered as its recorder matched them (method and URI) although their request differs from
the recording: staleness is shown, never hidden, with the command that re-records it.

Counted per test from each session as it ends; pytest-xdist workers hand their counts to the
controller (``as_json``/``merge``), so ``pytest -n 2`` prints the same summary as a serial run.
"""

from __future__ import annotations

import shlex
import threading
from collections import Counter
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ..cassette.values import Value
from ..freshness.budget import Ledger, recorded_entries
from ..freshness.check import Finding, unplayed_policy
from ..freshness.plan import Plan
from ..freshness.usage import prices_available, usage_of
from ..matching.as_recorded import describe
from ..matching.diff import format_rows
from ..providers.tool import TOOL
from ..session import Session
from ..storage.files import convert_command
from ..wire import mcp as mcp_wire
from ..wording import dollars, plural, shown


@dataclass(eq=False, repr=False)
class StaleCassette(Value):
    """One cassette's drifted calls, summed over the tests (and pytest-xdist workers) that used it."""

    calls: int = 0
    tests: list[str] = field(default_factory=list)
    example: str = ""  # the first difference, as the divergence diff shows it
    foreign: bool = False  # another tool's file read in place: re-recording starts with converting it
    matched_on: str = ""

    def add(self, session: Session, test: str) -> None:
        self.calls += len(session.stale)
        if test not in self.tests:
            self.tests.append(test)
        if not self.example:
            self.example = format_rows(session.stale[0].rows, limit=1).strip().splitlines()[0]
        self.foreign = session.cassette.read_only is not None
        self.matched_on = describe(session.recorded_match_on or ())

    def merge(self, other: StaleCassette) -> None:
        self.calls += other.calls
        self.tests += [t for t in other.tests if t not in self.tests]
        self.example = self.example or other.example
        self.foreign = self.foreign or other.foreign
        self.matched_on = self.matched_on or other.matched_on


def stale_lines(stale: dict[str, StaleCassette]) -> list[str]:
    """The summary's lines for the drifted calls, per cassette (at most ten cassettes shown)."""
    if not stale:
        return []
    total = sum(s.calls for s in stale.values())
    out = [
        f"  {plural(total, 'call')} replayed as recorded although the request differs from the recording, "
        f"in {plural(len(stale), 'cassette')} (--llmvcr-fail-on-stale makes each a failure):"
    ]
    for path, s in sorted(stale.items())[:10]:
        tests = " ".join(shlex.quote(t) for t in sorted(s.tests))
        out.append(f"    {shown(path)}: {plural(s.calls, 'call')} ({s.matched_on}), {s.example}")
        out.append(f"      see each difference: pytest {tests} --llmvcr-fail-on-stale")
        again = f"pytest {tests} --llmvcr-record-mode=all"
        if s.foreign:
            again = f"{convert_command(shown(path))} && {again}"  # the command ForeignCassetteError gives
        out.append(f"      re-record: {again}")
    if len(stale) > 10:
        out.append(f"    ... and {len(stale) - 10} more")
    return out


@dataclass(eq=False, repr=False)
class TestCounts(Value):
    """One test's calls and cassettes, as the end-of-run line adds them up."""

    test: str = ""
    replayed: int = 0
    recorded: int = 0
    writes: int = 0
    unplayed: int = 0
    unrecorded: int = 0  # HTTP calls no provider claims, let through by a recording cassette
    tokens: int = 0
    dollars: float = 0.0
    priced: int = 0  # replayed calls with a list price
    unpriced: int = 0  # replayed calls whose usage genai-prices cannot price (a model it does not know)
    tools_replayed: int = 0  # of replayed: calls of an @llmvcr.tool
    tools_recorded: int = 0  # of recorded: calls of an @llmvcr.tool
    mcp_replayed: int = 0  # of ``replayed`` and ``recorded``: MCP requests (``provider: mcp``), not LLM calls
    mcp_recorded: int = 0


_COUNTS = [f.name for f in fields(TestCounts) if f.name != "test"]  # what the workers' rows add up


@dataclass(eq=False, repr=False)
class RunSummary(Value):
    """What the run's sessions did, for the end-of-run lines (merged across pytest-xdist workers)."""

    per_test: dict[str, TestCounts] = field(default_factory=dict)
    written: set[str] = field(default_factory=set)
    unplayed: dict[str, int] = field(default_factory=dict)  # cassette path -> entries no call used
    unrecorded: dict[str, dict[str, int]] = field(default_factory=dict)  # cassette path -> host -> calls
    empty: set[str] = field(default_factory=set)  # cassettes that recorded nothing while calls went out
    nothing: set[str] = field(default_factory=set)  # tests whose marker cassette recorded no call, so no file
    findings: list[Finding] = field(default_factory=list)  # expired, undated, not fully played (freshness)
    # cassette path -> calls replayed as recorded although their request drifted (see StaleCassette)
    stale: dict[str, StaleCassette] = field(default_factory=dict)
    users: dict[str, set[str]] = field(default_factory=dict)  # cassette path -> the tests that used it
    failed: set[str] = field(default_factory=set)  # tests that failed: their cassettes are not pruned
    ignored_options: set[str] = field(default_factory=set)  # vcrpy options llmvcr_config held, and why
    usage: Ledger = field(default_factory=Ledger)  # tokens and dollars per test (--llmvcr-usage-json)
    plan: Plan | None = None  # what a replay-only run found (--llmvcr-plan)
    test: str = ""  # the test running now
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def on_session(self, session: Session, event: str) -> None:
        if event != "exit":
            return
        unplayed = len(session.cassette.unplayed)
        with self.lock:
            name = self.test or "(outside tests)"
            row = self.per_test.setdefault(name, TestCounts(name))
            row.replayed += session.replayed
            row.recorded += session.recorded
            served = Counter(entry.provider for entry in session.served)  # one pass: calls by kind
            row.tools_replayed += served[TOOL]
            row.mcp_replayed += served[mcp_wire.NAME]
            if session.recorded:
                new = Counter(e.provider for e in recorded_entries(session.cassette))
                row.tools_recorded += new[TOOL]
                row.mcp_recorded += new[mcp_wire.NAME]
            row.writes += session.writes
            row.unplayed += unplayed
            if session.unrecorded:
                row.unrecorded += sum(session.unrecorded.values())
                self._add_hosts(session.path, session.unrecorded)
                if not session.writes and not session.cassette.entries:
                    self.empty.add(session.path)
            priced = prices_available()
            for entry in session.served:
                inp, out, usd = usage_of(entry)
                row.tokens += inp + out
                if usd is not None:
                    row.dollars += usd
                    row.priced += 1
                elif priced:  # without the prices extra, PRICES_HINT says so once instead
                    row.unpriced += 1
            if session.path and session.persist:
                self.users.setdefault(session.path, set()).add(name)
            if session.wrote_nothing and session.quiet_when_empty:
                self.nothing.add(name)
            if session.stale:
                self.stale.setdefault(session.path, StaleCassette()).add(session, name)
            if session.writes:
                self.written.add(session.path)
            if session.path and session.persist:
                if unplayed and unplayed_policy(session) != "ignore":  # accepted: never offered to prune
                    self.unplayed[session.path] = unplayed
                else:
                    self.unplayed.pop(session.path, None)

    def as_json(self) -> dict[str, Any]:
        """What a pytest-xdist worker sends its controller: every end-of-run report in one."""
        return {
            "usage": self.usage.as_json(),
            "plan": self.plan.as_json() if self.plan is not None else [],
            "per_test": [asdict(r) for r in self.per_test.values()],
            "written": sorted(self.written),
            "unplayed": self.unplayed,
            "unrecorded": self.unrecorded,
            "empty": sorted(self.empty),
            "nothing": sorted(self.nothing),
            "findings": [asdict(f) for f in self.findings],
            "stale": {path: asdict(s) for path, s in self.stale.items()},
            "users": {path: sorted(tests) for path, tests in self.users.items()},
            "failed": sorted(self.failed),
            "ignored_options": sorted(self.ignored_options),
        }

    def merge(self, data: dict[str, Any]) -> None:
        self.usage.merge(data.get("usage", {}))
        if self.plan is not None:
            self.plan.merge(data.get("plan", []))
        with self.lock:
            for raw in data.get("per_test", []):
                mine = self.per_test.setdefault(raw["test"], TestCounts(raw["test"]))
                for key in _COUNTS:
                    setattr(mine, key, getattr(mine, key) + raw[key])
            self.written.update(data.get("written", []))
            self.unplayed.update(data.get("unplayed", {}))
            for path, hosts in data.get("unrecorded", {}).items():
                self._add_hosts(path, hosts)
            self.empty.update(data.get("empty", []))
            self.nothing.update(data.get("nothing", []))
            self.findings += [Finding(**raw) for raw in data.get("findings", [])]
            for path, raw_stale in data.get("stale", {}).items():
                self.stale.setdefault(path, StaleCassette()).merge(StaleCassette(**raw_stale))
            for path, tests in data.get("users", {}).items():
                self.users.setdefault(path, set()).update(tests)
            self.failed.update(data.get("failed", []))
            self.ignored_options.update(data.get("ignored_options", []))

    def _add_hosts(self, path: str, hosts: dict[str, int]) -> None:
        mine = self.unrecorded.setdefault(path, {})
        for host, n in hosts.items():
            mine[host] = mine.get(host, 0) + n

    def lines(self, verbose: bool) -> list[str]:
        if not self.per_test:
            return []
        rows = list(self.per_test.values())
        tools = sum(r.tools_replayed for r in rows), sum(r.tools_recorded for r in rows)
        mcp_replayed = sum(r.mcp_replayed for r in rows)
        mcp_recorded = sum(r.mcp_recorded for r in rows)
        replayed = sum(r.replayed for r in rows) - tools[0] - mcp_replayed
        recorded = sum(r.recorded for r in rows) - tools[1] - mcp_recorded
        unplayed = sum(self.unplayed.values())
        tokens = sum(r.tokens for r in rows)
        usd, priced, unpriced = (sum(getattr(r, k) for r in rows) for k in ("dollars", "priced", "unpriced"))
        line = (
            f"llmvcr: {plural(replayed, 'LLM call')} replayed, {recorded:,} recorded, "
            + (
                f"{plural(mcp_replayed, 'MCP request')} replayed, {mcp_recorded:,} recorded, "
                if mcp_replayed or mcp_recorded
                else ""
            )
            + f"{plural(len(self.written), 'cassette')} written, "
            f"{plural(unplayed, 'unplayed entry', 'unplayed entries')}; "
            f"replay saved {plural(tokens, 'token')}"
        )
        line += f" ({dollars(usd, priced, unpriced, ' at list price')})" if usd or unpriced else ""
        if any(tools):
            line += f"; {plural(tools[0], 'tool call')} replayed, {tools[1]:,} recorded"
        out = [line]
        out += self._unplayed_lines()
        out += stale_lines(self.stale)
        out += self._unrecorded_lines()
        out += self._nothing_lines(verbose)
        out += self._age_lines()
        if self.ignored_options:
            out.append(
                "  llmvcr_config holds vcrpy options llmvcr has no use for (remove them): "
                + "; ".join(sorted(self.ignored_options))
            )
        if verbose:
            out += [
                f"  {r.test}: {r.replayed} replayed, {r.recorded} recorded, {r.unplayed} unplayed, "
                f"{plural(r.tokens, 'token')}"
                + (f" ({dollars(r.dollars, r.priced, r.unpriced)})" if r.dollars or r.unpriced else "")
                + (f", {r.unrecorded} unrecorded" if r.unrecorded else "")
                for r in rows
                if r.replayed or r.recorded or r.unplayed or r.unrecorded
            ]
        return out

    def _unplayed_lines(self) -> list[str]:
        """Cassettes holding entries no test used: prune them, unless a test using them failed."""
        if not self.unplayed:
            return []
        failing = {p for p in self.unplayed if self.users.get(p, set()) & self.failed}
        clean = sorted(p for p in self.unplayed if p not in failing)
        ids = self._unplayed_ids()
        listed = {
            p: f"    {shown(p)}: {plural(n, 'entry', 'entries')}{_ids(ids.get(p))}"
            for p, n in self.unplayed.items()
        }
        out: list[str] = []
        if clean:
            out.append(
                f"  {plural(len(clean), 'cassette')} with entries no test used "
                f"(drop them with: llmvcr prune PATH...):"
            )
            out += [listed[p] for p in clean[:10]]
            if len(clean) > 10:
                out.append(f"    ... and {len(clean) - 10} more")
        if failing:
            out.append(
                f"  {plural(len(failing), 'cassette')} with unused entries whose test failed (it may have "
                f"stopped before using them: make it pass before pruning):"
            )
            out += [listed[p] for p in sorted(failing)[:10]]
        return out

    def _unrecorded_lines(self) -> list[str]:
        """The calls that went out with no provider to record them, per cassette and host."""
        if not self.unrecorded:
            return []
        total = sum(sum(hosts.values()) for hosts in self.unrecorded.values())
        out = [
            f"  {plural(total, 'HTTP call')} no provider claims went out unrecorded, in "
            f"{plural(len(self.unrecorded), 'cassette')} (register a provider for their SDK with "
            f"llmvcr.register_provider, or list their hosts in allow_unrecognized=):"
        ]
        listed = sorted(self.unrecorded.items())[:10]
        for path, hosts in listed:
            calls = ", ".join(f"{n} to {host}" for host, n in sorted(hosts.items()))
            empty = " (nothing recorded, no cassette written)" if path in self.empty else ""
            out.append(f"    {shown(path)}: {calls}{empty}")
        if len(self.unrecorded) > len(listed):
            out.append(f"    ... and {len(self.unrecorded) - len(listed)} more")
        return out

    def _nothing_lines(self, verbose: bool) -> list[str]:
        """The tests whose cassette could record but recorded no call, so no file was written."""
        if not self.nothing:
            return []
        tests = sorted(self.nothing)
        listed = tests if verbose else tests[:5]
        out = [
            f"  {plural(len(tests), 'test')} recorded no LLM call, so no cassette was written for "
            f"{'it' if len(tests) == 1 else 'them'}. A test that calls an LLM this way does so through "
            f"an SDK llmvcr does not intercept (llmvcr.register_provider adds it); one that makes no "
            f"LLM call needs no llmvcr marker:"
        ]
        out += [f"    {test}" for test in listed]
        if len(tests) > len(listed):
            out.append(f"    ... and {len(tests) - len(listed)} more (-v lists them)")
        return out

    # -- freshness (llmvcr.freshness.check) -----------------------------------------------------------------
    def on_finding(self, finding: Finding) -> None:
        with self.lock:
            self.findings.append(finding)

    def _unplayed_ids(self) -> dict[str, list[str]]:
        """The ids of the entries the last session of each cassette left unused."""
        ids: dict[str, list[str]] = {}
        for f in self.findings:
            if f.kind == "unplayed":
                ids[f.path] = f.ids
        return ids

    def _age_lines(self) -> list[str]:
        """The cassettes older than max_age, and those that name no recording date."""
        expired: dict[str, Finding] = {}
        undated: set[str] = set()
        for f in self.findings:
            if f.kind == "expired":
                expired[f.path] = f
            elif f.kind == "undated":
                undated.add(f.path)
        out: list[str] = []
        if expired:
            out.append(f"  {plural(len(expired), 'expired cassette')} (older than max_age):")
            listed = sorted(expired.items())[:10]
            out += [f"    {shown(path)}: {f.detail}; {f.action}" for path, f in listed]
            if len(expired) > len(listed):
                out.append(f"    ... and {len(expired) - len(listed)} more")
        if undated:
            out.append(
                f"  {plural(len(undated), 'cassette')} without a recording date, which max_age cannot judge "
                f"(recorded before llmvcr stored one); re-record to start their clock: "
                + ", ".join(shown(p) for p in sorted(undated)[:5])
                + (", ..." if len(undated) > 5 else "")
            )
        return out


def _ids(ids: list[str] | None) -> str:
    """`` (#1, #4)``: the entries left unused, when the run named them."""
    if not ids:
        return ""
    return f" ({', '.join(ids[:10])}{', ...' if len(ids) > 10 else ''})"
