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
import tempfile
import time
from collections.abc import Callable
from typing import Any

import orjson

from ..cassette.age import on_ci
from .yaml_guard import risky
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
    if read is not None and not risky(data):
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
