"""Every file format llmvcr reads or writes, declared once: its name, suffixes, sniff, read and write.

The command line's ``--from`` and ``--to`` choices, its detection of a file's format, the files
``llmvcr ls`` reads in place, the formats storage refuses to write over, the known formats an
unreadable file's error lists, and llmvcr's lazy ``from_*`` / ``to_*`` names all come from
:data:`FORMATS`. A sniff, a reader and a writer are named as ``"module:function"`` and imported the
first time they are used: ``import llmvcr`` never imports ``llmvcr.convert``.

>>> by_name("agentskit").suffixes
('.json',)
>>> resolve(by_name("regista").write)  # imports llmvcr.convert.regista now
<function to_regista_trace at ...>
"""

from __future__ import annotations

import importlib
from typing import Any, NamedTuple

# llmvcr's own cassettes: what a file no sniff claims is read as (its loader names the problem)
OWN = "llmvcr"
_CONVERTERS = "llmvcr.convert."  # where the converters the package exports by name live


class Format(NamedTuple):
    """One format: a sniff tells its files apart, ``read`` turns a file into a ``Cassette``,
    ``write`` a ``Cassette`` into a file (``None``: llmvcr does not go that way)."""

    name: str  # as --from, --to and every message spell it
    title: str  # how the list of known formats names its files
    suffixes: tuple[str, ...]  # the file names it comes in; a file written in it gets the first
    sniff: str | None  # "module:function", (Head) -> bool, from the first bytes (or top-level keys)
    read: str | None  # "module:function", (path) -> Cassette
    write: str | None  # "module:function", (cassette, path) -> the path written
    # another recorder's cassette: read in place by storage and `ls`, never written over
    in_place: bool = False
    # llmvcr tells it by the file's extension, so a file written in it needs one
    named_by_suffix: bool = False


_VCRPY = "llmvcr.convert.vcrpy:from_vcrpy"  # reads every layout built on vcrpy's interactions
_YAML_OR_JSON = (".yaml", ".yml", ".json")

# in the order the command line offers them
FORMATS: tuple[Format, ...] = (
    Format(
        OWN,
        "llmvcr cassettes",
        _YAML_OR_JSON,
        "llmvcr.storage.sniff:is_llmvcr",
        "llmvcr.storage.files:load_cassette",
        None,
    ),
    Format(
        "vcrpy", "vcrpy/pytest-recording", _YAML_OR_JSON, "llmvcr.storage.sniff:is_vcrpy", _VCRPY, None, True
    ),
    Format("cassetter", "cassetter", _YAML_OR_JSON, "llmvcr.storage.sniff:is_cassetter", _VCRPY, None, True),
    Format(
        "langchain-gz",
        "LangChain (.yaml.gz) cassettes",
        (".yaml.gz", ".yml.gz"),
        "llmvcr.storage.sniff:is_langchain_gz",
        _VCRPY,
        None,
        True,
    ),
    Format(
        "regista",
        "regista traces (.jsonl)",
        (".jsonl",),
        "llmvcr.storage.sniff:is_regista",
        "llmvcr.convert.regista_trace:from_regista_trace",
        "llmvcr.convert.regista:to_regista_trace",
    ),
    Format(
        "agentskit",
        "agentskit cassettes",
        (".json",),
        "llmvcr.storage.sniff:is_agentskit",
        "llmvcr.convert.agentskit:from_agentskit",
        "llmvcr.convert.agentskit:to_agentskit",
    ),
    Format(
        "otel",
        "OTLP JSON exports of GenAI spans",
        (".json", ".jsonl"),
        "llmvcr.storage.sniff:is_otel",
        "llmvcr.convert.otel:from_otel",
        None,
    ),
    Format(
        "llmvcr-json",
        "llmvcr JSON cassettes",
        (".json",),
        None,
        None,
        "llmvcr.storage.writer:write_over",
        False,
        True,
    ),
    Format(
        "llmvcr-yaml",
        "llmvcr YAML cassettes",
        (".yaml", ".yml"),
        None,
        None,
        "llmvcr.storage.writer:write_over",
        False,
        True,
    ),
)


def by_name(name: str) -> Format:
    """The format called ``name`` (``KeyError`` when there is none)."""
    for fmt in FORMATS:
        if fmt.name == name:
            return fmt
    raise KeyError(name)


def readable() -> tuple[str, ...]:
    """The names ``--from`` accepts: every format llmvcr reads."""
    return tuple(f.name for f in FORMATS if f.read is not None)


def writable() -> tuple[str, ...]:
    """The names ``--to`` accepts: every format llmvcr writes."""
    return tuple(f.name for f in FORMATS if f.write is not None)


def in_place() -> tuple[str, ...]:
    """Other recorders' cassettes, read in place and never written over."""
    return tuple(f.name for f in FORMATS if f.in_place)


def suffixes(names: tuple[str, ...]) -> tuple[str, ...]:
    """The file suffixes of the formats ``names``, each once, in the table's order."""
    return tuple(dict.fromkeys(s for f in FORMATS if f.name in names for s in f.suffixes))


def known() -> str:
    """What llmvcr reads, for an error about a file it cannot tell."""
    titles = list(dict.fromkeys(f.title for f in FORMATS if f.read is not None))
    return f"llmvcr reads {', '.join(titles[:-1])} and {titles[-1]}"


def converters() -> dict[str, str]:
    """The converters the package exports by their own names (``from_vcrpy``, ``to_agentskit``...),
    each as ``"module:function"``: every read and write of the table under ``llmvcr.convert``."""
    specs = (spec for f in FORMATS for spec in (f.read, f.write) if spec and spec.startswith(_CONVERTERS))
    return {spec.partition(":")[2]: spec for spec in specs}


_resolved: dict[str, Any] = {}


def resolve(spec: str) -> Any:
    """The function a ``"module:function"`` names, its module imported on first use."""
    found = _resolved.get(spec)
    if found is None:
        module, _, name = spec.partition(":")
        found = _resolved[spec] = getattr(importlib.import_module(module), name)
    return found
