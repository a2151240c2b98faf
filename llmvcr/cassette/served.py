"""The entries replay served in one session, counted: as many as the cassette holds, however many calls.

A session lives as long as its cassette is open; under ``llmvcr serve`` that can be days and
millions of calls. Keeping one reference per call grew without end; keeping each served entry once
with how often it served holds the same answer (the usage the run saved) in the cassette's size.
"""

from __future__ import annotations

from collections.abc import Iterator

from .entries import Entry


class Served:
    """Each served entry once, by its position, with how many calls it answered.

    Iterating gives every served call's entry (an entry that served three calls, three times), so
    a sum over it is the sum over the calls.
    """

    __slots__ = ("_counts", "_entries")

    def __init__(self) -> None:
        self._entries: dict[int, Entry] = {}
        self._counts: dict[int, int] = {}

    def add(self, position: int, entry: Entry) -> None:
        """One more call answered by the entry at ``position`` (the caller holds the session's lock)."""
        self._entries.setdefault(position, entry)
        self._counts[position] = self._counts.get(position, 0) + 1

    def __iter__(self) -> Iterator[Entry]:
        for position, count in list(self._counts.items()):
            entry = self._entries[position]
            for _ in range(count):
                yield entry

    def __len__(self) -> int:
        return sum(self._counts.values())

    def __bool__(self) -> bool:
        return bool(self._counts)

    @property
    def kept(self) -> int:
        """How many entries are held (at most the cassette's size, whatever the number of calls)."""
        return len(self._entries)
