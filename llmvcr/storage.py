"""Cassette files: YAML and JSON, format versions, safe loading, atomic writes and a file lock."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import tempfile
from collections.abc import Iterator
from typing import Any

import orjson

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]
    import msvcrt

from .cassette import Cassette
from .entries import Entry
from .errors import CassetteFormatError, CassetteNotFoundError, ForeignCassetteError
from .parse_cache import ParseCache, cache_folder_for, parse_yaml
from .schema import FORMAT_VERSION, entry_to_mapping, migrate
from .yaml_text import dump_yaml, yaml_problem


def format_of(path: str) -> str:
    return "json" if path.lower().endswith(".json") else "yaml"


def parse_document(data: bytes, path: str) -> dict[str, Any]:
    fmt = format_of(path)
    try:
        document = (
            orjson.loads(data) if fmt == "json" else ParseCache(cache_folder_for(path)).load(data, parse_yaml)
        )
    except orjson.JSONDecodeError as err:
        raise CassetteFormatError(
            path, f"not valid JSON ({err}); restore it from version control or re-record"
        ) from None
    except (ValueError, RecursionError, UnicodeDecodeError) as err:
        raise CassetteFormatError(path, f"unreadable ({type(err).__name__}: {err})") from None
    except Exception as err:
        problem = yaml_problem(err)
        if problem is None:
            raise
        raise CassetteFormatError(path, problem) from None
    if not isinstance(document, dict):
        raise CassetteFormatError(path, f"the top level must be a mapping, found {type(document).__name__}")
    if "interactions" in document and "entries" not in document:  # never an empty llmvcr cassette
        raise _foreign(path)
    return migrate(document, path)


def _foreign(path: str) -> ForeignCassetteError:
    target = os.path.splitext(path)[0] + ".llmvcr.yaml"
    return ForeignCassetteError(
        path,
        f"a vcrpy/pytest-recording cassette, not an llmvcr one; llmvcr neither reads it as empty "
        f"nor writes over it. Convert it: llmvcr convert {path} --to llmvcr-yaml -o {target}",
    )


_INTERACTIONS = re.compile(rb'^(?:interactions\s*:|\{\s*"interactions")', re.MULTILINE)


def refuse_foreign(path: str) -> None:
    """``ForeignCassetteError`` when ``path`` holds another recorder's cassette (checked before a
    rewrite that would not read it first, as ``record_mode="all"`` does)."""
    try:
        with open(path, "rb") as f:
            head = f.read(65536)
    except OSError:
        return
    if _INTERACTIONS.search(head) and not re.search(rb"^entries\s*:|\"entries\"", head, re.MULTILINE):
        raise _foreign(path)


def cassette_from_document(document: dict[str, Any], path: str) -> Cassette:
    entries = document.get("entries") or []
    if not isinstance(entries, list):
        raise CassetteFormatError(path, "expected a list", field="entries")
    seed = document.get("seed")
    recorded_with = document.get("recorded_with") or {}
    metadata = document.get("metadata") or {}
    if not isinstance(recorded_with, dict):
        raise CassetteFormatError(path, "expected a mapping", field="recorded_with")
    if not isinstance(metadata, dict):
        raise CassetteFormatError(path, "expected a mapping", field="metadata")
    cassette = Cassette(
        path,
        seed=None if seed is None else str(seed),
        recorded_with={str(k): str(v) for k, v in recorded_with.items()},
        metadata=metadata,
    )
    for position, raw in enumerate(entries):
        # Cheap shape checks now; the rest when the entry is first used.
        if not isinstance(raw, dict):
            raise CassetteFormatError(
                path, f"an entry must be a mapping, found {type(raw).__name__}", entry=position
            )
        request_hash = raw.get("request_hash")
        if not isinstance(request_hash, str):
            raise CassetteFormatError(path, "missing or not a string", entry=position, field="request_hash")
        cassette.add_raw(raw, request_hash)
    cassette.loaded_count = len(cassette)
    return cassette


def load_cassette(path: str | os.PathLike[str]) -> Cassette:
    """Read a cassette file (YAML or JSON by extension) with safe loaders only.

    Raises ``CassetteNotFoundError`` when the file is missing and ``CassetteFormatError`` when
    it is corrupt, truncated, unsafe or of a newer format version.
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise CassetteNotFoundError(
            f"{path}: no such cassette; record it first (record_mode='once')"
        ) from None
    return cassette_from_document(parse_document(data, path), path)


def validate(cassette: Cassette) -> None:
    """Build every entry now, raising ``CassetteFormatError`` on the first bad one."""
    for i in range(len(cassette)):
        cassette.entry(i)


def document_of(cassette: Cassette) -> dict[str, Any]:
    document: dict[str, Any] = {"version": FORMAT_VERSION}
    if cassette.seed is not None:
        document["seed"] = cassette.seed
    document["recorded_with"] = cassette.recorded_with
    if cassette.metadata:
        document["metadata"] = cassette.metadata
    document["entries"] = [
        raw if not isinstance(raw, Entry) else entry_to_mapping(raw)
        for raw in (cassette.raw(i) for i in range(len(cassette)))
    ]
    return document


def dump_document(document: Any, fmt: str) -> bytes:
    """Serialise a document (or, for a cassette writer, a list of entry mappings) as JSON or YAML."""
    if fmt == "json":
        return orjson.dumps(document, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
    return dump_yaml(document).encode("utf-8")


def _lock_path(path: str) -> str:
    # Locks live in the temporary folder, never beside the cassettes: a project's tree holds only
    # what it commits (a "*.lock" ignore rule would hide uv.lock and poetry.lock too).
    folder = os.path.join(tempfile.gettempdir(), f"llmvcr-locks-{getattr(os, 'getuid', lambda: 0)()}")
    os.makedirs(folder, exist_ok=True)
    digest = hashlib.sha256(os.path.realpath(path).encode("utf-8", "surrogateescape")).hexdigest()
    return os.path.join(folder, digest[:32] + ".lock")


@contextlib.contextmanager
def file_lock(path: str) -> Iterator[None]:
    """An exclusive lock across processes on ``path`` (flock; msvcrt on Windows), kept outside its folder."""
    with open(_lock_path(path), "a+b") as handle:
        if fcntl is not None:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        else:  # pragma: no cover - Windows
            msvcrt.locking(handle.fileno(), msvcrt.LK_LOCK, 1)
            try:
                yield
            finally:
                msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)


def _umask() -> int:
    try:  # Linux says it without changing it
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write(path: str, data: bytes) -> None:
    """Write to a temporary file in the same folder, fsync, then rename over ``path``.

    The new file gets the mode of the one it replaces, or what the umask gives a new file
    (``mkstemp`` alone would leave every cassette readable by its owner only).
    """
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    try:
        mode = os.stat(path).st_mode & 0o777
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(prefix=".llmvcr-tmp-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def save_cassette(path: str | os.PathLike[str], cassette: Cassette) -> None:
    """Write the whole cassette to ``path`` (format by extension), atomically and under the lock."""
    path = os.fspath(path)
    data = dump_document(document_of(cassette), format_of(path))
    with file_lock(path):
        atomic_write(path, data)


class CassetteWriter:
    """Adds recorded entries to one cassette file; every write is atomic and under the file lock.

    It keeps the text it last wrote. While the file on disk is still that text (same inode, size
    and modification time), only the new entries are serialised and joined to it, so a write costs
    the new entries and one file write rather than a parse and dump of the whole cassette. When
    another process (an xdist worker) changed the file meanwhile, the file is read and merged again.
    """

    def __init__(self, path: str, *, replace: bool = False) -> None:
        self.path = path
        self.fmt = format_of(path)
        self._replace = replace  # record_mode="all": the first write discards the file's entries
        self._stamp: tuple[int, int, int] | None = None
        self._mappings: list[Any] = []  # JSON: the entries on disk, dumped whole (orjson is fast)
        self._entries_text = b""  # YAML: the text of the entries on disk, "- provider: ..." items

    def append(self, cassette: Cassette, new: list[Entry]) -> None:
        """Write ``new`` after the entries already in the file, keeping what other writers put there."""
        mappings = [entry_to_mapping(e) for e in new]
        with file_lock(self.path):
            if self._stamp is None or self._stamp != _stamp(self.path):
                self._read_disk()
            document = document_of(cassette)
            del document["entries"]
            # What is on disk changes only once the write succeeded: a failed write (a full disk)
            # leaves the writer as it was, so the retry writes each entry once.
            if self.fmt == "json":
                all_mappings = [*self._mappings, *mappings]
                document["entries"] = all_mappings
                data = dump_document(document, "json")
            else:
                entries_text = self._entries_text + dump_document(mappings, "yaml")
                data = dump_document(document, "yaml") + b"entries:\n" + entries_text
            atomic_write(self.path, data)
            if self.fmt == "json":
                self._mappings = all_mappings
            else:
                self._entries_text = entries_text
            self._stamp = _stamp(self.path)

    def _read_disk(self) -> None:
        on_disk: list[Any] = []
        if not self._replace and os.path.exists(self.path):
            with open(self.path, "rb") as f:
                entries = parse_document(f.read(), self.path).get("entries") or []
            on_disk = entries if isinstance(entries, list) else []
        self._replace = False
        self._mappings = on_disk
        self._entries_text = dump_document(on_disk, "yaml") if on_disk and self.fmt == "yaml" else b""


def _stamp(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)
