"""The end-of-run report of calls a cassette answered as its recorder matched them (method and URI,
for vcrpy and pytest-recording files) although their request differs from the recording.

Staleness is shown, never hidden: each such cassette is named with how many calls drifted, the first
difference, the command that shows every difference and the one that re-records it.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from ..cassette.values import Value
from ..freshness.check import plural, shown
from ..matching.as_recorded import describe
from ..matching.diff import format_rows
from ..session import Session


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
            quoted = shlex.quote(shown(path))
            again = f"llmvcr convert {quoted} --to llmvcr-yaml -o {quoted} && {again}"
        out.append(f"      re-record: {again}")
    if len(stale) > 10:
        out.append(f"    ... and {len(stale) - 10} more")
    return out
