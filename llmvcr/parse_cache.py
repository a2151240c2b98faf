"""Fast YAML cassette parsing: an optional Rust parser and a content-addressed parse cache.

Both give exactly what ``yaml.load(data, Loader=CSafeLoader)`` gives, only sooner:

* ``parse_yaml(data)`` uses ``ryaml`` (``pip install 'pyllmvcr[fast]'``) when it is installed and
  the text holds nothing on which YAML 1.2 (ryaml) and PyYAML's YAML 1.1 could disagree (tags,
  anchors, merge keys, ``yes``/``on``, dates, octal or sexagesimal numbers, ``.inf``); otherwise,
  and on any ryaml error, PyYAML's C loader, which also raises the errors storage reports.
* ``ParseCache`` keeps each parsed document as orjson bytes under pytest's cache
  (``.pytest_cache/d/llmvcr/parsed-1``), else the user's cache folder. The key is the sha256 of the
  file's bytes, so a changed cassette is always parsed again; an unreadable or corrupt entry is
  ignored and rewritten; a document orjson cannot give back identically is never cached.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import os
import re
import tempfile
from collections.abc import Callable
from typing import Any

import orjson

from .yaml_text import load_yaml

__all__ = ["CACHE_FOLDER", "ParseCache", "cache_folder_for", "parse_yaml", "parse_yaml_pyyaml"]

CACHE_FOLDER = "parsed-1"  # bump when what is stored changes meaning


# Text on which YAML 1.2 (ryaml) and YAML 1.1 (PyYAML) may read differently sends a document to
# PyYAML. Matches inside quoted or block text only cost the fast path, never correctness. Each
# pattern starts with a literal or a class, so a search skips most positions at C speed.
@functools.cache
def _guards() -> tuple[re.Pattern[bytes], ...]:
    """The patterns below, compiled on the first YAML parse rather than at import."""
    return (
        re.compile(
            rb"(?<=[\s\[\{,])[!&*]|<<"  # tags, anchors, aliases, merge keys
            rb"|[:-][ \t]+=[ \t]*$|[:-][ \t]+[\[\{][ \t]*[^\]\}\s]",  # value key, flow collections
            re.MULTILINE,
        ),
        re.compile(  # YAML 1.1 booleans
            rb"[:-][ \t]+(?:[yYnN]|[yY]es|YES|[nN]o|NO|[oO]n|ON|[oO]ff|OFF)[ \t]*(?:#.*)?$", re.MULTILINE
        ),
        re.compile(rb"[:-][ \t]+([-+]?\.?[0-9][^\s#]*|[-+]?\.[a-zA-Z]+)[ \t]*(?:#.*)?$", re.MULTILINE),
        re.compile(rb"[-+]?(?:0[xX][0-9a-fA-F_]+|[0-9_.:eE+-]+|\.[a-zA-Z]+|[0-9]{4}-[0-9]{1,2}-[0-9].*)"),
        re.compile(rb"-?(?:0|[1-9][0-9]*)|[-+]?[0-9]*\.[0-9]+|[0-9]+(?:\.[0-9]+){2,}"),  # ints, d.d, 0.1.0
    )


def _risky(data: bytes) -> bool:
    tags, words, number, numeric, same = _guards()
    if tags.search(data) or words.search(data):
        return True
    return any(numeric.fullmatch(m) and not same.fullmatch(m) for m in number.findall(data))


@functools.cache
def fast_parser() -> Any:
    """The ``ryaml`` module (the optional extra "fast"), imported on the first YAML parse; None without it."""
    try:
        return importlib.import_module("ryaml")
    except ImportError:
        return None


def parse_yaml_pyyaml(data: bytes) -> Any:
    """PyYAML's safe C loader: the reference every other path must equal."""
    return load_yaml(data)


def parse_yaml(data: bytes) -> Any:
    """``parse_yaml_pyyaml(data)``, through ryaml when that is installed and safe to use."""
    ryaml = fast_parser()
    if ryaml is not None and not _risky(data):
        try:
            return ryaml.loads(data.decode("utf-8"))
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


def cache_folder_for(cassette_path: str) -> str:
    """The parse cache's folder for a cassette, inside :func:`state_folder`."""
    start = os.path.dirname(os.path.abspath(cassette_path))
    found = _FOLDERS.get(start)
    if found is None:
        found = _FOLDERS[start] = os.path.join(state_folder(cassette_path), CACHE_FOLDER)
    return found


class ParseCache:
    """Parsed documents by the sha256 of their bytes, stored as orjson under ``folder``.

    >>> ParseCache(cache_folder_for(path)).load(data, parse_yaml)
    """

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def entry_path(self, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        return os.path.join(self.folder, digest[:2], digest[2:] + ".json")

    def load(self, data: bytes, parse: Callable[[bytes], Any]) -> Any:
        """The document ``parse(data)`` gives, from the cache when these exact bytes were parsed before."""
        entry = self.entry_path(data)
        try:
            with open(entry, "rb") as f:
                return orjson.loads(f.read())
        except (OSError, orjson.JSONDecodeError):
            pass  # missing, unreadable or corrupt: parse and (re)write
        document = parse(data)
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
