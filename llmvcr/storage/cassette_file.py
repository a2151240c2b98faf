"""A session's cassette file: read once as it opens, its new entries written as they come, flushed on
SIGTERM, pruned at close.

The session asks this one object for everything on disk: it never sees the write queue, the
signal handlers, the atomic writer or the earlier stream timings behind it. A replay-only session
touches it twice, to load and to close; its calls never take the write lock.
"""

from __future__ import annotations

import os

from ..cassette import Cassette, Entry
from ..cassette.linear import Layout
from ..cassette.schema import recorded_with
from ..errors import CassetteNotFoundError
from .files import load_cassette, refuse_foreign
from .kept_timing import EarlierTimings
from .shutdown import SigtermFlush, WriteLock
from .validation import check_cassette_path
from .write_queue import WriteQueue
from .writer import save_cassette

__all__ = ["CassetteFile"]


class CassetteFile:
    """The file at ``path`` behind one session; ``cassette`` is what it holds (or the given one, kept
    in memory when ``persist`` is false)."""

    def __init__(
        self,
        path: str,
        record_mode: str,
        layout: Layout | None,
        cassette: Cassette | None = None,
        *,
        persist: bool = True,
    ) -> None:
        self.path = path
        self.persist = persist
        self.fresh = False  # no file yet: recording it is allowed whatever the record mode
        self.replace = False  # record_mode="all": rewritten from the first entry, never read
        self.cassette = cassette if cassette is not None else self._load(record_mode, layout)
        self._lock = WriteLock()
        self.queue = WriteQueue(path, self.cassette, self._lock, replace=self.replace, persist=persist)
        self._sigterm: SigtermFlush | None = None
        self._earlier: EarlierTimings | None = None  # record_mode="all": the streams the file held

    def _load(self, record_mode: str, layout: Layout | None) -> Cassette:
        check_cassette_path(self.path)  # a folder or a symlink loop is an error, not "no file yet"
        if record_mode == "all":
            refuse_foreign(self.path)  # "all" rewrites without reading: never over a vcrpy file
            self.replace = True
            return Cassette(self.path, recorded_with=recorded_with(), layout=layout)
        if not os.path.exists(self.path):
            if record_mode == "none":
                raise CassetteNotFoundError(
                    f"{self.path}: no such cassette and record_mode='none' forbids recording; "
                    f"record it with record_mode='once' (or --llmvcr-record-mode=once)"
                )
            self.fresh = True
            return Cassette(self.path, recorded_with=recorded_with(), layout=layout)
        return load_cassette(self.path)

    def start(self, *, may_write: bool) -> None:
        """A session that ``may_write`` writes what is pending when SIGTERM or Ctrl-C arrives."""
        if may_write and self.persist and self.path:  # a replay-only session never has a write to save
            self._sigterm = SigtermFlush.install(self._lock, self.queue.close)

    def add(self, entry: Entry) -> None:
        """Queue ``entry`` (already in the cassette) for the file: written now, or soon."""
        with self._lock:
            self.queue.add(entry)

    def keep_timing(self, entry: Entry) -> Entry:
        """``entry`` with the arrival offsets of the same stream in the file this run replaces, if
        unchanged (no timing noise in a PR diff); as it is when the file is not being replaced."""
        if not self.replace:
            return entry
        if self._earlier is None:
            self._earlier = EarlierTimings.of_file(self.path)
        return self._earlier.keep(entry)

    def flush(self) -> None:
        """Write what is queued; ``CassetteWriteError`` naming the file if it cannot."""
        with self._lock:
            self.queue.write()

    def close(self) -> None:
        """Write what is queued (``CassetteWriteError`` naming the entries lost), then put back the
        signal handlers: only now, so a signal during the last write still waits for it."""
        try:
            self.queue.close()
        finally:
            if self._sigterm is not None:
                self._sigterm.restore()
                self._sigterm = None

    def prune(self) -> None:
        """Drop the entries loaded from the file that no call used, and write the file again."""
        self.cassette.drop_unplayed()
        save_cassette(self.path, self.cassette)
        self.queue.writes += 1

    @property
    def writes(self) -> int:
        """How many times the file was written."""
        return self.queue.writes
