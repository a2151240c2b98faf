"""What llmvcr checks before it trusts a cassette file: the path, the header, the entry count, nesting.

A cassette file can be cut short, edited by hand, or crafted. Everything here raises
``CassetteFormatError`` (or ``CassetteNotFoundError``) naming the file, the entry and the field,
and saying what to do; nothing lets a raw ``OSError``, ``RecursionError`` or a silently shorter
cassette through.

The entry count: every file llmvcr writes says how many entries it holds (``entry_count``, next
to ``version`` at the top). Fewer entries than the count means the file was cut between two
entries; more is fine (an entry appended by hand); ``llmvcr rehash`` writes the count again after
entries were removed by hand.

The end marker: YAML has no end of its own, so a file cut inside its last entry (in a block of
text, a stream's event list, right after ``body:``) still parses, as a shorter answer. Every file
llmvcr writes therefore says in its header that it ends with a marker (``end_marker: true``) and
ends with it (``entries_end: true``, the last line llmvcr writes; any key after the entries will
do, so a file dumped again with sorted keys keeps it there). A file whose header promises the
marker but holds none after its entries was cut short, wherever the cut fell: a cut cannot reach
the header without removing the entries too. JSON files carry the same two keys (a cut JSON text does not
parse anyway). Hand edits above the last line keep the marker; ``llmvcr rehash`` adds it to a file
written before it existed. Such an older file still loads, guarded by its entry count and by
checking every entry's fields and request hash when its bytes are first read, but a cut inside
its last answer's text can go unseen until it is rehashed or written again.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from typing import Any

import orjson

from ..cassette.schema import FIX
from ..errors import CassetteFormatError, CassetteNotFoundError

__all__ = [
    "COUNT_FIELD",
    "END_KEY",
    "END_MARKER",
    "MAX_DEPTH",
    "check_cassette_path",
    "check_count",
    "check_end",
    "check_header",
    "check_nesting",
    "read_cassette",
    "seal_text",
    "sealed",
    "set_count",
    "with_count",
]

COUNT_FIELD = "entry_count"
END_MARKER = "end_marker"  # in the header: this file ends with END_KEY
END_KEY = "entries_end"  # after the entries: the last line llmvcr writes, and sorted right after them
TRAILER = f"{END_KEY}: true\n".encode()
MAX_DEPTH = 250  # containers inside one value of an entry; orjson writes at most 254 in all
_RESTORE = "restore it from version control (git checkout -- FILE) or re-record it"


def _restore(path: str) -> str:
    return _RESTORE.replace("FILE", path)


# -- the path ------------------------------------------------------------------------------------
def _path_error(path: str, err: OSError) -> CassetteFormatError:
    if err.errno == errno.ELOOP:
        why = "is a symbolic link that loops back on itself; point it at a cassette file or remove it"
    elif err.errno == errno.EISDIR or os.path.isdir(path):
        why = "is a folder, not a cassette file; name a .yaml or .json file inside it"
    elif err.errno == errno.ENOTDIR:
        why = "cannot be a file: a part of its path is a file, not a folder; choose another path"
    else:
        why = f"cannot be read ({err.strerror or err}); check its permissions"
    return CassetteFormatError(path, why)


def check_cassette_path(path: str) -> None:
    """``CassetteFormatError`` when ``path`` can never be a cassette file (a folder, a symlink loop,
    a path through a file); a missing file passes (it may be recorded)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    except OSError as err:
        raise _path_error(path, err) from None
    if stat.S_ISDIR(st.st_mode):
        raise _path_error(path, IsADirectoryError(errno.EISDIR, "is a directory"))


def read_cassette(path: str) -> bytes:
    """The bytes of the cassette at ``path``; a clear error for a missing file, a folder or a loop."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise CassetteNotFoundError(
            f"{path}: no such cassette; record it first (record_mode='once')"
        ) from None
    except OSError as err:
        raise _path_error(path, err) from None


# -- the header and the count ---------------------------------------------------------------------
def with_count(document: dict[str, Any], count: int) -> dict[str, Any]:
    """``document`` with ``entry_count: count`` and ``end_marker: true`` right after ``version``,
    where a cut cannot reach them."""
    out: dict[str, Any] = {}
    for key, value in document.items():
        if key not in (COUNT_FIELD, END_MARKER, END_KEY):
            out[key] = value
        if key == "version":
            out[COUNT_FIELD] = count
            out[END_MARKER] = True
    return out


def sealed(document: dict[str, Any], count: int) -> dict[str, Any]:
    """A whole document as a file holds it: counted, its end marker promised, and ending with it."""
    out = with_count(document, count)
    out[END_KEY] = True
    return out


def _text_map(value: Any, path: str, field: str) -> None:
    if not isinstance(value, dict):
        raise CassetteFormatError(
            path, f"expected a mapping, found {type(value).__name__}; {FIX}", field=field
        )
    for key, item in value.items():
        if not isinstance(key, str) or not isinstance(item, str):
            raise CassetteFormatError(
                path,
                f"expected text, found {type(item).__name__} {item!r}; quote the value",
                field=f"{field}.{key}",
            )


def check_header(document: dict[str, Any], path: str) -> list[Any]:
    """The entries of a migrated document, after checking every top-level field (the count is
    :func:`check_count`'s, the end marker :func:`check_end`'s)."""
    if "entries" not in document:
        raise CassetteFormatError(
            path,
            f"missing: no entries list, so the file was cut short or is not a cassette; {_restore(path)}",
            field="entries",
        )
    entries = document["entries"]
    if entries is None and (document.get(COUNT_FIELD) is not None or document.get(END_MARKER)):
        entries = []  # "entries:" with nothing under it
    if not isinstance(entries, list):
        raise CassetteFormatError(
            path, f"expected a list of entries, found {type(entries).__name__}; {FIX}", field="entries"
        )
    seed = document.get("seed")
    if seed is not None and not isinstance(seed, str):
        raise CassetteFormatError(
            path,
            f"expected text, found {type(seed).__name__} {seed!r}; quote the value ('...')",
            field="seed",
        )
    if "recorded_with" in document:
        _text_map(document["recorded_with"], path, "recorded_with")
    if "metadata" in document and not isinstance(document["metadata"], dict):
        raise CassetteFormatError(
            path, f"expected a mapping, found {type(document['metadata']).__name__}; {FIX}", field="metadata"
        )
    return entries


def check_end(document: dict[str, Any], path: str) -> None:
    """Refuse a document whose header promises the end marker it does not end with (it was cut)."""
    promised = document.get(END_MARKER, False)
    if not isinstance(promised, bool):
        raise CassetteFormatError(
            path, f"expected true or false, found {promised!r}; {FIX}", field=END_MARKER
        )
    if END_KEY in document and _before_entries(document):
        raise CassetteFormatError(
            path,
            f"'{END_KEY}: true' must come after the entries (it is the file's last line as llmvcr "
            f"writes it): move it there; an entry added by hand goes above it",
            field=END_KEY,
        )
    if promised and document.get(END_KEY) is not True:
        raise CassetteFormatError(
            path,
            f"the file is truncated: it does not end with '{END_KEY}: true', the line its header "
            f"promises (end_marker: true), so it was cut short (a crash, a full disk or a bad copy) "
            f"and its last entry may be missing a part; {_restore(path)}. If you removed that line "
            f"by hand, put it back",
            field=END_KEY,
        )


def _before_entries(document: dict[str, Any]) -> bool:
    for key in document:
        if key == END_KEY:
            return True
        if key == "entries":
            return False
    return False


def check_count(document: dict[str, Any], path: str) -> None:
    """Refuse a document holding fewer entries than its header counts (it was cut between entries)."""
    if COUNT_FIELD not in document:
        return
    count = document[COUNT_FIELD]
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise CassetteFormatError(
            path,
            f"expected a whole number of entries, found {count!r}; run `llmvcr rehash {path}` "
            "to write it again",
            field=COUNT_FIELD,
        )
    entries = document.get("entries")
    entries = [] if entries is None else entries  # "entries:" with nothing under it
    if isinstance(entries, list) and len(entries) < count:
        raise CassetteFormatError(
            path,
            f"the file is truncated: it holds {len(entries)} of the {count} entries its header "
            f"counts (cut short by a crash, a full disk or a bad copy); "
            f"{_restore(path)}. If you removed entries by hand, run "
            f"`llmvcr rehash {path}` to count them again",
            field=COUNT_FIELD,
        )


# The patterns that edit a file's text compile when a file is first written (``re`` keeps them).
_COUNT_LINE = rb"(?m)^(" + COUNT_FIELD.encode() + rb"[ \t]*:[ \t]*)[^\s#]*"
_VERSION_LINE = rb"(?m)^version[ \t]*:.*\n"


def set_count(data: bytes, count: int, path: str) -> bytes:
    """A YAML cassette's text with its entry count set to ``count`` and its end marker promised,
    every other byte unchanged (comments and a hand-made layout stay)."""
    found = re.search(_COUNT_LINE, data)
    if found:
        data = data[: found.end(1)] + str(count).encode() + data[found.end() :]
    else:
        version = re.search(_VERSION_LINE, data)
        if version is None:
            raise CassetteFormatError(
                path, "no 'version:' line at the top to write the count after", field="version"
            )
        line = f"{COUNT_FIELD}: {count}\n".encode()
        data = data[: version.end()] + line + data[version.end() :]
    if re.search(_MARKER_LINE, data) is None:
        after = re.search(_COUNT_LINE_WHOLE, data)
        assert after is not None  # written just above
        data = data[: after.end()] + f"{END_MARKER}: true\n".encode() + data[after.end() :]
    return data


def seal_text(data: bytes, path: str, count: int) -> bytes:
    """A whole YAML cassette's text, counted, promising its end marker and ending with it."""
    data = set_count(data, count, path)
    if _trailer_at(data) is not None:
        return data
    return data + (b"" if data.endswith(b"\n") else b"\n") + TRAILER


def without_trailer(text: bytes) -> bytes | None:
    """``text`` (the end of a YAML cassette) without its last line ``entries_end: true``; None
    when it does not end with it."""
    at = _trailer_at(text)
    return None if at is None else text[:at]


def _trailer_at(data: bytes) -> int | None:
    body = data.rstrip(b" \t\r\n")  # an editor may add or drop the last newline
    start = body.rfind(b"\n") + 1
    return start if re.compile(_TRAILER_LINE).fullmatch(body, start) else None


_COUNT_LINE_WHOLE = rb"(?m)^" + COUNT_FIELD.encode() + rb"[ \t]*:.*\n"
_MARKER_LINE = rb"(?m)^" + END_MARKER.encode() + rb"[ \t]*:"
_TRAILER_LINE = END_KEY.encode() + rb"[ \t]*:[ \t]*true[ \t]*(?:#[^\n]*)?"


# -- nesting and value types inside entries ----------------------------------------------------
_PLAIN = (str, int, float, bool, type(None))


def _problem(value: Any, limit: int) -> tuple[str, str] | None:
    """The first ``(where, what)`` in ``value`` that cannot be replayed: too deep, or not JSON."""
    stack: list[tuple[Any, str, int]] = [(value, "", 1)]
    while stack:
        item, where, depth = stack.pop()
        if isinstance(item, dict):
            if depth > limit:
                return where, f"nested more than {limit} levels deep"
            for key, child in item.items():
                if not isinstance(key, str):
                    return f"{where}.{key!r}".lstrip("."), f"a {type(key).__name__} key; keys are text"
                stack.append((child, f"{where}.{key}".lstrip("."), depth + 1))
        elif isinstance(item, list):
            if depth > limit:
                return where, f"nested more than {limit} levels deep"
            stack.extend((child, f"{where}[{i}]", depth + 1) for i, child in enumerate(item))
        elif not isinstance(item, _PLAIN) and not hasattr(item, "isoformat"):  # dates read as text
            return where, f"{type(item).__name__} is not a JSON value"
    return None


def _field(where: str) -> str | None:
    found = re.match(r"[^.\[]+(?:\.[^.\[]+)?", where)  # "response.body", not the path to the bottom
    return found.group() if found else None


def check_nesting(document: Any, path: str) -> Any:
    """``document``, after checking that every entry holds JSON values nested at most ``MAX_DEPTH``
    deep (a body deeper than that cannot be replayed)."""
    if not isinstance(document, dict):
        return document
    try:
        orjson.dumps(document)  # at C speed: JSON values only, at most 254 containers deep
        return document
    except TypeError:  # too deep, or a value orjson does not write (big integers among them)
        pass
    entries = document.get("entries")
    for position, entry in enumerate(entries if isinstance(entries, list) else []):
        found = _problem(entry, MAX_DEPTH + 2)  # an entry's body sits two levels inside it
        if found is not None:
            where, what = found
            raise CassetteFormatError(
                path,
                f"{what}; no API answers like that and llmvcr cannot replay it; {_restore(path)}",
                entry=position,
                field=_field(where),
            )
    found = _problem({k: v for k, v in document.items() if k != "entries"}, MAX_DEPTH)
    if found is not None and "deep" in found[1]:
        raise CassetteFormatError(path, f"{found[1]}; {_restore(path)}", field=_field(found[0]))
    return document
