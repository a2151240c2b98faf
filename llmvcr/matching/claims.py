"""Which recorded entry answers a request: one lookup in an index by request hash, or the next unused
entry in recording order, each entry claimed at most once (unless repeats are allowed).

The index is the cassette's own (the stored hashes) while the fingerprint is the default; with
other matchers, or once a hand-edited entry is found, it is an index of this session's own, by the
requests as they read now.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Mapping

from ..cassette import Cassette, Entry
from ..errors import EditedCassetteWarning
from .rules import Fingerprinter, Normalised, default_request_hash

__all__ = ["Claims"]


class Claims:
    """The entries of ``cassette`` a session's calls claim, found by ``fingerprinter``'s hash."""

    def __init__(self, cassette: Cassette, fingerprinter: Fingerprinter, *, allow_repeats: bool) -> None:
        self.cassette = cassette
        self.fingerprinter = fingerprinter
        self.allow_repeats = allow_repeats
        self._lock = threading.Lock()
        self._own_index: dict[str, list[int]] | None = None
        self._rehashed = False
        self._cursor = 0  # sequential mode: where the next unused entry is looked for

    def key(self, normalised: Normalised, stored_hash: str) -> str:
        """The index key of a request whose default hash is ``stored_hash``."""
        fingerprinter = self.fingerprinter
        return stored_hash if fingerprinter.is_default else fingerprinter.request_hash(normalised)

    def by_hash(self, key: str, stacklevel: int = 1) -> int | None:
        """The first unused entry indexed under ``key``, claimed; a miss looks once for entries edited
        by hand (``EditedCassetteWarning``, ``stacklevel`` frames above the caller) and tries again."""
        with self._lock:
            candidates = self._index().get(key, [])
        position = self.cassette.claim(candidates, allow_repeats=self.allow_repeats)
        if position is None and not candidates and self._rehash_edited(stacklevel + 2):
            with self._lock:
                candidates = self._index().get(key, [])
            position = self.cassette.claim(candidates, allow_repeats=self.allow_repeats)
        return position

    def where(self, key: str, fits: Callable[[Entry], bool]) -> int | None:
        """The first unused entry indexed under ``key`` that ``fits``, claimed."""
        with self._lock:
            candidates = [i for i in self._index().get(key, []) if fits(self.cassette.entry(i))]
        return self.cassette.claim(candidates, allow_repeats=self.allow_repeats)

    def next_unused(self) -> int | None:
        """Sequential mode: the next unused entry in recording order, whatever it holds, claimed."""
        with self._lock:
            position = self.cassette.claim_next_unplayed(self._cursor)
            if position is not None:
                self._cursor = position + 1
            return position

    def recorded(self, entry: Entry, position: int) -> None:
        """``entry`` was recorded at ``position``: an own index finds it too."""
        with self._lock:
            if self._own_index is not None:
                h = self.fingerprinter.request_hash(entry.request.normalised())
                self._own_index.setdefault(h, []).append(position)

    def _index(self) -> Mapping[str, list[int]]:
        fingerprinter = self.fingerprinter
        if fingerprinter.is_default and self._own_index is None:
            return self.cassette.index
        if self._own_index is None:
            index: dict[str, list[int]] = {}
            for i in range(len(self.cassette)):
                h = fingerprinter.request_hash(self.cassette.entry(i).request.normalised())
                index.setdefault(h, []).append(i)
            self._own_index = index
        return self._own_index

    def _rehash_edited(self, stacklevel: int) -> bool:
        """On a miss, once: entries whose stored ``request_hash`` no longer fits their request (a
        hand-edited cassette) are indexed by what the request says now, with a warning naming the file."""
        if self._rehashed or not self.fingerprinter.is_default:
            return False
        self._rehashed = True
        cassette = self.cassette
        stale = [
            i
            for i in range(cassette.loaded_count)
            if not cassette.entry(i).hashed_as_sent
            and cassette.entry(i).request_hash != default_request_hash(cassette.entry(i).request.normalised())
        ]
        if not stale:
            return False
        index: dict[str, list[int]] = {}
        for i in range(len(cassette)):
            entry = cassette.entry(i)
            h = default_request_hash(entry.request.normalised()) if i in stale else entry.request_hash
            index.setdefault(h, []).append(i)
        with self._lock:
            self._own_index = index
        shown = ", ".join(str(i) for i in stale[:10])
        path = cassette.path
        warnings.warn(
            f"{path}: entry {shown} was edited by hand (its stored request_hash no longer matches its "
            f"request); matching uses the request as it reads now. Store the new hash with: "
            f"llmvcr rehash {path}",
            EditedCassetteWarning,
            stacklevel=stacklevel,
        )
        return True
