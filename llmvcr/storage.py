"""Cassette files: YAML and JSON, format versions, safe loading, and the text a cassette is written as
(``llmvcr.writer`` writes it)."""

from __future__ import annotations

import os
import re
from typing import Any

import orjson
import yaml

from .cassette import Cassette
from .entries import Entry
from .errors import CassetteFormatError, CassetteNotFoundError, ForeignCassetteError
from .parse_cache import ParseCache, cache_folder_for, parse_yaml
from .schema import FORMAT_VERSION, Inline, entry_to_mapping, migrate

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


def format_of(path: str) -> str:
    return "json" if path.lower().endswith(".json") else "yaml"


def parse_document(data: bytes, path: str) -> dict[str, Any]:
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


def _foreign(path: str) -> ForeignCassetteError:
    target = os.path.splitext(path)[0] + ".llmvcr.yaml"
    return ForeignCassetteError(
        path,
        f"a vcrpy/pytest-recording cassette, not an llmvcr one; llmvcr neither reads it as empty "
        f"nor writes over it. Convert it: llmvcr convert {path} --to llmvcr-yaml -o {target}",
    )


_INTERACTIONS = re.compile(rb'^(?:interactions\s*:|\{\s*"interactions")', re.MULTILINE)


def refuse_foreign(path: str) -> None:
    """``ForeignCassetteError`` when ``path`` holds another recorder's cassette (checked before a
    rewrite that would not read it first, as ``record_mode="all"`` does)."""
    try:
        with open(path, "rb") as f:
            head = f.read(65536)
    except OSError:
        return
    if _INTERACTIONS.search(head) and not re.search(rb"^entries\s*:|\"entries\"", head, re.MULTILINE):
        raise _foreign(path)


def cassette_from_document(document: dict[str, Any], path: str) -> Cassette:
    entries = document.get("entries") or []
    if not isinstance(entries, list):
        raise CassetteFormatError(path, "expected a list", field="entries")
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
    return cassette_from_document(parse_document(data, path), path)


def validate(cassette: Cassette) -> None:
    """Build every entry now, raising ``CassetteFormatError`` on the first bad one."""
    for i in range(len(cassette)):
        cassette.entry(i)


def document_of(cassette: Cassette) -> dict[str, Any]:
    document: dict[str, Any] = {"version": FORMAT_VERSION}
    if cassette.seed is not None:
        document["seed"] = cassette.seed
    document["recorded_with"] = cassette.recorded_with
    if cassette.metadata:
        document["metadata"] = cassette.metadata
    document["entries"] = [
        raw if not isinstance(raw, Entry) else entry_to_mapping(raw)
        for raw in (cassette.raw(i) for i in range(len(cassette)))
    ]
    return document


def dump_document(document: Any, fmt: str) -> bytes:
    """Serialise a document (or, for a cassette writer, a list of entry mappings) as JSON or YAML."""
    if fmt == "json":
        return orjson.dumps(document, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
    text: str = yaml.dump(
        document, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100, default_flow_style=False
    )
    return text.encode("utf-8")
