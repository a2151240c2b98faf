"""What a run played: the record ``llmvcr prune`` goes by.

During a pytest run (the plugin does it on its own) or inside ``with PlayLog():``, every cassette
a session opened from a file is followed: at the end, each cassette's folder gets a small
``.llmvcr-plays.json`` naming, per cassette file, the entries no call used, with their request
hashes, how many entries the file had, and whether a test that used it failed. Nothing is written
into the cassettes themselves, so replaying never changes a committed file; the play log is
run state, to be ignored by version control.

Sessions of one run (several tests sharing a cassette, pytest-xdist workers) are merged: an entry
is unplayed only if no session of the run used it. A new run replaces the record.

>>> with PlayLog():                     # outside pytest
...     run_my_agent_against_cassettes()
$ llmvcr prune cassettes/bug-427.yaml   # drops what that run never used
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from . import _active
from .session import Session

__all__ = ["PLAY_LOG", "PlayLog", "PlayRecord", "read_record", "update_record"]

PLAY_LOG = ".llmvcr-plays.json"
_VERSION = 1


@dataclass
class PlayRecord:
    """One cassette file's record for one run."""

    run: str
    finished: str
    entries: int
    unplayed: dict[int, str]  # position -> request_hash
    failed_tests: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "finished": self.finished,
            "entries": self.entries,
            "unplayed": [[p, h] for p, h in sorted(self.unplayed.items())],
            "failed_tests": self.failed_tests,
        }

    @classmethod
    def from_json(cls, data: Any) -> PlayRecord | None:
        try:
            return cls(
                str(data["run"]),
                str(data["finished"]),
                int(data["entries"]),
                {int(p): str(h) for p, h in data["unplayed"]},
                [str(t) for t in data.get("failed_tests") or []],
            )
        except (KeyError, TypeError, ValueError):
            return None


def log_path(cassette_path: str) -> str:
    return os.path.join(os.path.dirname(os.path.abspath(cassette_path)), PLAY_LOG)


def _read_log(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) and data.get("version") == _VERSION else {}


def read_record(cassette_path: str) -> PlayRecord | None:
    """The last run's record for a cassette file, or None when no run recorded one."""
    cassettes = _read_log(log_path(cassette_path)).get("cassettes")
    if not isinstance(cassettes, dict):
        return None
    return PlayRecord.from_json(cassettes.get(os.path.basename(cassette_path)))


def update_record(cassette_path: str, change: Callable[[PlayRecord | None], PlayRecord | None]) -> None:
    """Replace a cassette's record by ``change(previous)`` (None removes it), under the log's file lock."""
    from .storage import atomic_write, file_lock

    path = log_path(cassette_path)
    with file_lock(path):
        data = _read_log(path)
        found = data.get("cassettes")
        cassettes: dict[str, Any] = found if isinstance(found, dict) else {}
        name = os.path.basename(cassette_path)
        record = change(PlayRecord.from_json(cassettes.get(name)))
        if record is None:
            cassettes.pop(name, None)
        else:
            cassettes[name] = record.as_json()
        atomic_write(
            path,
            (
                json.dumps({"version": _VERSION, "cassettes": dict(sorted(cassettes.items()))}, indent=1)
                + "\n"
            ).encode("utf-8"),
        )


def merge_unplayed(
    a: tuple[int, dict[int, str]], b: tuple[int, dict[int, str]]
) -> tuple[int, dict[int, str]]:
    """Two sessions' ``(entries, unplayed)`` as one: an entry stays unplayed only while every
    session that saw it (its position below that session's entry count) left it unplayed."""
    (count_a, unplayed_a), (count_b, unplayed_b) = a, b
    unplayed = {p: h for p, h in unplayed_a.items() if p >= count_b or unplayed_b.get(p) == h}
    unplayed.update({p: h for p, h in unplayed_b.items() if p >= count_a})
    return max(count_a, count_b), unplayed


class PlayLog:
    """Follows the sessions of one run and writes each cassette folder's play log at the end.

    ``run`` names the run: records written under the same name merge (pytest-xdist workers pass
    the controller's run id), another name replaces them.
    """

    def __init__(self, run: str | None = None) -> None:
        self.run = run or uuid.uuid4().hex
        self.test = ""  # the test running now, set by the pytest plugin
        self._seen: dict[str, tuple[int, dict[int, str]]] = {}  # abspath -> (entries, unplayed)
        self._tests: dict[str, set[str]] = {}  # abspath -> tests that opened it
        self._failed: set[str] = set()
        self._lock = threading.Lock()

    # -- following sessions ------------------------------------------------------------------------
    def on_session(self, session: Session, event: str) -> None:
        if event != "exit" or not session.persist or not session.path:
            return
        cassette = session.cassette
        count = len(cassette)
        unplayed: dict[int, str] = {}
        for i in range(min(cassette.loaded_count, count)):
            if cassette.play_count(i) == 0:
                raw = cassette.raw(i)  # the stored hash, without building the entry
                unplayed[i] = str(raw["request_hash"] if isinstance(raw, Mapping) else raw.request_hash)
        path = os.path.abspath(session.path)
        with self._lock:
            before = self._seen.get(path)
            self._seen[path] = (
                (count, unplayed) if before is None else merge_unplayed(before, (count, unplayed))
            )
            self._tests.setdefault(path, set()).add(self.test or "(outside tests)")

    def test_failed(self, test: str) -> None:
        with self._lock:
            self._failed.add(test)

    # -- writing -----------------------------------------------------------------------------------
    def write(self) -> list[str]:
        """Write the records of every cassette followed; returns the play logs written."""
        finished = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
        written: list[str] = []
        with self._lock:
            seen = dict(self._seen)
            tests = {p: set(t) for p, t in self._tests.items()}
            failed = set(self._failed)
        for path, seen_here in sorted(seen.items()):
            if not os.path.exists(path):  # a temporary cassette, already gone
                continue
            failed_here = sorted(tests.get(path, set()) & failed)

            def change(
                previous: PlayRecord | None,
                seen_here: tuple[int, dict[int, str]] = seen_here,
                failed_here: list[str] = failed_here,
            ) -> PlayRecord:
                count, unplayed = seen_here
                if previous is not None and previous.run == self.run:  # another worker of this run
                    count, unplayed = merge_unplayed((previous.entries, previous.unplayed), seen_here)
                    failed_here = sorted(set(previous.failed_tests) | set(failed_here))
                return PlayRecord(self.run, finished, count, unplayed, failed_here)

            try:
                update_record(path, change)
            except OSError:  # a read-only checkout: replay must not fail for want of a play log
                continue
            written.append(log_path(path))
        return sorted(set(written))

    def __enter__(self) -> PlayLog:
        _active.add_listener(self.on_session)
        return self

    def __exit__(self, *exc: object) -> None:
        _active.remove_listener(self.on_session)
        if exc[0] is not None:
            self.test_failed(self.test or "(outside tests)")
        self.write()
