"""Where the pytest plugin keeps a test's cassette: ``cassettes/<module>/<test id>.yaml`` beside the
test file, the name earlier releases gave, or the file pytest-recording wrote for the same test."""

from __future__ import annotations

import hashlib
import os
import re
import warnings

import pytest

from ..options import with_suffix
from ..redaction import Redactor

_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_LEGACY_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]+")
_REDACTED = re.compile(r"<REDACTED:([a-z-]+)>")
_LONGEST = 250  # bytes of a cassette's file name before ".yaml" (escaped names are ASCII)


def _escape(text: str) -> str:
    """Each character outside ``[A-Za-z0-9_.-]`` as ``%XX`` per UTF-8 byte: an escape, not a
    replacement, so two different ids never share a file (``a/b`` -> ``a%2Fb``, ``a b`` -> ``a%20b``)."""
    return "".join(
        c if c in _SAFE else "".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass")) for c in text
    )


def _redacted(text: str) -> str:
    # a key in a test id must not become a file name (nor reach the play log or a summary)
    return _REDACTED.sub(r"REDACTED-\1", Redactor().text(text))


def cassette_name(node: pytest.Item) -> str:
    """``test_chat.py::TestX::test_one[gpt-4o/a b]`` -> ``test_chat/TestX.test_one[gpt-4o%2Fa%20b]``.

    Ids made of ``[A-Za-z0-9_.-]`` are kept as they are; other characters are percent-escaped.
    """
    module = os.path.splitext(os.path.basename(str(node.path)))[0]
    head, bracket, params = node.nodeid.partition("[")  # a parameter id may hold "::" itself
    base = ".".join(head.split("::")[1:]) or node.name.partition("[")[0]
    name = _escape(_redacted(base))
    if bracket:
        name += f"[{_escape(_redacted(params[:-1] if params.endswith(']') else params))}]"
    if len(name) > _LONGEST:  # a file name holds 255 bytes: cut, and tell the cut names apart by hash
        name = name[: _LONGEST - 20] + "~" + hashlib.sha256(name.encode()).hexdigest()[:16]
    return f"{module}/{name}"


def legacy_cassette_name(node: pytest.Item) -> str:
    """The name earlier releases gave (unsafe runs replaced, so different ids could share it)."""
    module = os.path.splitext(os.path.basename(str(node.path)))[0]
    name = _redacted(".".join(node.nodeid.split("::")[1:]) or node.name)
    base, bracket, params = name.partition("[")
    safe = _LEGACY_UNSAFE.sub("_", base)
    if bracket:
        safe += "[" + _LEGACY_UNSAFE.sub("-", params.rstrip("]")).strip("-") + "]"
    return f"{module}/{safe}"


def cassette_path(node: pytest.Item, name: str | None = None) -> str:
    directory = node.config.getoption("llmvcr_dir") or os.path.join(
        os.path.dirname(str(node.path)), "cassettes"
    )
    relative = name if name is not None else cassette_name(node)
    path = os.path.join(directory, relative)
    if not relative.endswith((".yaml", ".yml", ".json")):
        path = with_suffix(path)  # the ini's llmvcr_cassette_format, or the file that exists
    if name is None and not os.path.lexists(path):
        legacy = os.path.join(directory, legacy_cassette_name(node) + ".yaml")
        if legacy != path and os.path.lexists(legacy):
            warnings.warn(
                f"{node.nodeid}: its cassette is now named {path}; using {legacy}, its old name, "
                f"which other ids may share. Rename the file (git mv), or re-record it",
                FutureWarning,
                stacklevel=2,
            )
            return legacy
    return path
