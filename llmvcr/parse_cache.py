"""A content-addressed cache of parsed YAML cassettes: a file parses once per content, not per test.

PyYAML builds every node of a readable cassette in Python, about 4 ms for a typical 25 KB test
cassette, while orjson reads the same tree in a few hundredths of that. The cache keys the parsed
document by the SHA-256 of the file's bytes, so a changed cassette is always parsed again (the
cache is never trusted over the file), and stores it as JSON in pytest's cache folder of the
project (``.pytest_cache/d/llmvcr/parsed``), else the user's cache folder (``LLMVCR_CACHE_DIR``
names another; ``LLMVCR_CACHE_DIR=off`` turns the cache off). A document JSON cannot hold
exactly (YAML dates, binary, non-string keys) is not cached. A damaged cache file is parsed
around and replaced. Writing the cache is best effort: a read-only folder costs speed only.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from typing import Any

import orjson

_folders: dict[str, str | None] = {}  # cassette folder -> cache folder (None: no cache)


def _user_folder() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "llmvcr", "parsed")


def cache_folder(cassette_path: str) -> str | None:
    """Where the parsed form of ``cassette_path`` is kept, or None when caching is off."""
    override = os.environ.get("LLMVCR_CACHE_DIR")
    if override:
        return None if override.lower() == "off" else override
    start = os.path.dirname(os.path.abspath(cassette_path))
    found = _folders.get(start, "")
    if found != "":
        return found
    folder = start
    result: str | None = _user_folder()
    while True:
        if os.path.isdir(os.path.join(folder, ".pytest_cache")):
            result = os.path.join(folder, ".pytest_cache", "d", "llmvcr", "parsed")
            break
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    _folders[start] = result
    return result


def parsed(data: bytes, path: str, parse: Callable[[bytes], Any]) -> Any:
    """``parse(data)``, from the cache when these exact bytes were parsed before."""
    folder = cache_folder(path)
    if folder is None:
        return parse(data)
    entry = os.path.join(folder, hashlib.sha256(data).hexdigest()[:40] + ".json")
    try:
        with open(entry, "rb") as f:
            return orjson.loads(f.read())
    except (OSError, orjson.JSONDecodeError):
        pass
    document = parse(data)
    _store(entry, folder, document)
    return document


def _store(entry: str, folder: str, document: Any) -> None:
    try:
        encoded = orjson.dumps(document)
    except TypeError:  # not JSON-shaped: parse it each time
        return
    if orjson.loads(encoded) != document:  # JSON would change it (a date, a tuple): do not cache
        return
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
        with os.fdopen(fd, "wb") as f:
            f.write(encoded)
        os.replace(tmp, entry)
    except OSError:  # a read-only or full disk: the cache is an optimisation, the parse stands
        return
