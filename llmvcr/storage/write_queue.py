"""The entries a session recorded but has not written yet: when they are written, and what is said
when they cannot be.

Each entry reaches disk at once unless writing is slow next to the calls: then the time spent
writing is held to about a tenth of the time spent recording, and a timer writes what is waiting
when no further call comes. A write that fails during a call (a read-only folder, a full disk)
never reaches the SDK, which would send the call again and report a connection error: the entries
stay queued, a ``CassetteWriteWarning`` names the file at once, and :meth:`WriteQueue.close`
raises ``CassetteWriteError`` with the number of entries it could not write. A warning that
``-W error`` turns into an error is raised at ``close()`` too, past every SDK's retry loop.
"""

from __future__ import annotations

import threading
import time
import warnings
from contextlib import AbstractContextManager
from typing import Any

from ..cassette import Cassette
from ..cassette.entries import Entry
from ..cassette.schema import recorded_with
from ..errors import CassetteWriteError, CassetteWriteWarning
from .writer import CassetteWriter

__all__ = ["WriteQueue"]


class WriteQueue:
    """One session's entries on their way to ``path``; every method but :meth:`close` runs under ``lock``."""

    def __init__(
        self,
        path: str,
        cassette: Cassette,
        lock: AbstractContextManager[Any],
        *,
        replace: bool,
        persist: bool,
    ) -> None:
        self.path, self.cassette, self.lock = path, cassette, lock
        self.persist = persist and bool(path)
        self.pending: list[Entry] = []
        self.writes = 0
        self.next_flush = 0.0
        self.escalated: Warning | None = None  # a warning -W error made an error, raised at close()
        self._replace = replace  # record_mode="all"
        self._timer: threading.Timer | None = None
        self._writer: CassetteWriter | None = None

    def add(self, entry: Entry) -> None:
        """Queue ``entry`` and write it now, or soon when writing is slow next to the calls."""
        self.pending.append(entry)
        if time.monotonic() >= self.next_flush:
            self._write_or_warn()
        elif self._timer is None:
            timer = threading.Timer(max(0.0, self.next_flush - time.monotonic()), self._write_later)
            timer.daemon = True
            self._timer = timer
            timer.start()

    def write(self) -> None:
        """Write what is queued; ``CassetteWriteError`` when it cannot (the entries stay queued)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self.pending or not self.persist:
            self.pending.clear()
            return
        started = time.monotonic()
        if not self.cassette.recorded_with:
            self.cassette.recorded_with = recorded_with()
        if self._writer is None:
            self._writer = CassetteWriter(self.path, replace=self._replace, warn=self.warn)
        self._writer.append(self.cassette, self.pending)
        self.pending = []
        self.writes += 1
        now = time.monotonic()
        self.next_flush = now + 9 * (now - started)

    def close(self) -> None:
        """Write what is queued, taking the lock: ``CassetteWriteError`` naming the file and how many
        entries are not in it, or the warning ``-W error`` turned into an error meanwhile."""
        with self.lock:
            try:
                self.write()
            except CassetteWriteError as err:
                lost = len(self.pending)
                raise CassetteWriteError(self.path, err.reason, unwritten=lost, errno=err.errno) from None
            escalated, self.escalated = self.escalated, None
        if escalated is not None:
            raise escalated

    def warn(self, message: str) -> None:
        """A ``CassetteWriteWarning``; under ``-W error`` it is kept for :meth:`close` to raise."""
        try:
            warnings.warn(message, CassetteWriteWarning, stacklevel=2)
        except CassetteWriteWarning as escalated:  # never into the SDK: its retry loop would call again
            self.escalated = self.escalated or escalated

    def _write_or_warn(self) -> None:
        try:
            self.write()
        except CassetteWriteError as err:  # the call itself succeeded: keep its entry, say so, write it later
            self.warn(f"{self.path}: not written yet ({err.reason}); retried at the next write and at exit")

    def _write_later(self) -> None:
        with self.lock:
            self._write_or_warn()
