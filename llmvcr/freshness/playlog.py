"""What a run played: the record ``llmvcr prune`` goes by, kept outside the project tree.

During a pytest run (the plugin does it on its own) or inside ``with PlayLog():``, every cassette
a session opened from a file is followed: at the end, the play store gets, per cassette file, the
entries no call used, with their request hashes, how many entries the file had, and whether a
test that used it failed. The store is pytest's cache (``.pytest_cache/d/llmvcr/plays.json``),
else the user's cache folder (``~/.cache/llmvcr``; ``LLMVCR_STATE_DIR`` names another). Nothing
is written beside the cassettes, so a replay run leaves the project tree as it was.

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
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from .. import _active
from ..cassette.values import Value
from ..session import Session
from ..storage.parse_cache import state_folder, user_state_folder
from ..storage.writer import atomic_write, file_lock

__all__ = [
    "PLAY_STORE",
    "PlayLog",
    "PlayRecord",
    "read_record",
    "read_records",
    "store_for",
    "update_record",
    "update_records",
]

PLAY_STORE = "plays.json"
_VERSION = 1


@dataclass(eq=False, repr=False)
class PlayRecord(Value):
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


store_for = state_folder  # the play store of a cassette: pytest's cache, else the user's cache


def _read_store(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) and data.get("version") == _VERSION else {}


def read_record(cassette_path: str, store: str | None = None) -> PlayRecord | None:
    """The last run's record for a cassette file, or None when no run recorded one."""
    for folder in [store] if store else [store_for(cassette_path), user_state_folder()]:
        cassettes = _read_store(os.path.join(folder, PLAY_STORE)).get("cassettes")
        if isinstance(cassettes, dict) and os.path.abspath(cassette_path) in cassettes:
            return PlayRecord.from_json(cassettes[os.path.abspath(cassette_path)])
    return None


def read_records(cassette_paths: Iterable[str]) -> dict[str, PlayRecord | None]:
    """``read_record`` of each path, each store file read once (a folder's page reads hundreds of
    cassettes against the same one or two stores)."""
    stores: dict[str, dict[str, Any]] = {}
    found: dict[str, PlayRecord | None] = {}
    for path in cassette_paths:
        key, found[path] = os.path.abspath(path), None
        for folder in (store_for(path), user_state_folder()):
            if folder not in stores:
                cassettes = _read_store(os.path.join(folder, PLAY_STORE)).get("cassettes")
                stores[folder] = cassettes if isinstance(cassettes, dict) else {}
            if key in stores[folder]:
                found[path] = PlayRecord.from_json(stores[folder][key])
                break
    return found


Change = Callable[["PlayRecord | None"], "PlayRecord | None"]  # previous record -> new one (None: drop it)


def update_record(cassette_path: str, change: Change, store: str | None = None) -> str:
    """Replace a cassette's record by ``change(previous)`` (None removes it), under the store's lock;
    returns the store file."""
    folder = store or store_for(cassette_path)
    return update_records(folder, {os.path.abspath(cassette_path): change})


def update_records(folder: str, changes: Mapping[str, Change]) -> str:
    """Apply each ``change(previous)`` to its cassette's record (keys: absolute paths) in one read
    and one write of the store, under its lock; returns the store file."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, PLAY_STORE)
    with file_lock(path):
        data = _read_store(path)
        found = data.get("cassettes")
        cassettes: dict[str, Any] = found if isinstance(found, dict) else {}
        for key, change in changes.items():
            record = change(PlayRecord.from_json(cassettes.get(key)))
            if record is None:
                cassettes.pop(key, None)
            else:
                cassettes[key] = record.as_json()
        document = {"version": _VERSION, "cassettes": dict(sorted(cassettes.items()))}
        atomic_write(path, (json.dumps(document, indent=1) + "\n").encode("utf-8"))
    return path


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

    def __init__(self, run: str | None = None, store: str | None = None) -> None:
        self.run = run or os.urandom(16).hex()
        self.store = store  # None: each cassette's own (see store_for)
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
                unplayed[i] = cassette.stored_hash(i)  # without building or unpacking the entry
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
        by_store: dict[str, dict[str, Change]] = {}
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

            by_store.setdefault(self.store or store_for(path), {})[path] = change
        for folder, changes in by_store.items():  # one read and one write per store, not per cassette
            written += _write_store(folder, changes)
        return sorted(set(written))

    def __enter__(self) -> PlayLog:
        _active.add_listener(self.on_session)
        return self

    def __exit__(self, *exc: object) -> None:
        _active.remove_listener(self.on_session)
        if exc[0] is not None:
            self.test_failed(self.test or "(outside tests)")
        self.write()


def _write_store(folder: str, changes: Mapping[str, Change]) -> list[str]:
    try:
        return [update_records(folder, changes)]
    except OSError as err:  # replay must not fail for want of a play record; say why
        warnings.warn(f"llmvcr: could not keep what {len(changes)} cassettes played ({err})", stacklevel=3)
        return []
