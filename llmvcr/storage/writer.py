"""Writing cassettes: atomic, under a lock, through symlinks, entries added as they are recorded.

Every write goes to a temporary file beside the cassette, is flushed to disk, then renamed over
it: a reader sees the old file or the new one, never half of one. A temporary file that a killed
writer left behind is removed by the next write into its folder. A cassette that is a symlink is
written (and locked) at its target, so the link and everything else pointing there stay in step.

``record_mode="all"`` re-records a cassette once per run: the first writer of a run replaces the
entries on disk; every later writer of that run (the next test sharing the cassette, another
pytest-xdist worker) adds to them. A run is ``LLMVCR_RUN_ID`` when it is set, else the pytest
session (xdist workers share their controller's), else the process.
"""

from __future__ import annotations

import bisect
import contextlib
import copy
import hashlib
import os
import re
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]
    import msvcrt

from ..cassette import Cassette
from ..cassette.entries import Entry
from ..cassette.linear import FULL_VERSION, LINEAR_VERSION, Packer
from ..cassette.schema import entry_to_mapping
from ..errors import CassetteWriteError, CassetteWriteWarning
from .files import document_of, dump_document, format_of, parse_document, refuse_foreign
from .parse_cache import parse_yaml
from .runs import run_id
from .validation import COUNT_FIELD, END_KEY, END_MARKER, TRAILER, set_count, with_count, without_trailer

__all__ = [
    "CassetteWriter",
    "atomic_write",
    "file_lock",
    "lock_path",
    "remove_stale_temporaries",
    "save_cassette",
]

TEMPORARY_PREFIX = ".llmvcr-tmp-"
STALE_AFTER = 600.0  # seconds: no write takes this long, so an older temporary file is abandoned
KNOWN_KEYS = frozenset(
    {"version", COUNT_FIELD, END_MARKER, "seed", "recorded_with", "metadata", "entries", END_KEY}
)


def lock_path(path: str) -> str:
    """The lock file of the cassette at ``path``, named after its real path: a link and its target share it.

    Locks live in the temporary folder, never beside the cassettes: a project's tree holds only what
    it commits (a "*.lock" ignore rule would hide uv.lock and poetry.lock too).
    """
    folder = os.path.join(tempfile.gettempdir(), f"llmvcr-locks-{getattr(os, 'getuid', lambda: 0)()}")
    os.makedirs(folder, exist_ok=True)
    digest = hashlib.sha256(os.path.realpath(path).encode("utf-8", "surrogateescape")).hexdigest()
    return os.path.join(folder, digest[:32] + ".lock")


@contextlib.contextmanager
def file_lock(path: str) -> Iterator[None]:
    """An exclusive lock across processes on ``path`` (flock; msvcrt on Windows), kept outside its folder."""
    with open(lock_path(path), "a+b") as handle:
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


def target_of(path: str) -> str:
    """Where a write to ``path`` goes: the file a symlink points to, else ``path`` itself."""
    return os.path.realpath(path) if os.path.islink(path) else path


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
    """Write to a temporary file in the same folder, fsync, then rename over ``path`` (a symlink's target).

    The new file gets the mode of the one it replaces, or what the umask gives a new file
    (``mkstemp`` alone would leave every cassette readable by its owner only). The temporary
    file's name carries this process's id, so a later writer can tell when its owner is gone.
    """
    path = target_of(path)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    try:
        mode = os.stat(path).st_mode & 0o777
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(prefix=f"{TEMPORARY_PREFIX}{os.getpid()}-", dir=directory)
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


def _alive(pid: int) -> bool:
    if pid == os.getpid() or os.name == "nt":  # Windows has no harmless signal 0: go by age alone
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def remove_stale_temporaries(folder: str) -> None:
    """Remove the temporary files a killed writer left in ``folder``: its process is gone, or the file
    is older than ``STALE_AFTER``. A live writer's file is left alone."""
    try:
        found = [e for e in os.scandir(folder) if e.name.startswith(TEMPORARY_PREFIX)]
    except OSError:
        return
    now = time.time()
    for item in found:
        with contextlib.suppress(OSError):  # gone already (its writer finished), or not ours to remove
            if not item.is_file(follow_symlinks=False):
                continue
            owner = item.name[len(TEMPORARY_PREFIX) :].split("-", 1)[0]
            if (owner.isdigit() and not _alive(int(owner))) or now - item.stat().st_mtime > STALE_AFTER:
                os.unlink(item.path)


def save_cassette(path: str | os.PathLike[str], cassette: Cassette) -> None:
    """Write the whole cassette to ``path`` (format by extension), atomically and under the lock.

    Raises ``CassetteWriteError`` naming the file when it cannot be written; the old file stays whole.
    """
    path = os.fspath(path)
    refuse_foreign(path)  # another recorder's file is read in place, never written over
    data = dump_document(document_of(cassette), format_of(path))
    try:
        with file_lock(path):
            remove_stale_temporaries(os.path.dirname(os.path.abspath(target_of(path))))
            atomic_write(path, data)
    except OSError as err:
        raise CassetteWriteError(path, err.strerror or str(err), errno=err.errno) from err


def write_over(cassette: Cassette, path: str | os.PathLike[str]) -> str:
    """Write the whole cassette to ``path`` (format by extension), atomically and under the lock, over
    any file there (another recorder's too: a conversion in place); returns the path."""
    path = os.fspath(path)
    with file_lock(path):
        atomic_write(path, dump_document(document_of(cassette), format_of(path)))
    return path


_HASH = r"(?m)(?:^|[ \t])#"  # these compile when first used (re keeps them): replay never writes
_ENTRIES_LINE = rb"(?m)^entries:[ \t]*(?:#[^\n]*)?\n"
# blank and comment lines, then "- " at column 0: the entries are a block list, as llmvcr writes it
_FIRST_ITEM = rb"\A(?:[ \t]*(?:#[^\n]*)?\n)*-[ \n]"
_TOP_LEVEL = rb"(?m)^[^\s#-]"  # a line that would start another top-level key


def split_entries(data: bytes, others: dict[str, Any]) -> tuple[bytes, bytes] | None:
    """``(the text up to and with the "entries:" line, the entries' text)`` of a YAML cassette whose
    entries come last as a block list at column 0 (then only its end marker), else None. The small
    text above the entries is read back and must hold every other top-level key (``others``), so
    the rest is the entries."""
    found = max(re.finditer(_ENTRIES_LINE, data), key=lambda m: m.start(), default=None)
    if found is None:
        return None
    tail = data[found.end() :]
    stripped = without_trailer(tail)  # a file written before the end marker has none
    tail = tail if stripped is None else stripped
    if not re.match(_FIRST_ITEM, tail) or re.search(_TOP_LEVEL, tail) or not tail.endswith(b"\n"):
        return None
    import yaml  # PyYAML on first use (never at import: a JSON replay does not need it)

    try:
        head = parse_yaml(data[: found.start()]) or {}
    except (yaml.YAMLError, ValueError):
        return None
    return (data[: found.end()], tail) if head == others else None


def has_comments(text: str) -> bool:
    """Whether YAML ``text`` has a comment: a ``#`` outside every scalar (not a heading in an answer)."""
    if not re.search(_HASH, text):
        return False
    import yaml

    try:
        spans = [
            ((e.start_mark.line, e.start_mark.column), (e.end_mark.line, e.end_mark.column))
            for e in yaml.parse(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
            if isinstance(e, yaml.ScalarEvent) and e.start_mark and e.end_mark  # the parser marks every one
        ]
    except yaml.YAMLError:
        return False
    starts = [start for start, _ in spans]
    for number, line in enumerate(text.split("\n")):
        for match in re.finditer(_HASH, line):
            at = (number, match.end() - 1)
            i = bisect.bisect_right(starts, at) - 1
            if i < 0 or at >= spans[i][1]:
                return True
    return False


def _warn(message: str) -> None:
    warnings.warn(message, CassetteWriteWarning, stacklevel=3)


class CassetteWriter:
    """Adds recorded entries to one cassette file; every write is atomic and under the file lock.

    It keeps the text it last wrote. While the file on disk is still that text (same inode, size
    and modification time), only the new entries are serialised and joined to it, so a write costs
    the new entries and one file write rather than a parse and dump of the whole cassette. When
    another process (an xdist worker) changed the file meanwhile, the file is read and merged again.
    A hand-edited YAML file keeps its text, comments included, while its entries come last and its
    header is what llmvcr would write; else it is written again, unknown top-level keys kept, and
    ``warn`` says once that its comments are gone. A failed write raises ``CassetteWriteError``
    and leaves the writer as it was, so the next write has each entry once.
    """

    def __init__(self, path: str, *, replace: bool = False, warn: Callable[[str], None] = _warn) -> None:
        self.path = path
        self.fmt = format_of(path)
        self.warn = warn
        self._replace = replace  # record_mode="all": the first write of the run discards the file's entries
        self._stamp: tuple[int, int, int] | None = None
        self._mappings: list[Any] = []  # JSON: the entries on disk, dumped whole (orjson is fast)
        self._entries_text = b""  # YAML: the text of the entries on disk, "- provider: ..." items
        self._others: dict[str, Any] = {}  # the file's top-level keys, in order, but "entries"
        self._head: bytes | None = None  # YAML: the file's own text above its entries, while it fits
        self._swept = False
        self._comments = False  # the file had comments this writer's rewrite drops
        self._packer = Packer()  # what the entries on disk hold, for new ones to refer back to
        self._count = 0  # how many entries are on disk, for the header's entry count

    def append(self, cassette: Cassette, new: list[Entry]) -> None:
        """Write ``new`` after the entries already in the file, keeping what other writers put there."""
        mappings = [entry_to_mapping(e) for e in new]
        target = target_of(self.path)
        try:
            with file_lock(target):
                if not self._swept:
                    remove_stale_temporaries(os.path.dirname(os.path.abspath(target)))
                    self._swept = True
                replacing = False
                if self._stamp is None or self._stamp != _stamp(target):
                    replacing = self._read_disk(target)
                document = self._header(cassette)
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
                    head = self._head_for(document)
                    data = head + entries_text + TRAILER  # the last line: a file cut short lacks it
                atomic_write(target, data)
                if replacing:
                    _mark_run(target)
                if self.fmt == "json":
                    self._mappings = all_mappings
                else:
                    self._entries_text = entries_text
                    self._head, self._others = head, copy.deepcopy(document)  # what is above the entries now
                self._count += len(mappings)
                self._packer = packer
                self._stamp = _stamp(target)
        except OSError as err:
            raise CassetteWriteError(self.path, err.strerror or str(err), errno=err.errno) from err
        if self._comments:  # said after the write, so a warning turned error never loses an entry
            self._comments = False
            self.warn(
                f"{self.path}: the comments in this hand-edited cassette were not kept when new "
                f"entries were added (a rewrite cannot carry YAML comments); keep notes under a "
                f"top-level key of your own instead, which is kept"
            )

    def _header(self, cassette: Cassette) -> dict[str, Any]:
        document = document_of(cassette, entries=False)
        if all(key in KNOWN_KEYS for key in self._others):
            return document
        # the file's order: llmvcr's values for the keys it knows, the user's own keys as they were
        header: dict[str, Any] = {}
        for key, value in self._others.items():
            if key not in KNOWN_KEYS:
                header[key] = value
            elif key in document:
                header[key] = document[key]
        for key, value in document.items():
            header.setdefault(key, value)
        return header

    def _head_for(self, header: dict[str, Any]) -> bytes:
        if self._head is not None and _uncounted(header) == _uncounted(self._others):  # user's text
            return set_count(self._head, header[COUNT_FIELD], self.path)  # comments and all, counted
        if self._head is not None and has_comments(self._head.decode("utf-8", "surrogateescape")):
            self._comments = True
        return dump_document(header, "yaml") + b"entries:\n"

    def _read_disk(self, target: str) -> bool:
        """Read the entries on disk; True when this write replaces them (``all``, first of the run)."""
        replacing = self._replace and not _run_marked(target)
        self._replace = False
        document: dict[str, Any] = {}
        data = b""
        if not replacing and os.path.exists(target):
            with open(target, "rb") as f:
                data = f.read()
            document = parse_document(data, self.path)
        entries = document.get("entries") or []
        on_disk = entries if isinstance(entries, list) else []
        self._others = {key: value for key, value in document.items() if key not in ("entries", END_KEY)}
        self._mappings = on_disk
        self._packer = Packer.of(on_disk, document.get("version"), self.path)
        self._count = len(on_disk)
        self._head, self._entries_text = None, b""
        if self.fmt == "yaml" and data:
            split = split_entries(data, self._others) if on_disk else None
            if split is not None:
                self._head, self._entries_text = split
            else:  # laid out otherwise: the entries are written again, and any comment is lost
                self._entries_text = dump_document(on_disk, "yaml") if on_disk else b""
                self._comments = self._comments or has_comments(data.decode("utf-8", "surrogateescape"))
        return replacing


def _uncounted(header: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in header.items() if key not in (COUNT_FIELD, END_MARKER)}


def _run_marker(path: str) -> str:
    return lock_path(path)[: -len(".lock")] + ".run"


def _run_marked(path: str) -> bool:
    """Whether a writer of this run already replaced the cassette's entries (read under its lock)."""
    try:
        with open(_run_marker(path), encoding="utf-8") as f:
            return f.read() == run_id()
    except (OSError, UnicodeDecodeError):
        return False


def _mark_run(path: str) -> None:
    with open(_run_marker(path), "w", encoding="utf-8") as f:
        f.write(run_id())


def _stamp(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)
