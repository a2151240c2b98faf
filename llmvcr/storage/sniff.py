"""Telling a file's format from its first bytes: the sniffs :data:`llmvcr.storage.formats.FORMATS` names, and
the readers of other recorders' cassettes that storage reads in place.

``storage`` asks here, below every converter: it refuses to parse or write over another recorder's
cassette as an llmvcr one, and reads it in place with the reader the format table names for it,
imported the first time such a file is read (a process that only replays llmvcr cassettes never
imports ``llmvcr.convert``). The command line detects any format with :func:`detect`.

Each sniff looks at a :class:`Head` and claims the files of its format only, so no two claim one
file; a file none claims is read as an llmvcr cassette, whose loader says what is wrong with it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from .formats import FORMATS, OWN, by_name, in_place, resolve

GZIP_MAGIC = b"\x1f\x8b"  # LangChain's .yaml.gz cassettes
HEAD_SIZE = 65536  # what a sniff reads of a file

# The sniff's patterns, compiled when a sniff first runs (``re`` keeps them): most processes replay
# llmvcr's own files only. YAML's top-level key, or JSON's (vcrpy's json serializer writes "version"
# first, one key a line).
_INTERACTIONS = rb'(?m)^(?:interactions\s*:|\{?\s*"interactions"\s*:)'
_ENTRIES = rb'(?m)^entries\s*:|"entries"\s*:'
_CASSETTER = rb"(?m)^\s+body:\s*\n\s+type:\s*(?:json|text|binary|none)\s*$|^\s+recorded_at:"
_TOP_KEY = rb"(?m)^([A-Za-z_]\w*)\s*:"
_LLMVCR_KEYS = frozenset({"version", "entries", "recorded_with", "seed"})
_OTLP = (b'"resourceSpans"', b'"resourceLogs"')


class Head:
    """The start of a file as the sniffs see it (``path`` may be empty: bytes alone), and the whole
    file parsed as JSON when a sniff must look past its start."""

    def __init__(self, data: bytes, path: str = "") -> None:
        self.data = data[:HEAD_SIZE]
        self.path = path
        self.name = path.lower()
        gz = data[:2] == GZIP_MAGIC
        self.gzip = gz
        # vcrpy's interactions list, however written (JSON on one line included), and no llmvcr entries
        self.interactions = (
            not gz
            and not re.search(_ENTRIES, self.data)
            and bool(
                re.search(_INTERACTIONS, self.data)
                or (self.data.lstrip()[:1] == b"{" and b'"interactions"' in self.data)
            )
        )
        self._document: Any = self

    @classmethod
    def of(cls, path: str) -> Head:
        """The head of the file at ``path`` (empty when it cannot be read: the reader says why)."""
        try:
            with open(path, "rb") as f:
                return cls(f.read(HEAD_SIZE), path)
        except OSError:
            return cls(b"", path)

    def top_keys(self) -> frozenset[str]:
        """A YAML file's top-level keys in its first bytes (none for JSON)."""
        if self.name.endswith((".json", ".jsonl")) or self.gzip:
            return frozenset()
        return frozenset(k.decode() for k in re.findall(_TOP_KEY, self.data))

    def document(self) -> Any:
        """The whole file parsed as JSON, or None when it is not a JSON file or does not parse."""
        if self._document is self:
            self._document = None
            if self.name.endswith(".json") and self.path:
                try:
                    with open(self.path, "rb") as f:
                        self._document = json.loads(f.read())
                except (OSError, ValueError):
                    pass
        return self._document


# -- one sniff a format: each claims its own files and no other format's ------------------------------
def is_langchain_gz(head: Head) -> bool:
    """LangChain's gzip-compressed YAML (told by the gzip magic number)."""
    return head.gzip


def is_cassetter(head: Head) -> bool:
    """vcrpy's interactions with cassetter's typed bodies or its ``recorded_at``."""
    return head.interactions and bool(re.search(_CASSETTER, head.data))


def is_vcrpy(head: Head) -> bool:
    """vcrpy's (and pytest-recording's) ``interactions``, without cassetter's marks."""
    return head.interactions and not re.search(_CASSETTER, head.data)


def _otlp(head: Head) -> bool:
    return head.name.endswith((".json", ".jsonl")) and any(key in head.data[:4096] for key in _OTLP)


def is_otel(head: Head) -> bool:
    """An OTLP JSON export (``resourceSpans`` or ``resourceLogs`` at its start)."""
    return not head.interactions and _otlp(head)


def is_regista(head: Head) -> bool:
    """A ``.jsonl`` file that is no OTLP export."""
    return head.name.endswith(".jsonl") and not head.gzip and not head.interactions and not _otlp(head)


def _chunked(head: Head) -> bool:
    document = head.document()
    entries = document.get("entries") if isinstance(document, dict) else None
    return (
        isinstance(entries, list)
        and bool(entries)
        and isinstance(entries[0], dict)
        and "chunks" in entries[0]
    )


def is_agentskit(head: Head) -> bool:
    """A JSON document whose entries hold agentskit's ``chunks``."""
    return not head.interactions and not _otlp(head) and _chunked(head)


def is_llmvcr(head: Head) -> bool:
    """llmvcr's top-level keys in a YAML file, or a JSON document holding llmvcr's ``entries``."""
    if head.gzip or head.interactions or head.name.endswith(".jsonl") or _otlp(head):
        return False
    if head.top_keys():
        return bool(head.top_keys() & _LLMVCR_KEYS) and "interactions" not in head.top_keys()
    document = head.document()
    return isinstance(document, dict) and isinstance(document.get("entries"), list) and not _chunked(head)


def claims(head: Head) -> list[str]:
    """The formats whose sniff claims the file (one at most, unless two sniffs overlap: a bug)."""
    return [f.name for f in FORMATS if f.sniff is not None and resolve(f.sniff)(head)]


def detect(path: str) -> str:
    """The format of the file at ``path``: the one whose sniff claims it, else llmvcr's own (its
    loader then says why the file is none of the formats llmvcr reads)."""
    found = claims(Head.of(path))
    return found[0] if found else OWN


def foreign_format(head: bytes, path: str = "") -> str | None:
    """The name of the other recorder whose cassette starts with ``head`` (``"vcrpy"``,
    ``"cassetter"``, ``"langchain-gz"``), or None."""
    seen = Head(head, path)
    for name in in_place():
        sniff = by_name(name).sniff
        if sniff is not None and resolve(sniff)(seen):
            return name
    return None


# -- reading another recorder's cassette in place -------------------------------------------------------
Reader = Callable[[str, bytes], Any]  # (path, file bytes) -> a Cassette
_readers: dict[str, Reader] = {}  # set by a test or plugin: wins over the table's reader


def add_reader(formats: Iterable[str], reader: Reader) -> None:
    """``reader`` reads files of ``formats`` in place from now on."""
    for fmt in formats:
        _readers[fmt] = reader


def reader_for(fmt: str) -> Reader | None:
    """The reader of the in-place format ``fmt`` (the table's, imported now if it was not yet), or None."""
    reader = _readers.get(fmt)
    if reader is None and fmt in in_place():
        spec = by_name(fmt).read
        reader = None if spec is None else resolve(spec)
    return reader
