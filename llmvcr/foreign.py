"""Other recorders' cassette files: told apart by their first bytes, read in place by the reader
registered for their format.

``storage`` asks here, below every converter: it refuses to parse or write over such a file as an
llmvcr cassette, and reads it in place with the reader the importer (``llmvcr.convert.vcrpy``)
registered when it was imported (``llmvcr.api`` and ``llmvcr.clients`` import it).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

GZIP_MAGIC = b"\x1f\x8b"  # LangChain's .yaml.gz cassettes

# YAML's top-level key, or JSON's (vcrpy's json serializer writes "version" first, one key a line)
_INTERACTIONS = re.compile(rb'^(?:interactions\s*:|\{?\s*"interactions"\s*:)', re.MULTILINE)
_ENTRIES = re.compile(rb'^entries\s*:|"entries"\s*:', re.MULTILINE)

Reader = Callable[[str, bytes], Any]  # (path, file bytes) -> a Cassette
_readers: dict[str, Reader] = {}


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
    """The reader registered for ``fmt``, or None."""
    return _readers.get(fmt)
