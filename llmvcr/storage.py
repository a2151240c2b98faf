"""Cassette files: YAML and JSON, format versions, safe loading, atomic writes and a file lock."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Iterator
from typing import Any

import orjson
import yaml

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]
    import msvcrt

from .cassette import Cassette
from .convert.vcrpy import foreign_format, from_vcrpy
from .entries import Entry
from .errors import CassetteFormatError, CassetteNotFoundError, ForeignCassetteError
from .linear import FULL_VERSION, LINEAR_VERSION, Packer, layout_of, pack, represent_dict, unpack
from .parse_cache import ParseCache, cache_folder_for, parse_yaml
from .schema import Inline, entry_to_mapping, migrate

try:  # the C parser and emitter when libyaml is there: the same safe semantics, faster
    _YamlLoader: Any = yaml.CSafeLoader
    _YamlDumperBase: Any = yaml.CSafeDumper
except AttributeError:  # pragma: no cover - libyaml missing
    _YamlLoader = yaml.SafeLoader
    _YamlDumperBase = yaml.SafeDumper


class _Dumper(_YamlDumperBase):  # type: ignore[misc]
    def ignore_aliases(self, data: Any) -> bool:
        return True  # a value shared by two entries is written out twice, never as &id001/*id001


def _represent_str(dumper: Any, value: str) -> Any:
    # Multi-line text as a block scalar, so a PR diff reads like the conversation.
    if (
        "\n" in value
        and not any(c in value for c in "\r\t\x0b\x0c\x85\u2028\u2029")
        and value == value.rstrip(" ")
    ):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _represent_str)
_Dumper.add_representer(
    Inline, lambda dumper, value: dumper.represent_sequence("tag:yaml.org,2002:seq", value, flow_style=True)
)
_Dumper.add_representer(dict, represent_dict)


def format_of(path: str) -> str:
    return "json" if path.lower().endswith(".json") else "yaml"


def parse_document(data: bytes, path: str) -> dict[str, Any]:
    foreign = foreign_format(data[:65536])
    if foreign is not None:  # never parsed as an empty llmvcr cassette, never written over
        raise _foreign(path, foreign)
    fmt = format_of(path)
    try:
        document = (
            orjson.loads(data) if fmt == "json" else ParseCache(cache_folder_for(path)).load(data, parse_yaml)
        )
    except orjson.JSONDecodeError as err:
        raise CassetteFormatError(
            path, f"not valid JSON ({err}); restore it from version control or re-record"
        ) from None
    except yaml.constructor.ConstructorError as err:
        raise CassetteFormatError(
            path, f"refused an unsafe or unknown YAML tag: {err.problem} {err.problem_mark}"
        ) from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise CassetteFormatError(
            path, f"not valid YAML{where}; restore it from version control or re-record"
        ) from None
    except (ValueError, RecursionError, UnicodeDecodeError) as err:
        raise CassetteFormatError(path, f"unreadable ({type(err).__name__}: {err})") from None
    if not isinstance(document, dict):
        raise CassetteFormatError(path, f"the top level must be a mapping, found {type(document).__name__}")
    if "interactions" in document and "entries" not in document:  # never an empty llmvcr cassette
        raise _foreign(path)
    return migrate(document, path)


def _foreign(path: str, fmt: str = "vcrpy") -> ForeignCassetteError:
    target = os.path.splitext(path.removesuffix(".gz"))[0] + ".llmvcr.yaml"
    return ForeignCassetteError(
        path,
        f"a {fmt} cassette, not an llmvcr one: llmvcr reads it in place but never writes over it. "
        f"To record into it, convert it first: llmvcr convert {path} --to llmvcr-yaml -o {target}",
    )


def refuse_foreign(path: str) -> None:
    """``ForeignCassetteError`` when ``path`` holds another recorder's cassette (checked before a
    rewrite that would not read it first, as ``record_mode="all"`` does)."""
    try:
        with open(path, "rb") as f:
            head = f.read(65536)
    except OSError:
        return
    fmt = foreign_format(head)
    if fmt is not None:
        raise _foreign(path, fmt)


def cassette_from_document(document: dict[str, Any], path: str) -> Cassette:
    entries = document.get("entries") or []
    if not isinstance(entries, list):
        raise CassetteFormatError(path, "expected a list", field="entries")
    entries = unpack(entries, path) if document.get("version") == LINEAR_VERSION else entries
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
        layout=layout_of(document.get("version")),
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

    A vcrpy, pytest-recording, cassetter or LangChain cassette is converted in memory (see
    :func:`llmvcr.from_vcrpy`) and replays as if llmvcr had recorded it; writing to it is refused.
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
    try:
        document = parse_document(data, path)
    except ForeignCassetteError as err:  # vcrpy, cassetter, LangChain: read in place
        cassette = from_vcrpy(path, data)
        cassette.path = path
        cassette.read_only = str(err)
        cassette.loaded_count = len(cassette)
        return cassette
    return cassette_from_document(document, path)


def validate(cassette: Cassette) -> None:
    """Build every entry now, raising ``CassetteFormatError`` on the first bad one."""
    for i in range(len(cassette)):
        cassette.entry(i)


def document_of(cassette: Cassette, *, entries: bool = True) -> dict[str, Any]:
    """The cassette as the mapping its file holds, in its layout; ``entries=False``: the header only."""
    document: dict[str, Any] = {"version": FULL_VERSION}
    if cassette.seed is not None:
        document["seed"] = cassette.seed
    document["recorded_with"] = cassette.recorded_with
    if cassette.metadata:
        document["metadata"] = cassette.metadata
    if not entries:
        return document
    full = [
        raw if not isinstance(raw, Entry) else entry_to_mapping(raw)
        for raw in (cassette.raw(i) for i in range(len(cassette)))
    ]
    if cassette.layout == "linear":  # version 2 only when an entry refers to another
        full, document["version"] = pack(full)
    document["entries"] = full
    return document


def dump_document(document: Any, fmt: str) -> bytes:
    """Serialise a document (or, for a cassette writer, a list of entry mappings) as JSON or YAML."""
    if fmt == "json":
        return orjson.dumps(document, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
    text: str = yaml.dump(
        document, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100, default_flow_style=False
    )
    return text.encode("utf-8")


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
    refuse_foreign(path)  # another recorder's file is read in place, never written over
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
        self._packer = Packer()  # what the entries on disk hold, for new ones to refer back to

    def append(self, cassette: Cassette, new: list[Entry]) -> None:
        """Write ``new`` after the entries already in the file, keeping what other writers put there."""
        mappings = [entry_to_mapping(e) for e in new]
        with file_lock(self.path):
            if self._stamp is None or self._stamp != _stamp(self.path):
                self._read_disk()
            document = document_of(cassette, entries=False)
            packer = self._packer.copy()
            if packer.used or cassette.layout == "linear":  # a file's layout is kept, never mixed
                mappings = [packer.pack(m) for m in mappings]
                document["version"] = LINEAR_VERSION if packer.used else FULL_VERSION
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
            self._packer = packer
            self._stamp = _stamp(self.path)

    def _read_disk(self) -> None:
        on_disk: list[Any] = []
        disk: dict[str, Any] = {}
        if not self._replace and os.path.exists(self.path):
            with open(self.path, "rb") as f:
                disk = parse_document(f.read(), self.path)
            entries = disk.get("entries") or []
            on_disk = entries if isinstance(entries, list) else []
        self._packer = Packer.of(on_disk, disk.get("version"), self.path)
        self._replace = False
        self._mappings = on_disk
        self._entries_text = dump_document(on_disk, "yaml") if on_disk and self.fmt == "yaml" else b""


def _stamp(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)
