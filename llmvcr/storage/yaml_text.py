"""YAML cassette text through PyYAML, imported on first use.

Importing PyYAML costs ~10 ms (its reader compiles a large Unicode pattern), which a process that
replays JSON cassettes, or only YAML ones found in the parse cache, never needs to pay. The C
loader and emitter are used when libyaml is there: the same safe semantics, faster.
"""

from __future__ import annotations

import functools
import re
import sys
from typing import Any

from ..cassette.exactjson import NonFinite
from ..cassette.linear import represent_dict
from ..cassette.schema import Inline

__all__ = ["YamlAliasError", "dump_yaml", "load_yaml", "loader_and_dumper", "yaml_problem"]


class YamlAliasError(ValueError):
    """A YAML alias (``*name``): llmvcr never writes one, and a few can expand to billions of values."""

    def __init__(self, line: int) -> None:
        super().__init__(f"an alias (*name) of the value anchored (&name) at line {line}")
        self.line = line


@functools.cache
def loader_and_dumper() -> tuple[Any, Any]:
    """PyYAML's safe loader, and llmvcr's dumper: block text, inline timing, no aliases."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    dumper_base = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

    class Dumper(dumper_base):  # type: ignore[misc, valid-type]
        def ignore_aliases(self, data: Any) -> bool:
            return True  # a value shared by two entries is written out twice, never as &id001/*id001

    Dumper.add_representer(str, _represent_str)
    Dumper.add_representer(NonFinite, Dumper.represent_float)  # NaN read from JSON: .nan
    Dumper.add_representer(dict, represent_dict)  # a linear layout's {same_as: N} on one line
    Dumper.add_representer(
        Inline,
        lambda dumper, value: dumper.represent_sequence("tag:yaml.org,2002:seq", value, flow_style=True),
    )
    return loader, Dumper


def _represent_str(dumper: Any, value: str) -> Any:
    # Multi-line text as a block scalar, so a PR diff reads like the conversation.
    if (
        "\n" in value
        and not any(c in value for c in "\r\t\x0b\x0c\x85\u2028\u2029")
        and value == value.rstrip(" ")
    ):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


@functools.cache
def _no_alias_loader() -> Any:
    class NoAliasLoader(loader_and_dumper()[0]):  # type: ignore[misc]
        """The safe loader, refusing the second use of a node: only an alias builds a node twice."""

        def construct_object(self, node: Any, deep: bool = False) -> Any:
            if node in self.constructed_objects or node in self.recursive_objects:
                raise YamlAliasError(node.start_mark.line + 1)
            return super().construct_object(node, deep)

    return NoAliasLoader


# An anchor (&name) is what an alias needs; a match inside text only costs the checking loader.
_ANCHOR = re.compile(rb"[\s\[\{,:]&[^\s\[\]\{\},]")  # ':' for a flow key: {"a":&x [1]}


def load_yaml(data: bytes) -> Any:
    """PyYAML's safe (C) loader, refusing aliases (``YamlAliasError``): the reference of every path."""
    import yaml

    anchored = _ANCHOR.search(data) or data.startswith(b"&")
    return yaml.load(data, Loader=_no_alias_loader() if anchored else loader_and_dumper()[0])


def dump_yaml(document: Any) -> str:
    """A document as a cassette's YAML text."""
    import yaml

    text: str = yaml.dump(
        document,
        Dumper=loader_and_dumper()[1],
        sort_keys=False,
        allow_unicode=True,
        width=100,
        default_flow_style=False,
    )
    # PyYAML closes a document whose last scalar keeps its trailing newlines (``|+``) with "...";
    # entries are text inside a longer document (more entries, then the end marker follow), where
    # that line would end the document early. The next line, indented less, ends the scalar alike.
    return text.removesuffix("...\n")


def yaml_problem(error: BaseException) -> str | None:
    """What a PyYAML error says about the file, for ``CassetteFormatError``; None for any other error."""
    yaml = sys.modules.get("yaml")  # a PyYAML error means PyYAML is imported
    if yaml is None:
        return None
    if isinstance(error, yaml.constructor.ConstructorError):
        return f"refused an unsafe or unknown YAML tag: {error.problem} {error.problem_mark}"
    if isinstance(error, yaml.YAMLError):
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None)
        where += f" ({problem})" if problem else ""
        return f"not valid YAML{where}; restore it from version control or re-record"
    return None
