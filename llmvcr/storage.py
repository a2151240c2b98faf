"""Cassette files: YAML and JSON, format versions, safe loading, and the text a cassette is written as
(``llmvcr.writer`` writes it)."""

from __future__ import annotations

import json
import os
from typing import Any

import orjson

from . import exactjson
from .cassette import Cassette
from .entries import Entry
from .errors import CassetteFormatError, ForeignCassetteError
from .foreign import foreign_format, reader_for
from .linear import FULL_VERSION, LINEAR_VERSION, layout_of, pack, unpack
from .parse_cache import ParseCache, YamlAliasError, cache_folder_for, parse_yaml
from .schema import entry_to_mapping, migrate
from .validation import COUNT_FIELD, check_header, check_nesting, read_cassette, with_count
from .validation import check_cassette_path as check_cassette_path  # the session checks a path it may record
from .yaml_text import dump_yaml, yaml_problem


def format_of(path: str) -> str:
    return "json" if path.lower().endswith(".json") else "yaml"


def parse_document(data: bytes, path: str, *, counted: bool = True) -> dict[str, Any]:
    """The checked document a cassette file's bytes hold (see ``llmvcr.validation``); ``counted=False``
    skips the entry-count check (for ``llmvcr rehash``, which writes the count again)."""
    foreign = foreign_format(data[:65536])
    if foreign is not None:  # never parsed as an empty llmvcr cassette, never written over
        raise _foreign(path, foreign)
    fmt = format_of(path)
    try:
        if fmt == "json":
            document = check_nesting(exactjson.loads(data), path)
        else:
            parse = lambda text: check_nesting(parse_yaml(text), path)  # noqa: E731 - once per miss
            document = ParseCache(cache_folder_for(path)).load(data, parse)
    except CassetteFormatError:
        raise
    except (orjson.JSONDecodeError, json.JSONDecodeError) as err:
        raise CassetteFormatError(
            path, f"not valid JSON ({err}); restore it from version control or re-record"
        ) from None
    except YamlAliasError as err:
        raise CassetteFormatError(
            path,
            f"holds {err}; llmvcr never writes YAML aliases and refuses them (one can expand to "
            "gigabytes): write the value out in full, or restore the file from version control",
        ) from None
    except (ValueError, RecursionError, UnicodeDecodeError) as err:
        raise CassetteFormatError(path, f"unreadable ({type(err).__name__}: {err})") from None
    except Exception as err:
        problem = yaml_problem(err)
        if problem is None:
            raise
        raise CassetteFormatError(path, problem) from None
    if not isinstance(document, dict):
        raise CassetteFormatError(path, f"the top level must be a mapping, found {type(document).__name__}")
    if "interactions" in document and "entries" not in document:  # never an empty llmvcr cassette
        raise _foreign(path)
    document = migrate(document, path)
    check_header(document if counted else {k: v for k, v in document.items() if k != COUNT_FIELD}, path)
    return document


def _foreign(path: str, fmt: str = "vcrpy") -> ForeignCassetteError:
    target = os.path.splitext(path.removesuffix(".gz"))[0] + ".llmvcr.yaml"
    return ForeignCassetteError(
        path,
        f"a {fmt} cassette, not an llmvcr one: llmvcr reads it in place but never writes over it. "
        f"To record into it, convert it first: llmvcr convert {path} --to llmvcr-yaml -o {target}",
    )


def refuse_foreign(path: str) -> None:
    """``ForeignCassetteError`` when ``path`` holds another recorder's cassette (checked before a
    rewrite that would not read it first, as ``record_mode="all"`` does)."""
    try:
        with open(path, "rb") as f:
            head = f.read(65536)
    except OSError:
        return
    fmt = foreign_format(head)
    if fmt is not None:
        raise _foreign(path, fmt)


def cassette_from_document(document: dict[str, Any], path: str) -> Cassette:
    """The cassette a document holds; the header is checked now, each entry when first used."""
    entries = check_header(document, path)
    entries = unpack(entries, path) if document.get("version") == LINEAR_VERSION else entries
    seed = document.get("seed")
    cassette = Cassette(
        path,
        seed=seed,
        recorded_with=document.get("recorded_with") or {},
        metadata=document.get("metadata") or {},
        layout=layout_of(document.get("version")),
    )
    for position, raw in enumerate(entries):
        # Cheap shape checks now; the rest when the entry is first used.
        if not isinstance(raw, dict):
            raise CassetteFormatError(
                path,
                f"an entry must be a mapping, found {type(raw).__name__}; restore the file from version "
                "control or re-record",
                entry=position,
            )
        request_hash = raw.get("request_hash")
        if not isinstance(request_hash, str):
            raise CassetteFormatError(
                path,
                "missing or not text; restore the file or re-record",
                entry=position,
                field="request_hash",
            )
        cassette.add_raw(raw, request_hash)
    cassette.loaded_count = len(cassette)
    return cassette


def load_cassette(path: str | os.PathLike[str]) -> Cassette:
    """Read a cassette file (YAML or JSON by extension) with safe loaders only.

    A vcrpy, pytest-recording, cassetter or LangChain cassette is converted in memory (see
    :func:`llmvcr.from_vcrpy`) and replays as if llmvcr had recorded it; writing to it is refused.
    Raises ``CassetteNotFoundError`` when the file is missing and ``CassetteFormatError`` when
    it is corrupt, truncated, unsafe, of a newer format version, or not a file at all.
    """
    path = os.fspath(path)
    data = read_cassette(path)
    try:
        document = parse_document(data, path)
    except ForeignCassetteError as err:  # vcrpy, cassetter, LangChain: read in place
        read = reader_for(foreign_format(data[:65536]) or "vcrpy")
        if read is None:  # no importer loaded: the error says how to convert it
            raise
        cassette: Cassette = read(path, data)
        cassette.path = path
        cassette.read_only = str(err)
        cassette.loaded_count = len(cassette)
        return cassette
    return cassette_from_document(document, path)


def validate(cassette: Cassette) -> None:
    """Build every entry now, raising ``CassetteFormatError`` on the first bad one."""
    for i in range(len(cassette)):
        cassette.entry(i)


def document_of(cassette: Cassette, *, entries: bool = True) -> dict[str, Any]:
    """The cassette as the mapping its file holds, in its layout; ``entries=False``: the header only."""
    document: dict[str, Any] = {"version": FULL_VERSION, COUNT_FIELD: len(cassette)}
    if cassette.seed is not None:
        document["seed"] = cassette.seed
    document["recorded_with"] = cassette.recorded_with
    if cassette.metadata:
        document["metadata"] = cassette.metadata
    if not entries:
        return document
    full = [
        raw if not isinstance(raw, Entry) else entry_to_mapping(raw)
        for raw in (cassette.raw(i) for i in range(len(cassette)))
    ]
    if cassette.layout == "linear":  # version 2 only when an entry refers to another
        full, document["version"] = pack(full)
    document["entries"] = full
    return document


def dump_document(document: Any, fmt: str) -> bytes:
    """Serialise a document (or, for a cassette writer, a list of entry mappings) as JSON or YAML.

    A whole document's entry count is set to the entries it holds.
    """
    if (
        isinstance(document, dict)
        and document.get("version") in (FULL_VERSION, LINEAR_VERSION)
        and isinstance(document.get("entries"), list)
    ):
        document = with_count(document, len(document["entries"]))
    if fmt == "json":
        return exactjson.dumps(document, indent=True, scan=False)
    return dump_yaml(document).encode("utf-8")
