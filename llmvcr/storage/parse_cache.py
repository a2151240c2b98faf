"""Fast cassette parsing: a compiled YAML parser and a content-addressed parse cache.

Both give exactly what parsing and checking the file gives, only sooner:

* ``parse_yaml(data)`` uses rapidyaml (``ryml``, a dependency where it has a wheel: Linux x86-64 and
  arm64, macOS, Windows) when the text holds nothing on which rapidyaml's reading and PyYAML's
  YAML 1.1 could disagree (tags, anchors, aliases, merge keys, ``yes``/``True``/``~``, dates, octal
  or sexagesimal numbers, numeric keys with or without spaces before the colon, ``.inf``, the words
  ``nan``/``inf`` rapidyaml rewrites, an explicit or empty key, a second document); rapidyaml
  builds its tree and writes it as JSON in C++, and orjson reads that. Otherwise, on any error,
  and where rapidyaml is missing or ``LLMVCR_YAML=pyyaml`` is set, PyYAML's C loader, which also
  raises the errors storage reports. ``yaml_parser()`` names the parser in use (``llmvcr
  --version`` prints it).
* ``ParseCache`` keeps what ``parse`` gave for a file (storage keeps the parsed document with what
  checking every entry found) as orjson bytes under pytest's cache
  (``.pytest_cache/d/llmvcr/parsed-2``), else the user's cache folder. The key is the sha256 of the
  file's bytes, so a changed cassette is always parsed and checked again; an unreadable or corrupt
  entry is ignored and rewritten; a value orjson cannot give back identically is never cached, and
  a parse that raises caches nothing. On CI (``CI`` set) it is read but written only into a folder
  a finished run left before (a CI that keeps ``.pytest_cache``): a fresh checkout throws its cache
  away, and writing an entry per cassette was a third of a cold load.

Every path refuses YAML aliases (``YamlAliasError``, before anything is cached): llmvcr never writes
one, and a few lines of aliases can expand to billions of values. rapidyaml never sees a file with
an anchor or an alias. An entry no load used for ``MAX_AGE_DAYS`` is removed by
``prune`` (the pytest plugin runs it at the end of a run, for the folders the run used; the walk
itself runs at most once a day).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import os
import re
import tempfile
import time
from collections.abc import Callable
from typing import Any

import orjson

from ..cassette.age import on_ci
from .yaml_text import YamlAliasError, load_yaml

__all__ = [
    "CACHE_FOLDER",
    "MAX_AGE_DAYS",
    "ParseCache",
    "YamlAliasError",
    "cache_folder_for",
    "parse_yaml",
    "parse_yaml_pyyaml",
    "prune",
    "prune_used",
    "yaml_parser",
]

CACHE_FOLDER = "parsed-2"  # bump when what is stored changes meaning (2: the checked document)
MAX_AGE_DAYS = 30  # an entry no load used for this long is removed
_DAY = 86400.0
_PRUNED = ".pruned"  # its time says when the folder was last walked


# Text on which rapidyaml and YAML 1.1 (PyYAML) may read differently sends a document to PyYAML:
# where a node starts, a plain scalar one reads as a bool, null, number or date and the other as
# text (rapidyaml's JSON types only lowercase true/false/null and JSON numbers; a key stays text),
# a tag, an anchor, an alias, a reserved indicator, a merge or value key, or a flow collection
# other than the ones llmvcr writes; anywhere, a second document, a tab, a lone CR, a BOM or a
# line break only YAML 1.1 has (NEL, LS, PS), all of which llmvcr's writer escapes. A match inside
# quoted or block text only costs the fast path, never correctness. Each pattern starts with a
# literal, so a search skips at C speed (a leading class or lookbehind made sre try every
# position: 0.6 ms on a 12 KB cassette, more than a compiled parser's whole parse).
_ONLY_1_1 = (b"\xc2\x85", b"\xe2\x80\xa8", b"\xe2\x80\xa9", b"\xef\xbb\xbf")
_INT = rb"-?(?:0|[1-9][0-9]{0,17})(?![0-9])"  # fits 64 bits: orjson reads a longer one as a float
_FLOAT = rb"-?(?:0|[1-9][0-9]{0,199})\.[0-9]+(?:[eE][-+][0-9]{1,2})?"  # finite: 1e999 is inf only in PyYAML
_END = rb"(?= *(?:#|:(?: |\n|\Z)|\n|\Z))"  # the scalar ends: a comment, a key's colon, the line


@functools.cache
def _guards() -> tuple[re.Pattern[bytes], ...]:
    """The patterns above, compiled on the first YAML parse rather than at import."""
    safe = rb"(?:" + _INT + rb"|" + _FLOAT + rb"|[0-9]+(?:\.[0-9]+){2,})" + _END  # 0.1.0: text in both
    unsigned = rb"(?:" + _INT[2:] + rb"|" + _FLOAT[2:] + rb")" + _END  # after a minus sign
    number = rb"(?:" + _INT + rb"|" + _FLOAT + rb"|null)"
    # the flow collections llmvcr writes: [], {}, a stream's timing, {same_as: N}; each from its bracket
    timing = rb"(?:[ \n]*(?:" + number + rb"[ \n]*,[ \n]*)*" + number + rb"[ \n]*| *)\] *(?:\n|\Z)"
    same_as = rb"(?: *same_as *: +(?:0|[1-9][0-9]*) *| *)\} *(?:\n|\Z)"
    # Grouped by first character, each group behind a one-character test, each alternative starting
    # with a literal or a class: sre tries the alternatives of a group one by one, and most nodes (a
    # lowercase word, a quote, a small int) are turned away by the first test of each group.
    end = _END
    colon = rb" *:(?: |\n|\Z)"  # a key's colon, spaces before it or not (``0 : x``)
    words = (  # bools and nulls only YAML 1.1 reads (rapidyaml's JSON types only lowercase true/false/null)
        rb"[yY]es|YES|[nN]o|NO|[oO](?:n|ff)|O(?:N|FF)|T(?:rue|RUE)|F(?:alse|ALSE)|N(?:ull|ULL)|~"
        rb"|nan|inf(?:inity)?"  # the words rapidyaml's JSON writes as .nan/.inf (a quoted key too: _special)
        rb"|[*@`][^\s*`]*"  # an alias or a reserved indicator: PyYAML refuses it, rapidyaml reads text
        rb"|[?:]"  # (markdown's *emphasis* and `code` in text end otherwise, so they keep the fast path)
    )
    keys = rb"(?:true|false|null)" + colon  # true/false/null as a key: rapidyaml keeps every key as text
    marks = (
        rb"<<"  # a merge key
        rb"|=(?![^ \n:])"  # a value key
        rb"|[?:](?: |\n|\Z)"  # an explicit key (``? 0``) or an empty one (``: 0``), which PyYAML refuses
    )
    numbers = (
        # a sign or a dot: nothing both read alike as a value but -12 and -1.5 (1e5 0o17 1_0 1:2 .inf)
        rb"\+[-+.0-9_:a-zA-Z]*"
        + end
        + rb"|\.[0-9a-zA-Z][0-9a-zA-Z_.:eE+-]*"
        + end
        + rb"|-(?:nan|inf(?:inity)?|0[xXoObB]|\.)"
        + rb"|-(?!"
        + unsigned
        + rb")[0-9][0-9_.:eE+-]*"
        + end
        + rb"|-[0-9][0-9.eE+-]*"
        + colon
        # a digit: a number only YAML 1.1 reads (1e5 017 1_0 1:20 0x1F), any number as a key, a date
        + rb"|(?!"
        + safe
        + rb")(?:0[xXoObB][0-9a-fA-F_]*|[0-9][0-9_.:eE+-]*)"
        + end
        + rb"|[0-9][0-9.eE+-]*"
        + colon
        + rb"|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt]| +[0-9])"  # a YAML 1.1 timestamp
    )
    scalar = (  # a whole plain scalar the two versions may read differently
        rb"(?=[yYnNoOTFi~*@`?:])(?:"
        + words
        + rb")"
        + end
        + rb"|(?=[tfn])"
        + keys
        + rb"|(?=[<=?:])(?:"
        + marks
        + rb")"
        # an int on its own line (most numbers in a cassette) is turned away first
        + rb"|(?=[-+.0-9])(?!(?:0|[1-9][0-9]{0,17})\n)(?:"
        + numbers
        + rb")"
    )
    start = rb"(?=[-+.0-9yYnNoOTFtfi~*@`?:<=!&\[{])"  # what a risky node starts with
    # group 1 (2 in the line pattern): a tag, an anchor or a flow collection, which _risky checks
    # against the flow collections llmvcr writes (a lookahead over them here made every search slow)
    node = start + rb"(?:([!&\[{])|" + scalar + rb")"
    return (
        re.compile(rb": +" + node),  # a value
        re.compile(rb"- +" + node),  # a list item (and --- 1e5)
        re.compile(rb"\? +" + node),  # an explicit key
        # a key, a value on its own line, or text; (?=( *))\1 keeps sre from backtracking the indent
        re.compile(rb"\n(?=( *))\1" + start + rb"(?:([!&\[{])|" + scalar + rb")"),
        re.compile(rb"\[" + timing + rb"|\{" + same_as),
        re.compile(rb"[\]}] *:(?: |\Z)"),  # a flow collection as a key
    )


# rapidyaml's JSON writes the text nan, inf or infinity (with a sign) as .nan or .inf, even where
# it is a quoted key; a cheap `in` test comes first, the search only where one of them occurs
@functools.cache
def _special_words() -> tuple[re.Pattern[bytes], ...]:
    end = rb"['\"]? *(?:#|:|\n|\Z)"  # each pattern starts with a literal: sre skips to it at C speed
    return re.compile(rb"nan" + end), re.compile(rb"inf(?:inity)?" + end)


def _special(text: bytes) -> bool:
    for m in (m for pattern in _special_words() for m in pattern.finditer(text)):
        at = m.start()
        if text[at - 1 : at] == b"-":
            at -= 1
        if text[at - 1 : at] in (b" ", b"\n", b"'", b'"', b"[", b"{", b","):
            return True
    return False


def _risky(data: bytes) -> bool:
    if b"\r" in data:  # a Windows checkout's CRLF reads as LF in both; a lone CR is a break only in 1.1
        data = data.replace(b"\r\n", b"\n")
        if b"\r" in data:
            return True
    if b"\t" in data or (not data.isascii() and any(c in data for c in _ONLY_1_1)):
        return True
    value, item, key, line, written, flow_key = _guards()
    text = b"\n" + data  # the first line starts after a newline too
    if b"\n---" in text:  # a document marker: rapidyaml reads the stream, PyYAML one document
        return True
    for pattern in (value, item, key) if b"? " in text else (value, item):
        for m in pattern.finditer(text):
            at = m.start(1)
            if at < 0 or not written.match(text, at):  # a risky scalar, or a flow llmvcr never writes
                return True
    if (b"nan" in text or b"inf" in text) and _special(text):
        return True
    for m in line.finditer(text):
        at = m.start(2)
        if at < 0 or (_holds_a_node(text, at, flow_key) and not written.match(text, at)):
            return True
    return False


def _holds_a_node(text: bytes, at: int, flow_key: re.Pattern[bytes]) -> bool:
    """Whether the line whose first character is ``text[at]`` starts a node: it holds a key
    (``&anchor key: 1``, ``[a]: 1``) or follows one, not text wrapped onto it or in a block scalar."""
    end = text.find(b"\n", at)
    end = len(text) if end == -1 else end
    if text[at] in b"[{":  # a flow key ends with its bracket; a JSON line in a block scalar does not
        if flow_key.search(text, at, end):
            return True
    elif text.find(b": ", at, end) != -1 or text.endswith(b":", at, end):  # a tag's or anchor's key
        return True
    k = text.rfind(b"\n", 0, at)
    while k > 0:  # the line before, blank and comment lines skipped
        start = text.rfind(b"\n", 0, k) + 1
        previous = text[start:k].strip(b" ")
        if previous and not previous.startswith(b"#"):
            return previous.endswith((b":", b"-", b"?")) or b" #" in previous
        k = start - 1
    return True  # the document's first node


def fast_parser() -> Callable[[bytes], Any] | None:
    """The reader ``parse_yaml`` tries first: rapidyaml's, or None where it is not installed or
    ``LLMVCR_YAML=pyyaml`` asks for PyYAML (CI runs the YAML tests both ways)."""
    if os.environ.get("LLMVCR_YAML", "").strip().lower() == "pyyaml":
        return None
    return rapidyaml_reader()


@functools.cache
def rapidyaml_reader() -> Callable[[bytes], Any] | None:
    """rapidyaml's reader (YAML text -> C++ tree -> JSON -> orjson), imported on the first YAML
    parse; None without rapidyaml. It reads every document, so only ``parse_yaml`` calls it."""
    try:
        ryml = importlib.import_module("ryml")
    except ImportError:
        return None
    parse, emit = ryml.parse_in_arena, ryml.emit_json_in_place

    def read(data: bytes) -> Any:
        tree = parse(data)
        # JSON written into a buffer of our own, read by orjson from there: emit_json_malloc's
        # Python string cost a fifth of the read (the JSON is about 1.5 times the YAML's size)
        buffer = bytearray(2 * len(data) + 256)
        try:
            json = emit(tree, buffer)
        except IndexError:  # more than twice the YAML (short lines, deep indents): ask the size
            json = emit(tree, bytearray(ryml.compute_json_length(tree)))
        return orjson.loads(json)

    return read


def yaml_parser() -> str:
    """Which parser reads YAML cassettes here, and what to do when it is the slow one."""
    if fast_parser() is not None:
        return f"rapidyaml {importlib.import_module('ryml').version}"
    if os.environ.get("LLMVCR_YAML", "").strip().lower() == "pyyaml":
        return "PyYAML (LLMVCR_YAML=pyyaml)"
    return "PyYAML: rapidyaml has no wheel here, YAML cassettes load ~10x slower (pip install rapidyaml)"


def parse_yaml_pyyaml(data: bytes) -> Any:
    """PyYAML's safe C loader, refusing aliases (``YamlAliasError``): the reference of every path."""
    return load_yaml(data)


def parse_yaml(data: bytes) -> Any:
    """``parse_yaml_pyyaml(data)``, through rapidyaml when that is installed and safe to use."""
    read = fast_parser()
    if read is not None and not _risky(data):
        try:
            return read(data)
        except Exception:  # PyYAML parses again and raises the error storage knows how to report
            return parse_yaml_pyyaml(data)
    return parse_yaml_pyyaml(data)


# -- the cache --------------------------------------------------------------------------------
def user_state_folder() -> str:
    """llmvcr's folder in the user's cache (``LLMVCR_STATE_DIR`` names another)."""
    override = os.environ.get("LLMVCR_STATE_DIR")
    if override:
        return override
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "llmvcr")


def state_folder(cassette_path: str) -> str:
    """Where llmvcr keeps run state for a cassette (parsed documents, what a run played): pytest's
    cache of the nearest project above it (``.pytest_cache/d/llmvcr``), else the user's cache."""
    if os.environ.get("LLMVCR_STATE_DIR"):
        return user_state_folder()
    folder = os.path.dirname(os.path.abspath(cassette_path))
    while True:
        cache = os.path.join(folder, ".pytest_cache")
        if os.path.isdir(cache):
            return os.path.join(cache, "d", "llmvcr")
        parent = os.path.dirname(folder)
        if parent == folder:
            return user_state_folder()
        folder = parent


_FOLDERS: dict[str, str] = {}  # cassette folder -> cache folder, found once per process
_WRITES: dict[str, bool] = {}  # cache folder -> whether this process stores entries in it
_EMPTY: dict[str, bool] = {}  # cache folder -> it held no entry when this process first looked


def _writes(folder: str) -> bool:
    """Whether entries are stored in ``folder``: always off CI; on CI only when a run before finished
    with it there (``prune`` marks it), so a fresh checkout's run writes none. The folder is made,
    for that mark: a CI that keeps ``.pytest_cache`` fills the cache from its second run on."""
    writes = _WRITES.get(folder)
    if writes is None:
        writes = _WRITES[folder] = not on_ci() or os.path.exists(os.path.join(folder, _PRUNED))
        if not writes:
            with contextlib.suppress(OSError):
                os.makedirs(folder, exist_ok=True)
    return writes


def _holds_nothing(folder: str) -> bool:
    """Whether ``folder`` held no entry when first asked (a fresh checkout's): a process that does
    not write there then skips the lookup (the file's sha256 and a failed open) for every cassette.
    Skipping a lookup only costs speed, never trusts anything."""
    empty = _EMPTY.get(folder)
    if empty is None:
        shards = (item for item in _listing(folder) if len(item.name) == 2)
        empty = _EMPTY[folder] = not any(item.is_dir(follow_symlinks=False) for item in shards)
    return empty


def cache_folder_for(cassette_path: str) -> str:
    """The parse cache's folder for a cassette, inside :func:`state_folder`."""
    start = os.path.dirname(os.path.abspath(cassette_path))
    found = _FOLDERS.get(start)
    if found is None:
        found = _FOLDERS[start] = os.path.join(state_folder(cassette_path), CACHE_FOLDER)
    return found


class ParseCache:
    """What ``parse`` gave for a file's bytes, by their sha256, stored as orjson under ``folder``.

    >>> ParseCache(cache_folder_for(path)).load(data, parse_yaml)
    """

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def entry_path(self, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        return os.path.join(self.folder, digest[:2], digest[2:] + ".json")

    def load(self, data: bytes, parse: Callable[[bytes], Any]) -> Any:
        """What ``parse(data)`` gives, from the cache when these exact bytes were parsed before."""
        if not _writes(self.folder) and _holds_nothing(self.folder):  # CI on a fresh checkout
            return parse(data)
        entry = self.entry_path(data)
        try:
            with open(entry, "rb") as f:
                document = orjson.loads(f.read())
                used = os.fstat(f.fileno()).st_mtime
        except (OSError, orjson.JSONDecodeError):
            pass  # missing, unreadable or corrupt: parse and (re)write
        else:
            if time.time() - used > _DAY:  # its time says when it was last used, to the day
                with contextlib.suppress(OSError):
                    os.utime(entry)
            return document
        document = parse(data)
        if _writes(self.folder):
            self._store(entry, document)
        return document

    def _store(self, entry: str, document: Any) -> None:
        try:
            blob = orjson.dumps(document)
        except TypeError:  # int keys, dates, bytes, huge ints: not a JSON document
            return
        if orjson.loads(blob) != document:  # a date became text, nan became null: keep parsing
            return
        try:
            os.makedirs(os.path.dirname(entry), exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=os.path.dirname(entry))
            with os.fdopen(fd, "wb") as f:
                f.write(blob)
            os.replace(tmp, entry)  # readers see the whole entry or none
        except OSError:  # a read-only cache costs speed, never a failed replay
            with contextlib.suppress(OSError, UnboundLocalError):
                os.unlink(tmp)


def prune(folder: str, max_age_days: float = MAX_AGE_DAYS, *, now: float | None = None) -> int:
    """Remove the entries under ``folder`` no load used for ``max_age_days``; how many were removed.

    The walk runs at most once a day per folder (a marker file's time says when it last ran), so
    calling this at the end of every run costs one ``stat``. Errors skip an entry, never raise.
    """
    now = time.time() if now is None else now
    marker = os.path.join(folder, _PRUNED)
    try:
        if now - os.stat(marker).st_mtime < _DAY:
            return 0
    except OSError:
        if not os.path.isdir(folder):
            return 0
    removed, oldest = 0, now - max_age_days * _DAY
    for shard in _listing(folder):
        if not shard.is_dir(follow_symlinks=False) or len(shard.name) != 2:
            continue
        removed += sum(_remove_if_older(item, oldest) for item in _listing(shard.path))
        with contextlib.suppress(OSError):
            os.rmdir(shard.path)  # only when empty
    with contextlib.suppress(OSError):
        with open(marker, "ab"):
            pass
        os.utime(marker, (now, now))
    return removed


def _remove_if_older(item: os.DirEntry[str], oldest: float) -> bool:
    """Remove an entry (or a temporary file a killed write left) last used before ``oldest``."""
    try:
        if item.is_file(follow_symlinks=False) and item.stat().st_mtime < oldest:
            os.unlink(item.path)
            return True
    except OSError:
        pass  # gone already (another worker pruned it), or not ours to remove
    return False


def _listing(folder: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as found:
            return list(found)
    except OSError:
        return []


def prune_used(max_age_days: float = MAX_AGE_DAYS) -> int:
    """``prune`` every parse-cache folder this process used; how many entries were removed."""
    return sum(prune(folder, max_age_days) for folder in sorted(set(_FOLDERS.values())))
