"""The in-memory cassette: a list of entries, an index by request hash, and play bookkeeping.

An entry loaded from a file is built when first used (``loaded.LoadedEntries``), so a 10,000-entry
cassette loads at the speed of the parser: only the stored ``request_hash`` is read up front.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .entries import Entry, Request, Response
from .linear import DEFAULT_LAYOUT, FORMAT_VERSION, Layout
from .loaded import LoadedEntries
from .served import Served
from .values import FrozenValue

__all__ = ["FORMAT_VERSION", "Cassette", "Entry", "RecordedRequest", "Request", "Response", "Served"]


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class RecordedRequest(FrozenValue):
    """A recorded request the way pytest-recording tests read ``vcr.requests[i]``: ``body`` is bytes
    (the JSON as sent, for ``json.loads``), ``json`` the parsed body, ``request`` llmvcr's record."""

    request: Request

    @property
    def method(self) -> str:
        return self.request.method

    @property
    def path(self) -> str:
        return self.request.path

    @property
    def headers(self) -> Mapping[str, str]:
        return self.request.headers

    @property
    def json(self) -> Any:
        return self.request.body

    @property
    def body(self) -> bytes | None:
        body = self.request.body
        if body is None or isinstance(body, bytes):
            return body
        if isinstance(body, str):
            return body.encode()
        return json.dumps(body, ensure_ascii=False).encode()


class Cassette:
    """Entries in recording order, an index from request hash to entry positions, and play counts.

    >>> cassette = llmvcr.load_cassette("cassettes/bug-427.yaml")
    >>> [e.request.body["model"] for e in cassette.entries]
    """

    def __init__(
        self,
        path: str = "",
        *,
        seed: str | None = None,
        recorded_with: dict[str, str] | None = None,
        metadata: dict[str, Any] | None = None,
        layout: Layout | None = None,
    ) -> None:
        self.path = path
        self.layout: Layout = layout or DEFAULT_LAYOUT  # how its file is written (llmvcr.cassette.linear)
        self.seed = seed
        self.recorded_with: dict[str, str] = dict(recorded_with or {})
        self.metadata: dict[str, Any] = dict(metadata or {})
        # an item is an Entry, or the position in ``_loaded`` of a loaded entry not built yet
        self._items: list[Entry | int] = []
        self._loaded: LoadedEntries | None = None
        self._index: dict[str, list[int]] = {}
        self._plays: list[int] = []
        self._lock = threading.Lock()
        self.loaded_count = 0  # how many entries came from the file (the rest were recorded now)
        self.read_only: str | None = None  # why its file may not be written (a foreign one read in place)
        # serve loaded entries "in turn": once every entry matching a request has served, they serve
        # again in recorded order (a cassette no test bounds, shared by runs: ``llmvcr serve``)
        self.in_turn = False

    # -- building -----------------------------------------------------------------------------
    def load(self, loaded: LoadedEntries) -> None:
        """Hold the entries a file holds (once, on an empty cassette), each built when first read."""
        self._loaded = loaded
        index = self._index
        for position in range(len(loaded)):
            index.setdefault(loaded.stored_hash(position), []).append(position)
        self._items = list(range(len(loaded)))
        self._plays = [0] * len(loaded)
        self.loaded_count = len(loaded)

    def append(self, entry: Entry) -> int:
        """Add an entry at the end; returns its position."""
        with self._lock:
            position = len(self._items)
            self._items.append(entry)
            self._plays.append(0)
            self._index.setdefault(entry.request_hash, []).append(position)
            return position

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._loaded = None
            self._index.clear()
            self._plays.clear()

    # -- reading ------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries)

    def entry(self, position: int) -> Entry:
        item = self._items[position]
        if isinstance(item, Entry):
            return item
        assert self._loaded is not None  # a position is only ever added with it
        entry = self._items[position] = self._loaded.entry(item)
        return entry

    def stored_hash(self, position: int) -> str:
        """The entry's stored ``request_hash``, without building or unpacking it."""
        item = self._items[position]
        if isinstance(item, Entry):
            return item.request_hash
        assert self._loaded is not None
        return self._loaded.stored_hash(item)

    def stored_provider(self, position: int) -> Any:
        """The entry's stored ``provider``, without building or unpacking it."""
        item = self._items[position]
        if isinstance(item, Entry):
            return item.provider
        assert self._loaded is not None
        return self._loaded.stored_provider(item)

    def raw(self, position: int) -> Entry | Mapping[str, Any]:
        """The entry as it will be written: an Entry, or the mapping of a loaded one not built yet."""
        item = self._items[position]
        if isinstance(item, Entry):
            return item
        assert self._loaded is not None
        return self._loaded.mapping(item)

    @property
    def entries(self) -> list[Entry]:
        return [self.entry(i) for i in range(len(self._items))]

    @property
    def index(self) -> Mapping[str, list[int]]:
        return self._index

    def positions(self, request_hash: str) -> list[int]:
        return self._index.get(request_hash, [])

    # -- playing ------------------------------------------------------------------------------
    def play_count(self, position: int) -> int:
        return self._plays[position]

    def claim(self, positions: list[int], *, allow_repeats: bool) -> int | None:
        """Mark the first unplayed of ``positions`` as played and return it (thread-safe).

        With repeats allowed and every candidate played, the last one serves again. ``in_turn``:
        the loaded candidate played least (the first of them) serves again.
        """
        with self._lock:
            for position in positions:
                if self._plays[position] == 0:
                    self._plays[position] = 1
                    return position
            if self.in_turn:
                loaded = [p for p in positions if p < self.loaded_count]
                if loaded:
                    position = min(loaded, key=self._plays.__getitem__)
                    self._plays[position] += 1
                    return position
            if allow_repeats and positions:
                position = positions[-1]
                self._plays[position] += 1
                return position
            return None

    def claim_next_unplayed(self, start: int = 0) -> int | None:
        """Sequential mode: the next unused entry in recording order, whatever it holds."""
        with self._lock:
            for position in range(start, len(self._plays)):
                if self._plays[position] == 0:
                    self._plays[position] = 1
                    return position
            return None

    def mark_played(self, position: int) -> None:
        with self._lock:
            self._plays[position] += 1

    @property
    def played(self) -> list[Entry]:
        return [self.entry(i) for i, n in enumerate(self._plays) if n]

    @property
    def unplayed(self) -> list[Entry]:
        """Entries loaded from the file that no call used (recorded ones count as used)."""
        return [self.entry(i) for i, n in enumerate(self._plays) if n == 0 and i < self.loaded_count]

    # what pytest-recording tests read from their ``vcr`` fixture, under the same names
    @property
    def requests(self) -> list[RecordedRequest]:
        """Each entry's request in recording order, as vcrpy's ``cassette.requests`` shows it."""
        return [RecordedRequest(entry.request) for entry in self.entries]

    @property
    def play_counts(self) -> list[int]:
        """How many calls each entry answered (vcrpy's ``play_counts``; its ``play_count`` is the sum)."""
        return list(self._plays)

    @property
    def all_played(self) -> bool:
        """Every entry answered a call (vcrpy's ``cassette.all_played``)."""
        return all(self._plays)

    def drop_unplayed(self) -> int:
        """Remove loaded entries that were never played; returns how many went."""
        keep = [i for i, n in enumerate(self._plays) if n or i >= self.loaded_count]
        dropped = len(self._items) - len(keep)
        hashes = [self.stored_hash(i) for i in keep]
        items = [self._items[i] for i in keep]  # a loaded one keeps its place in ``_loaded``
        plays = [self._plays[i] for i in keep]
        with self._lock:
            self._items, self._plays, self._index = [], [], {}
            for item, h, plays_n in zip(items, hashes, plays, strict=False):
                self._index.setdefault(h, []).append(len(self._items))
                self._items.append(item)
                self._plays.append(plays_n)
            self.loaded_count = len(self._items)
        return dropped

    def __repr__(self) -> str:
        return f"<Cassette {self.path or '(in memory)'} entries={len(self)} seed={self.seed!r}>"
