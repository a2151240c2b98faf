"""Every exception and warning llmvcr raises, in one tree.

::

    LLMVCRError                          anything llmvcr raises on its own account
    ├── ReplayDivergence                 no recorded entry answers a request, and recording is off
    ├── ReplayExhausted                  a replayed WebSocket has no recorded message left for recv()
    ├── AnswerShapeError                 a recorded answer does not fit its call (a stream for a plain call)
    ├── TruncatedStreamError             a replayed stream is read past the point its recording was cut
    ├── RecordedCallError                a patched function's recorded exception cannot be rebuilt
    │   └── RecordedToolError            a tool's recorded exception whose class cannot be imported
    ├── ToolDeniedError                  tool_policy="deny": the test called a tool it may not call
    ├── NetworkBlockedError              an LLM call (or a socket) outside a cassette, refused
    ├── UnrecognizedRequestError         a request no provider claims, inside a replay-only cassette
    ├── UnredactableBodyError            (also ValueError) a secret inside compressed bytes: not written
    ├── UndecodableError                 a response in an encoding whose module is missing: not recorded
    ├── CassetteNotFoundError            (also FileNotFoundError) replay asked for a missing file
    ├── CassetteFormatError              (also ValueError) a file that cannot be read; names file/entry/field
    │   └── ForeignCassetteError         another tool's cassette (vcrpy) where an llmvcr one was expected
    ├── CassetteWriteError               (also OSError) a cassette could not be written; names the file
    ├── UnplayedEntriesError             on_unplayed="fail": a passing test left recorded entries unused
    ├── ExpiredCassetteError             expiry="fail": a cassette older than max_age
    ├── RecordBudgetSpent                --llmvcr-record-budget: this cassette would record past the budget
    ├── SDKChangedError                  a release renamed a private name llmvcr needs for this call
    └── CommandError                     the ``llmvcr`` command cannot go on

    UserWarning
    ├── ReplayDivergenceWarning          on_divergence="warn": the next unused entry was served instead
    ├── UnrecordedCallWarning            a recording cassette let unclaimed requests through
    ├── EditedCassetteWarning            an entry's stored request_hash no longer fits its request
    ├── ConversionWarning                a converter kept going but the target cannot hold something
    ├── CassetteWriteWarning             a write failed (retried), or a rewrite dropped comments
    ├── UnplayedEntriesWarning           on_unplayed="warn": a passing test left recorded entries unused
    ├── ExpiredCassetteWarning           expiry="warn": a cassette older than max_age
    └── SDKChangedWarning                a release renamed a private name; llmvcr took a plainer path

Each message names the file and the call, and says what to do next.
"""

from __future__ import annotations

from typing import Any


class LLMVCRError(Exception):
    """Base class of every error llmvcr raises on its own account."""


class ReplayDivergence(LLMVCRError):
    """A live request that no recorded entry answers, and the cassette may not record it.

    ``diff`` lists ``(path, recorded, live)`` against the nearest recorded request (empty when
    the cassette has no request on the same endpoint); ``cassette_path`` names the file;
    ``request`` is the live request and ``nearest`` the recorded entry it was compared with.
    """

    def __init__(
        self,
        message: str,
        *,
        cassette_path: str = "",
        diff: list[tuple[str, Any, Any]] | None = None,
        request: Any = None,
        nearest: Any = None,
    ) -> None:
        super().__init__(message)
        self.cassette_path = cassette_path
        self.diff = diff or []
        self.request = request
        self.nearest = nearest


class ReplayExhausted(LLMVCRError):
    """``recv()`` on a replayed WebSocket that has no recorded message left to give."""


class AnswerShapeError(LLMVCRError):
    """The entry that matches a call holds an answer of the wrong shape: a plain body for a call
    that asks for a stream, or a stream for one that does not. Raised before anything is served;
    the message names the cassette and the entry, and says how to re-record or fix it."""


class TruncatedStreamError(LLMVCRError):
    """A stream recorded cut short (``truncated: true``: the caller stopped reading while recording)
    is read past the cut on replay. The recording holds no more; re-record the call to read it whole."""


class RecordedCallError(LLMVCRError):
    """A recorded call raised an exception whose class could not be rebuilt on replay."""


class RecordedToolError(RecordedCallError):
    """An ``@llmvcr.tool`` call raised, when recorded, an exception whose class cannot be imported
    (or built from its message) where the replay runs; the message names the tool and the original
    ``module:Class`` and repeats the recorded message."""


class ToolDeniedError(LLMVCRError):
    """A tool the cassette's ``tool_policy`` marks ``"deny"`` was called; nothing ran and nothing was
    served. The message names the tool, the cassette and the test, when pytest runs one."""


class UnredactableBodyError(LLMVCRError, ValueError):
    """A secret sits where llmvcr cannot replace it (inside compressed bytes): nothing is written."""


class UndecodableError(LLMVCRError):
    """A response compressed with an encoding whose module is not installed: it cannot be recorded."""


class CommandError(LLMVCRError):
    """A command cannot go on; the message says why and what to do."""


class CassetteNotFoundError(LLMVCRError, FileNotFoundError):
    """A cassette was asked to replay (``record_mode="none"``, ``load_cassette``) but the file is missing."""


class CassetteFormatError(LLMVCRError, ValueError):
    """A cassette file could not be read: corrupt, truncated, hand-broken, unsafe or from a newer llmvcr.

    The message names the file, the entry and the field, and says what to do.
    """

    def __init__(self, path: str, detail: str, *, entry: int | None = None, field: str | None = None) -> None:
        where = path
        if entry is not None:
            where += f", entry {entry}"
        if field is not None:
            where += f", field {field!r}"
        super().__init__(f"{where}: {detail}")
        self.path = path
        self.entry = entry
        self.field = field


class ReplayDivergenceWarning(UserWarning):
    """Issued by ``on_divergence="warn"``: no entry matched, the next unused one was served instead."""


class NetworkBlockedError(LLMVCRError):
    """A connection was attempted while llmvcr blocks the network (``--llmvcr-block-network``)."""


class UnrecognizedRequestError(LLMVCRError):
    """An HTTP request inside a replay-only cassette that no provider claims: it would reach the network.

    Register a provider for its SDK (``llmvcr.register_provider``), or let it through with the
    cassette option ``allow_unrecognized=["host"]``.
    """


class UnrecordedCallWarning(UserWarning):
    """A recording cassette let HTTP requests through that no provider claims: they are not in the file."""


class EmptyRecordingWarning(UserWarning):
    """A cassette that could record closed with no LLM call recorded, so no file was written."""


class EditedCassetteWarning(UserWarning):
    """A cassette entry's stored ``request_hash`` no longer fits its request: it was edited by hand."""


class ConversionWarning(UserWarning):
    """A conversion kept going but the target format cannot hold something, or replay will diverge."""


class ForeignCassetteError(CassetteFormatError):
    """Another recorder's cassette (vcrpy, pytest-recording) at a path llmvcr was asked to use.

    It is never read as an empty llmvcr cassette and never written over; the message gives the
    ``llmvcr convert`` command that makes an llmvcr cassette of it.
    """


class CassetteWriteError(LLMVCRError, OSError):
    """A cassette could not be written (a read-only folder, a full disk); the file on disk is as it was.

    ``path`` names the cassette and ``reason`` what the system refused. Raised when a cassette
    closes with recorded entries it could not write, counted in ``unwritten``; the calls themselves
    went out once and their answers reached the caller (a ``CassetteWriteWarning`` said so at once).
    """

    def __init__(self, path: str, reason: str, *, unwritten: int = 0, errno: int | None = None) -> None:
        if unwritten:
            entries = "1 recorded entry was" if unwritten == 1 else f"{unwritten} recorded entries were"
            message = (
                f"{path}: {entries} not written ({reason}); the file on disk is as it was. Make its "
                f"folder writable or free disk space, then record again"
            )
        else:
            message = f"{path}: could not be written ({reason}); the file on disk is as it was"
        super().__init__(message)
        self.path, self.reason, self.unwritten = path, reason, unwritten
        if errno is not None:
            self.errno = errno


class CassetteWriteWarning(UserWarning):
    """A cassette write failed and is tried again at the next write and at exit, or a rewrite of a
    hand-edited cassette could not keep its comments. The message names the file."""


# -- freshness: cassettes that may no longer tell the truth (llmvcr.freshness.check) --------------------
class UnplayedEntriesError(LLMVCRError):
    """``on_unplayed="fail"``: a test passed while recorded entries of its cassette went unused."""


class ExpiredCassetteError(LLMVCRError):
    """``expiry="fail"``: the cassette was recorded longer ago than ``max_age``."""


class RecordBudgetSpent(LLMVCRError):
    """``--llmvcr-record-budget``: the cassette would record, and its cost does not fit in what is left
    (checked before it opens: a cassette is recorded whole or not at all)."""


class UnplayedEntriesWarning(UserWarning):
    """``on_unplayed="warn"`` (the default): a test passed while recorded entries went unused."""


class ExpiredCassetteWarning(UserWarning):
    """``expiry="warn"``, or ``re-record`` where recording is not allowed (CI): an expired cassette."""


class SDKChangedError(LLMVCRError):
    """An SDK release renamed or moved a private name llmvcr needs to intercept this call.

    The message names the package, its version, the name and the remedy (pin the package below
    that version, or upgrade llmvcr). Raised at the first call through that SDK, never at open.
    """


class SDKChangedWarning(UserWarning):
    """An SDK release renamed or moved a private name llmvcr uses; it took a plainer path that still
    records and replays correctly. The message names the package, its version and the name."""
