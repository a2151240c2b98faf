"""The one path syntax of ``ignore=`` and ``redact=``: ``$.messages[*].content[0].cache_control``.

A path starts with ``$.`` and names dotted keys, list positions ``[N]`` and every item ``[*]``.
``ignore=`` also takes the path without ``$.`` (its first spelling); ``redact=`` cannot, since a
bare string there is a regex, so a string that reads like a path is refused with the right form.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

Path = list[str | int]

# Compiled when a path option is first read (``re`` keeps them)
_TOKEN = r"([^.\[\]]+)|\[(\*|-?\d+)\]"
_LOOKS_LIKE_PATH = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*|\[(\*|\d+)\])+$"


def parse_path(path: str, *, option: str = "path") -> Path:
    """``$.messages[*].content[0]`` (or, for ``ignore=``, ``messages[*].content[0]``) ->
    ``["messages", "*", "content", 0]``; ``ValueError`` naming ``option`` on anything else."""
    text = path[2:] if path.startswith("$.") else path
    example = "like '$.metadata.user_id' or '$.messages[*].content[0].cache_control'"
    if not text or text.startswith((".", "$")) or ".." in text:
        raise ValueError(
            f"{option}: {path!r} is not a JSON path; write dotted keys with [N] or [*], {example}"
        )
    tokens: Path = []
    position = 0
    for match in re.finditer(_TOKEN, text):
        if match.start() != position:
            raise ValueError(
                f"{option}: {path!r}: unexpected text at {position + len(path) - len(text)}, {example}"
            )
        key, index = match.groups()
        tokens.append(key if key is not None else "*" if index == "*" else int(index))
        position = match.end()
        if position < len(text) and text[position] == ".":
            position += 1
    if position != len(text):
        raise ValueError(
            f"{option}: {path!r}: unexpected text at {position + len(path) - len(text)}, {example}"
        )
    return tokens


def looks_like_path(text: str) -> bool:
    """``metadata.user_id``: a string a user meant as a path (for ``redact=``, where it would be a regex)."""
    return bool(re.match(_LOOKS_LIKE_PATH, text))


def drop(node: Any, tokens: Sequence[str | int]) -> None:
    """Delete, in place, every value ``tokens`` reaches in ``node`` (``ignore=``)."""
    if not tokens:
        return
    head, rest = tokens[0], tokens[1:]
    if isinstance(node, dict):
        keys = list(node) if head == "*" else [head] if head in node else []
        for key in keys:
            if rest:
                drop(node[key], rest)
            else:
                del node[key]
    elif isinstance(node, list):
        if head == "*":
            indexes = list(range(len(node)))
        elif isinstance(head, int) and -len(node) <= head < len(node):
            indexes = [head % len(node)]
        else:
            indexes = []
        if rest:
            for i in indexes:
                drop(node[i], rest)
        else:
            for i in sorted(indexes, reverse=True):
                del node[i]


def blank(node: Any, tokens: Sequence[str | int], mark: str = "<REDACTED:path>") -> Any:
    """A copy of ``node`` with every value ``tokens`` reaches replaced by ``mark`` (``redact=``)."""
    if not tokens:
        return mark
    head, rest = tokens[0], tokens[1:]
    if isinstance(node, dict):
        return {k: blank(v, rest, mark) if head in ("*", k) else v for k, v in node.items()}
    if isinstance(node, list):
        n = len(node)
        return [
            blank(v, rest, mark) if head == "*" or (isinstance(head, int) and i == head % max(n, 1)) else v
            for i, v in enumerate(node)
        ]
    return node
