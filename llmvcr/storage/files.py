"""Cassette files: YAML and JSON, format versions, safe loading, and the text a cassette is written as
(``llmvcr.storage.writer`` writes it)."""

from __future__ import annotations

import json
import os
import shlex
import warnings
from typing import Any

import orjson

from ..cassette import Cassette, exactjson
from ..cassette.entries import Entry
from ..cassette.linear import FULL_VERSION, LINEAR_VERSION, layout_of, pack, unpack
from ..cassette.loaded import LoadedEntries
from ..cassette.schema import entry_from_mapping, entry_to_mapping, migrate
from ..errors import CassetteFormatError, EditedCassetteWarning, ForeignCassetteError
from ..matching import default_request_hash
from .parse_cache import ParseCache, YamlAliasError, cache_folder_for, parse_yaml
from .sniff import foreign_format, reader_for
from .validation import (
    END_KEY,
    check_count,
    check_end,
    check_header,
    check_nesting,
    read_cassette,
    sealed,
    with_count,
    without_trailer,
)
from .validation import check_cassette_path as check_cassette_path  # the session checks a path it may record
from .yaml_text import dump_yaml, yaml_problem


def format_of(path: str) -> str:
    return "json" if path.lower().endswith(".json") else "yaml"


Stale = dict[int, str]  # position -> the hash its request reads as now, for each hand-edited entry
Built = tuple[list[Any], list[Entry]]  # the entries' mappings (unpacked) and the entries checking built


def parse_document(data: bytes, path: str, *, counted: bool = True, cached: bool = True) -> dict[str, Any]:
    """The checked document a cassette file's bytes hold (see ``storage.validation``); ``counted=False``
    skips the entry-count check (for ``llmvcr rehash``, which writes the count again)."""
    return parse_checked(data, path, counted=counted, cached=cached)[0]


def parse_checked(
    data: bytes, path: str, *, counted: bool = True, cached: bool = True
) -> tuple[dict[str, Any], Stale]:
    """The checked document and its hand-edited entries (:data:`Stale`).

    Every field of every entry is checked, and every request hashed, once per content: the result
    is kept in the parse cache by the sha256 of the bytes (``cached=False``: not kept, for a tool
    reading many one-off texts), so a file loaded again costs the parse cache's read only. A file
    with a wrong-typed field or cut short is refused here, before anything can serve or rewrite it.
    """
    document, stale, _ = _parse_checked(data, path, counted=counted, cached=cached)
    return document, stale


def _parse_checked(
    data: bytes, path: str, *, counted: bool = True, cached: bool = True
) -> tuple[dict[str, Any], Stale, Built | None]:
    """:func:`parse_checked`, with the entries its check built when the bytes were checked now
    (None when the parse cache answered): a cassette loaded from them serves those, not rebuilt ones."""
    foreign = foreign_format(data[:65536])
    if foreign is not None:  # never parsed as an empty llmvcr cassette, never written over
        raise _foreign(path, foreign)
    built: list[Built] = []

    def check(text: bytes) -> dict[str, Any]:  # once per cache miss
        return _checked(text, path, counted, built)

    try:
        found = ParseCache(cache_folder_for(path)).load(data, check) if cached else check(data)
        if not _well_formed(found):  # a cache entry of another shape: never trusted
            found = check(data)
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
        if b"\n" + END_KEY.encode() + b":" in data and without_trailer(data) is None:
            problem += f"; an entry added by hand goes above the line '{END_KEY}: true'"
        raise CassetteFormatError(path, problem) from None
    document: dict[str, Any] = found["document"]
    if counted:  # a cached result was counted when stored; this costs nothing and trusts nothing
        check_count(document, path)
    return document, {position: fresh for position, fresh in found["stale"]}, built[-1] if built else None


def _well_formed(found: Any) -> bool:
    return (
        isinstance(found, dict)
        and isinstance(found.get("document"), dict)
        and isinstance(found.get("stale"), list)
        and all(isinstance(p, list) and len(p) == 2 for p in found["stale"])
    )


def _checked(data: bytes, path: str, counted: bool, built: list[Built] | None = None) -> dict[str, Any]:
    """What the parse cache keeps for ``data``: the document, checked whole, and its stale hashes;
    the entries built to check it are appended to ``built``."""
    if format_of(path) == "json":
        document = check_nesting(exactjson.loads(data), path)
    else:
        document = check_nesting(parse_yaml(data), path)
    if not isinstance(document, dict):
        raise CassetteFormatError(path, f"the top level must be a mapping, found {type(document).__name__}")
    if "interactions" in document and "entries" not in document:  # never an empty llmvcr cassette
        raise _foreign(path)
    document = migrate(document, path)
    if "entries" in document and counted:  # said first: "holds 3 of the 10 entries" is the clearest
        check_count(document, path)
    entries = check_header(document, path)
    check_end(document, path)  # before any entry: a cut inside one is a cut, not a wrong field
    if document.get("version") == LINEAR_VERSION:
        entries = unpack(entries, path)
    stale = []
    checked = []
    for position, raw in enumerate(entries):
        entry = entry_from_mapping(raw, path, position)  # a wrong-typed field is refused at load
        checked.append(entry)
        fresh = default_request_hash(entry.request.normalised())
        if fresh != entry.request_hash and not entry.hashed_as_sent:
            stale.append([position, fresh])
    if built is not None:
        built.append((entries, checked))
    return {"document": document, "stale": stale}


def convert_command(path: str) -> str:
    """The command that makes another recorder's cassette an llmvcr one, in place: the test goes on
    reading the file it names (a compressed file gets an llmvcr file beside it)."""
    target = os.path.splitext(path.removesuffix(".gz"))[0] + ".llmvcr.yaml" if path.endswith(".gz") else path
    return f"llmvcr convert {shlex.quote(path)} --to llmvcr-yaml -o {shlex.quote(target)}"


def _foreign(path: str, fmt: str = "vcrpy") -> ForeignCassetteError:
    return ForeignCassetteError(
        path,
        f"a {fmt} cassette, not an llmvcr one: llmvcr reads it in place but never writes over it. "
        f"To record into it, convert it first: {convert_command(path)}",
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


def cassette_from_document(
    document: dict[str, Any], path: str, stale: Stale | None = None, *, built: Built | None = None
) -> Cassette:
    """The cassette a checked document holds (see :func:`parse_checked`); ``built``: its entries as
    checking the document built them, served as they are (else each is built when first served).

    An entry edited by hand (``stale``: its stored ``request_hash`` no longer fits its request) is
    indexed by its request as it reads now, never by the old hash, so a copied entry with a new
    prompt answers that prompt and never a second call of the one it was copied from. An
    ``EditedCassetteWarning`` names the entries and ``llmvcr rehash``, which stores the new hashes.
    """
    linear = built is None and document.get("version") == LINEAR_VERSION  # unpacked when read
    entries = check_header(document, path) if built is None else built[0]
    seed = document.get("seed")
    cassette = Cassette(
        path,
        seed=seed,
        recorded_with=document.get("recorded_with") or {},
        metadata=document.get("metadata") or {},
        layout=layout_of(document.get("version")),
    )
    checked = built[1] if built is not None else None
    cassette.load(LoadedEntries(entries, path, entry_from_mapping, linear=linear, stale=stale, built=checked))
    if stale:
        shown = ", ".join(str(i) for i in sorted(stale)[:10]) + (", ..." if len(stale) > 10 else "")
        warnings.warn(
            f"{path}: entry {shown} was edited by hand (its stored request_hash no longer fits its "
            f"request); it answers its request as it reads now, never the one it was copied from. "
            f"Store the new hash with: llmvcr rehash {path}",
            EditedCassetteWarning,
            stacklevel=3,
        )
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
        document, stale, built = _parse_checked(data, path)
    except ForeignCassetteError as err:  # vcrpy, cassetter, LangChain: read in place
        read = reader_for(foreign_format(data[:65536]) or "vcrpy")
        if read is None:  # no importer loaded: the error says how to convert it
            raise
        cassette: Cassette = read(path, data)
        cassette.path = path
        cassette.read_only = str(err)
        cassette.loaded_count = len(cassette)
        return cassette
    return cassette_from_document(document, path, stale, built=built)


def validate(cassette: Cassette) -> None:
    """Build every entry now, raising ``CassetteFormatError`` on the first bad one."""
    for i in range(len(cassette)):
        cassette.entry(i)


def document_of(cassette: Cassette, *, entries: bool = True) -> dict[str, Any]:
    """The cassette as the mapping its file holds, in its layout; ``entries=False``: the header only."""
    document: dict[str, Any] = with_count({"version": FULL_VERSION}, len(cassette))
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

    A whole document's entry count is set to the entries it holds, and it ends with its end marker.
    """
    if (
        isinstance(document, dict)
        and document.get("version") in (FULL_VERSION, LINEAR_VERSION)
        and isinstance(document.get("entries"), list)
    ):
        document = sealed(document, len(document["entries"]))
    if fmt == "json":
        return exactjson.dumps(document, indent=True, scan=False)
    return dump_yaml(document).encode("utf-8")
