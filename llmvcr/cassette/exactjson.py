"""JSON that keeps every number as the API sent it: orjson's speed, Python's ``json`` where orjson loses.

orjson reads an integer past 64 bits as a float, refuses to write one, refuses ``NaN`` and
``Infinity`` (which Python's ``json`` and so every Python SDK accept), and writes ``NaN`` as
``null``. Those documents take the standard library path, so a recorded ``2**70`` replays as
``2**70`` and a ``NaN`` as ``NaN``.

>>> loads(b'{"n": 123456789012345678901234567890, "x": NaN}')
{'n': 123456789012345678901234567890, 'x': nan}
"""

from __future__ import annotations

import json
import math
from typing import Any

import orjson

__all__ = ["NonFinite", "dumps", "loads"]


class NonFinite(float):
    """``NaN`` or an infinity read from JSON. orjson refuses to write a float subclass (where it
    would write ``null`` for a plain ``nan``), so :func:`dumps` writes it back as it was read."""


def _number(text: str) -> float:
    value = float(text)
    return value if math.isfinite(value) else NonFinite(value)  # 1e400 reads as an infinity


# An integer of 19 digits or more may be one orjson reads as a float (past -2**63 or 2**64). Runs
# of digits are found at C speed (every digit made "0", then a find); digits inside a word or a
# hash ("sha256:...") are told apart by the bytes around them.
_ZEROS = bytes.maketrans(b"123456789", b"000000000")
_RUN = b"0" * 19
_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_.")
_AFTER = frozenset(b" \t\r\n,]}")


def _long_integer(raw: bytes) -> bool:
    digits = raw.translate(_ZEROS)
    start = digits.find(_RUN)
    while start >= 0:
        end = start + len(_RUN)
        while end < len(digits) and digits[end] == 48:  # to the end of this run
            end += 1
        before = start - 1 if start == 0 or raw[start - 1] != 45 else start - 2  # skip a minus
        if (before < 0 or raw[before] not in _WORD) and (end == len(raw) or raw[end] in _AFTER):
            return True
        start = digits.find(_RUN, end)
    return False


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads(data: bytes | str, *, constants: bool = True) -> Any:
    """``data`` parsed with every number exact; raises ``ValueError`` (``orjson.JSONDecodeError``
    included) or ``RecursionError`` when it is not JSON. ``constants=False`` refuses ``NaN`` and
    ``Infinity`` too (a stream event keeps such text as it came)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if not _long_integer(raw):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError as err:
            # Only a number orjson refuses goes on (json would also take lone surrogates, which
            # no YAML file can hold).
            if not constants or (b"NaN" not in raw and b"Infinity" not in raw and "infinity" not in str(err)):
                raise
    if not constants:
        return json.loads(raw, parse_constant=_no_constant)
    return json.loads(raw, parse_constant=NonFinite, parse_float=_number)


def _inexact(value: Any) -> bool:
    """Whether orjson would write ``value`` differently from what it is (a non-finite float)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _stdlib(value: Any, indent: bool) -> bytes:
    if indent:
        return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def dumps(value: Any, *, indent: bool = False, scan: bool = True) -> bytes:
    """JSON of ``value`` (compact, or indented by two with a final newline); big integers and
    ``NaN``/``Infinity`` written as Python's ``json`` does. ``scan=False`` skips the walk that finds
    a plain ``nan`` (a YAML ``.nan``) for a whole cassette: a :class:`NonFinite` needs no walk."""
    try:
        out = orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE if indent else 0)
    except TypeError:  # orjson.JSONEncodeError: an integer past 64 bits, a NonFinite
        return _stdlib(value, indent)
    if scan and b"null" in out and _inexact(value):  # orjson wrote a plain NaN or infinity as null
        return _stdlib(value, indent)
    return out
