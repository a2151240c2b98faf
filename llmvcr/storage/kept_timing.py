"""Re-recording a stream that did not change keeps the arrival offsets it was recorded with.

A stream's offsets (``t``, milliseconds, for ``replay_speed``) differ on every run, so re-recording
an unchanged call would rewrite its ``timing`` line and a PR diff would show noise. With
``record_mode="all"`` the file's earlier entries are read once, at the first stream recorded, and a
new stream whose events equal an earlier one's for the same request takes that one's offsets: the
file is then written byte for byte as it was. A stream whose events changed keeps its new offsets.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..cassette.entries import Entry
from ..errors import LLMVCRError
from .files import load_cassette


def _events(stream: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in event.items() if k != "t"} for event in stream]


class EarlierTimings:
    """The offsets of the streams a cassette file held before this run replaced it, by request."""

    def __init__(self, entries: Sequence[Entry]) -> None:
        self._by_hash: dict[str, list[Sequence[dict[str, Any]]]] = {}
        for entry in entries:
            stream = entry.response.stream
            if stream and any("t" in event for event in stream):
                self._by_hash.setdefault(entry.request_hash, []).append(stream)

    @classmethod
    def of_file(cls, path: str) -> EarlierTimings:
        """The earlier streams of ``path``; none when there is no file or it cannot be read (a file
        llmvcr cannot read is refused by the writer on its own terms, not here)."""
        if not path or not os.path.isfile(path):
            return cls(())
        try:
            cassette = load_cassette(path)
        except (LLMVCRError, OSError):
            return cls(())  # nothing to keep: the new offsets are written, as without this module
        return cls(cassette.entries if cassette.read_only is None else ())

    def keep(self, entry: Entry) -> Entry:
        """``entry`` with an earlier recording's offsets when its stream's events are unchanged."""
        stream = entry.response.stream
        earlier = self._by_hash.get(entry.request_hash) if stream else None
        if not earlier or stream is None:
            return entry
        events = _events(stream)
        for i, old in enumerate(earlier):
            if len(old) == len(stream) and _events(old) == events:
                del earlier[i]  # a request made twice takes each earlier recording once
                kept = [
                    {**event, "t": before["t"]} if "t" in before else event
                    for event, before in zip(events, old, strict=True)
                ]
                return replace(entry, response=replace(entry.response, stream=kept))
        return entry
