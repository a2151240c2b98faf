"""Other recorders' cassette files: told apart by their first bytes, read in place by the reader
registered for their format.

``storage`` asks here, below every converter: it refuses to parse or write over such a file as an
llmvcr cassette, and reads it in place with the reader registered for its format. The importers
live in ``llmvcr.convert``, above storage and slow to import (6 to 9 ms), so the built-in readers are
named here as ``"module:function"`` and imported the first time a foreign file is read: a process
that only replays llmvcr cassettes never imports ``llmvcr.convert``.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable
from typing import Any

GZIP_MAGIC = b"\x1f\x8b"  # LangChain's .yaml.gz cassettes

# YAML's top-level key, or JSON's (vcrpy's json serializer writes "version" first, one key a line)
_INTERACTIONS = re.compile(rb'^(?:interactions\s*:|\{?\s*"interactions"\s*:)', re.MULTILINE)
_ENTRIES = re.compile(rb'^entries\s*:|"entries"\s*:', re.MULTILINE)

Reader = Callable[[str, bytes], Any]  # (path, file bytes) -> a Cassette
_readers: dict[str, Reader] = {}
# format -> the reader, imported on first use (an entry of _readers wins: a test or plugin may set one)
_BUILT_IN = {
    "vcrpy": "llmvcr.convert.vcrpy:from_vcrpy",
    "langchain-gz": "llmvcr.convert.vcrpy:from_vcrpy",
}


def foreign_format(head: bytes) -> str | None:
    """``"langchain-gz"`` or ``"vcrpy"`` when the start of a file is another recorder's cassette."""
    if head[:2] == GZIP_MAGIC:
        return "langchain-gz"
    if _ENTRIES.search(head):
        return None
    if _INTERACTIONS.search(head) or (head.lstrip()[:1] == b"{" and b'"interactions"' in head):
        return "vcrpy"  # the second test: vcrpy's JSON written on one line
    return None


def add_reader(formats: Iterable[str], reader: Reader) -> None:
    """``reader`` reads files of ``formats`` in place from now on."""
    for fmt in formats:
        _readers[fmt] = reader


def reader_for(fmt: str) -> Reader | None:
    """The reader registered for ``fmt`` (a built-in one imported now if it was not yet), or None."""
    reader = _readers.get(fmt)
    if reader is None and fmt in _BUILT_IN:
        module, _, name = _BUILT_IN[fmt].partition(":")
        reader = _readers[fmt] = getattr(importlib.import_module(module), name)
    return reader
