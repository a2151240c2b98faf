"""Cassette files: YAML and JSON, format versions, safe loading, and the text a cassette is written as
(``llmvcr.writer`` writes it)."""

from __future__ import annotations

import os
from typing import Any

import orjson
import yaml

from .cassette import Cassette
from .convert.vcrpy import foreign_format, from_vcrpy
from .entries import Entry
from .errors import CassetteFormatError, CassetteNotFoundError, ForeignCassetteError
from .linear import FULL_VERSION, LINEAR_VERSION, layout_of, pack, represent_dict, unpack
from .parse_cache import ParseCache, cache_folder_for, parse_yaml
from .schema import Inline, entry_to_mapping, migrate

try:  # the C parser and emitter when libyaml is there: the same safe semantics, faster
    _YamlLoader: Any = yaml.CSafeLoader
    _YamlDumperBase: Any = yaml.CSafeDumper
except AttributeError:  # pragma: no cover - libyaml missing
    _YamlLoader = yaml.SafeLoader
    _YamlDumperBase = yaml.SafeDumper


class _Dumper(_YamlDumperBase):  # type: ignore[misc]
    def ignore_aliases(self, data: Any) -> bool:
        return True  # a value shared by two entries is written out twice, never as &id001/*id001


def _represent_str(dumper: Any, value: str) -> Any:
    # Multi-line text as a block scalar, so a PR diff reads like the conversation.
    if (
        "\n" in value
        and not any(c in value for c in "\r\t\x0b\x0c\x85\u2028\u2029")
        and value == value.rstrip(" ")
    ):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _represent_str)
_Dumper.add_representer(
    Inline, lambda dumper, value: dumper.represent_sequence("tag:yaml.org,2002:seq", value, flow_style=True)
)
_Dumper.add_representer(dict, represent_dict)


def format_of(path: str) -> str:
    return "json" if path.lower().endswith(".json") else "yaml"


def parse_document(data: bytes, path: str) -> dict[str, Any]:
    foreign = foreign_format(data[:65536])
    if foreign is not None:  # never parsed as an empty llmvcr cassette, never written over
        raise _foreign(path, foreign)
    fmt = format_of(path)
    try:
        document = (
            orjson.loads(data) if fmt == "json" else ParseCache(cache_folder_for(path)).load(data, parse_yaml)
        )
    except orjson.JSONDecodeError as err:
        raise CassetteFormatError(
            path, f"not valid JSON ({err}); restore it from version control or re-record"
        ) from None
    except yaml.constructor.ConstructorError as err:
        raise CassetteFormatError(
            path, f"refused an unsafe or unknown YAML tag: {err.problem} {err.problem_mark}"
        ) from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise CassetteFormatError(
            path, f"not valid YAML{where}; restore it from version control or re-record"
        ) from None
    except (ValueError, RecursionError, UnicodeDecodeError) as err:
        raise CassetteFormatError(path, f"unreadable ({type(err).__name__}: {err})") from None
    if not isinstance(document, dict):
        raise CassetteFormatError(path, f"the top level must be a mapping, found {type(document).__name__}")
    if "interactions" in document and "entries" not in document:  # never an empty llmvcr cassette
        raise _foreign(path)
    return migrate(document, path)


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
    entries = document.get("entries") or []
    if not isinstance(entries, list):
        raise CassetteFormatError(path, "expected a list", field="entries")
    entries = unpack(entries, path) if document.get("version") == LINEAR_VERSION else entries
    seed = document.get("seed")
    recorded_with = document.get("recorded_with") or {}
    metadata = document.get("metadata") or {}
    if not isinstance(recorded_with, dict):
        raise CassetteFormatError(path, "expected a mapping", field="recorded_with")
    if not isinstance(metadata, dict):
        raise CassetteFormatError(path, "expected a mapping", field="metadata")
    cassette = Cassette(
        path,
        seed=None if seed is None else str(seed),
        recorded_with={str(k): str(v) for k, v in recorded_with.items()},
        metadata=metadata,
        layout=layout_of(document.get("version")),
    )
    for position, raw in enumerate(entries):
        # Cheap shape checks now; the rest when the entry is first used.
        if not isinstance(raw, dict):
            raise CassetteFormatError(
                path, f"an entry must be a mapping, found {type(raw).__name__}", entry=position
            )
        request_hash = raw.get("request_hash")
        if not isinstance(request_hash, str):
            raise CassetteFormatError(path, "missing or not a string", entry=position, field="request_hash")
        cassette.add_raw(raw, request_hash)
    cassette.loaded_count = len(cassette)
    return cassette


def load_cassette(path: str | os.PathLike[str]) -> Cassette:
    """Read a cassette file (YAML or JSON by extension) with safe loaders only.

    A vcrpy, pytest-recording, cassetter or LangChain cassette is converted in memory (see
    :func:`llmvcr.from_vcrpy`) and replays as if llmvcr had recorded it; writing to it is refused.
    Raises ``CassetteNotFoundError`` when the file is missing and ``CassetteFormatError`` when
    it is corrupt, truncated, unsafe or of a newer format version.
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise CassetteNotFoundError(
            f"{path}: no such cassette; record it first (record_mode='once')"
        ) from None
    try:
        document = parse_document(data, path)
    except ForeignCassetteError as err:  # vcrpy, cassetter, LangChain: read in place
        cassette = from_vcrpy(path, data)
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
    document: dict[str, Any] = {"version": FULL_VERSION}
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
    """Serialise a document (or, for a cassette writer, a list of entry mappings) as JSON or YAML."""
    if fmt == "json":
        return orjson.dumps(document, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
    text: str = yaml.dump(
        document, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100, default_flow_style=False
    )
    return text.encode("utf-8")
