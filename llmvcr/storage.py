"""Cassette files: YAML and JSON, format versions, safe loading, atomic writes and a file lock."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
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

from . import exactjson
from .cassette import Cassette
from .entries import Entry
from .errors import CassetteFormatError, ForeignCassetteError
from .linear import FULL_VERSION, LINEAR_VERSION, Packer, layout_of, pack, represent_dict, unpack
from .parse_cache import ParseCache, YamlAliasError, cache_folder_for, parse_yaml
from .schema import Inline, entry_to_mapping, migrate
from .validation import COUNT_FIELD, check_header, check_nesting, read_cassette, with_count
from .validation import check_cassette_path as check_cassette_path  # the session checks a path it may record

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
_Dumper.add_representer(exactjson.NonFinite, _Dumper.represent_float)  # NaN read from JSON: .nan
_Dumper.add_representer(
    Inline, lambda dumper, value: dumper.represent_sequence("tag:yaml.org,2002:seq", value, flow_style=True)
)
_Dumper.add_representer(dict, represent_dict)


def format_of(path: str) -> str:
    return "json" if path.lower().endswith(".json") else "yaml"


def parse_document(data: bytes, path: str, *, counted: bool = True) -> dict[str, Any]:
    """The checked document a cassette file's bytes hold (see ``llmvcr.validation``); ``counted=False``
    skips the entry-count check (for ``llmvcr rehash``, which writes the count again)."""
    fmt = format_of(path)
    try:
        if fmt == "json":
            document = check_nesting(exactjson.loads(data), path)
        else:
            parse = lambda text: check_nesting(parse_yaml(text), path)  # noqa: E731 - once per miss
            document = ParseCache(cache_folder_for(path)).load(data, parse)
    except CassetteFormatError:
        raise
    except (orjson.JSONDecodeError, json.JSONDecodeError) as err:
        raise CassetteFormatError(
            path, f"not valid JSON ({err}); restore it from version control or re-record"
        ) from None
    except YamlAliasError as err:
        raise CassetteFormatError(
            path,
            f"holds {err}; llmvcr never writes YAML aliases and refuses them (one can expand to "
            "gigabytes): write the value out in full, or restore the file from version control",
        ) from None
    except yaml.constructor.ConstructorError as err:
        raise CassetteFormatError(
            path, f"refused an unsafe or unknown YAML tag: {err.problem} {err.problem_mark}"
        ) from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None)
        where += f" ({problem})" if problem else ""
        raise CassetteFormatError(
            path, f"not valid YAML{where}; restore it from version control or re-record"
        ) from None
    except (ValueError, RecursionError, UnicodeDecodeError) as err:
        raise CassetteFormatError(path, f"unreadable ({type(err).__name__}: {err})") from None
    if not isinstance(document, dict):
        raise CassetteFormatError(path, f"the top level must be a mapping, found {type(document).__name__}")
    if "interactions" in document and "entries" not in document:  # never an empty llmvcr cassette
        raise _foreign(path)
    document = migrate(document, path)
    check_header(document if counted else {k: v for k, v in document.items() if k != COUNT_FIELD}, path)
    return document


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
    """The cassette a document holds; the header is checked now, each entry when first used."""
    entries = check_header(document, path)
    entries = unpack(entries, path) if document.get("version") == LINEAR_VERSION else entries
    seed = document.get("seed")
    cassette = Cassette(
        path,
        seed=seed,
        recorded_with=document.get("recorded_with") or {},
        metadata=document.get("metadata") or {},
        layout=layout_of(document.get("version")),
    )
    for position, raw in enumerate(entries):
        # Cheap shape checks now; the rest when the entry is first used.
        if not isinstance(raw, dict):
            raise CassetteFormatError(
                path,
                f"an entry must be a mapping, found {type(raw).__name__}; restore the file from version "
                "control or re-record",
                entry=position,
            )
        request_hash = raw.get("request_hash")
        if not isinstance(request_hash, str):
            raise CassetteFormatError(
                path,
                "missing or not text; restore the file or re-record",
                entry=position,
                field="request_hash",
            )
        cassette.add_raw(raw, request_hash)
    cassette.loaded_count = len(cassette)
    return cassette


def load_cassette(path: str | os.PathLike[str]) -> Cassette:
    """Read a cassette file (YAML or JSON by extension) with safe loaders only.

    Raises ``CassetteNotFoundError`` when the file is missing and ``CassetteFormatError`` when
    it is corrupt, truncated, unsafe, of a newer format version, or not a file at all.
    """
    path = os.fspath(path)
    return cassette_from_document(parse_document(read_cassette(path), path), path)


def validate(cassette: Cassette) -> None:
    """Build every entry now, raising ``CassetteFormatError`` on the first bad one."""
    for i in range(len(cassette)):
        cassette.entry(i)


def document_of(cassette: Cassette, *, entries: bool = True) -> dict[str, Any]:
    """The cassette as the mapping its file holds, in its layout; ``entries=False``: the header only."""
    document: dict[str, Any] = {"version": FULL_VERSION, COUNT_FIELD: len(cassette)}
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
    """Serialise a document (or, for a cassette writer, a list of entry mappings) as JSON or YAML.

    A whole document's entry count is set to the entries it holds.
    """
    if (
        isinstance(document, dict)
        and document.get("version") in (FULL_VERSION, LINEAR_VERSION)
        and isinstance(document.get("entries"), list)
    ):
        document = with_count(document, len(document["entries"]))
    if fmt == "json":
        return exactjson.dumps(document, indent=True, scan=False)
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
        self._count = 0  # how many entries are on disk, for the header's entry count
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
                document = with_count(document, self._count + len(mappings))
                data = dump_document(document, "yaml") + b"entries:\n" + entries_text
            atomic_write(self.path, data)
            if self.fmt == "json":
                self._mappings = all_mappings
            else:
                self._entries_text = entries_text
            self._count += len(mappings)
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
        self._count = len(on_disk)
        self._mappings = on_disk
        self._entries_text = dump_document(on_disk, "yaml") if on_disk and self.fmt == "yaml" else b""


def _stamp(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)
