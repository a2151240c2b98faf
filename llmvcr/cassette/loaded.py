"""A loaded file's entries, each built when first read: the only lazy form of an entry."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from .entries import Entry
from .linear import Unpacker


class LoadedEntries:
    """A loaded file's entries (``entries``, as parsed), each built by ``build`` (the format's reader)
    when first read and, in the linear layout, unpacked then. ``stale``: the hash a hand-edited
    entry's request reads as now; ``built``: the entries checking the file built, served as they are.
    """

    def __init__(
        self,
        entries: list[Any],
        path: str,
        build: Callable[[Mapping[str, Any], str, int], Entry],
        *,
        linear: bool,
        stale: Mapping[int, str] | None = None,
        built: list[Entry] | None = None,
    ) -> None:
        self.path = path
        self._entries = entries
        self._unpacker = Unpacker(entries, path) if linear else None
        self._build = build
        self._stale = stale or {}
        self._built = built

    def __len__(self) -> int:
        return len(self._entries)

    def stored_hash(self, position: int) -> str:
        """The stored ``request_hash`` (a hand-edited entry's as it reads now), nothing built."""
        fresh = self._stale.get(position)
        return fresh if fresh is not None else str(self._entries[position]["request_hash"])

    def stored_provider(self, position: int) -> Any:  # references are inside request bodies only
        return self._entries[position].get("provider")

    def mapping(self, position: int) -> Mapping[str, Any]:
        """The entry as its file holds it, unpacked: what a rewrite writes of an entry never read."""
        unpacker = self._unpacker
        raw: Mapping[str, Any] = unpacker.entry(position) if unpacker else self._entries[position]
        fresh = self._stale.get(position)
        return raw if fresh is None else {**raw, "request_hash": fresh}  # the parsed one stays as read

    def entry(self, position: int) -> Entry:
        if self._built is not None:
            entry = self._built[position]
            fresh = self._stale.get(position)
            return entry if fresh is None else replace(entry, request_hash=fresh)
        return self._build(self.mapping(position), self.path, position)
