"""One activation of a cassette: what happens to each call, and what reaches the file.

``Session.decide`` is the whole policy for one request, in one place: redact it (every
provider's requests pass here, so no adapter can skip it), take an injected fault, match it
against the cassette, and answer with a :class:`Decision`. ``Decision.record`` is the way
back: the live response is redacted, passed to ``before_record`` and written. The session
installs nothing and knows no SDK; ``llmvcr.api`` opens it and ``llmvcr._active`` finds it.
"""

from __future__ import annotations

import os
import platform
import signal
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from . import faults
from .cassette import Cassette, Entry, Request, Response
from .diff import DiffRow, format_rows, structural_diff
from .errors import (
    CassetteNotFoundError,
    EditedCassetteWarning,
    ReplayDivergence,
    ReplayDivergenceWarning,
    UnrecognizedRequestError,
    UnrecordedCallWarning,
)
from .faults import Fault
from .matching import default_request_hash
from .options import Options, settings
from .redact import RESPONSE_HEADERS, Redactor, compile_paths, compile_redactions
from .schema import LLMVCR_VERSION
from .storage import CassetteWriter, load_cassette, save_cassette


class Caller(Protocol):
    """What the session needs of the provider a call came through."""

    @property
    def name(self) -> str: ...

    def sdk_version(self) -> str | None: ...


def recorded_with() -> dict[str, str]:
    """The versions every new cassette names; each SDK's is added when a call through it is recorded."""
    return {"llmvcr": LLMVCR_VERSION, "python": platform.python_version()}


@dataclass(slots=True, eq=False)
class Decision:
    """The answer to one call: serve ``entry``, raise ``fault``, or go live.

    Live, the adapter makes the real call and hands what came back to :meth:`record`; when
    ``recording`` is False (a call outside every cassette) there is nothing to keep.
    """

    provider: str
    request: Request  # as it is stored: redacted
    request_hash: str
    entry: Entry | None = None
    fault: Fault | None = None
    session: Session | None = None

    @property
    def recording(self) -> bool:
        """The call goes live and its response belongs in the cassette."""
        return self.entry is None and self.fault is None and self.session is not None

    @property
    def replay_speed(self) -> float | None:
        return self.session.options.replay_speed if self.session is not None else None

    def record(self, response: Response) -> Entry | None:
        """Keep the live ``response`` (unredacted: the session redacts it); the entry written, if any."""
        if not self.recording or self.session is None:
            return None
        return self.session.record(self, response)

    def on_close(self, finish: Callable[[], None]) -> None:
        """A live stream is being read: if the cassette closes first, ``finish()`` records what arrived."""
        if self.recording and self.session is not None:
            self.session.stream_opened(finish)


class _WriteLock:
    """The session's lock, which can re-send SIGTERM when its holder lets go.

    A SIGTERM handler must not wait for a lock its own thread may hold (a deadlock), nor write
    while that thread is half-way through a write: it asks the holder to signal again on release.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.resignal = False

    def free(self) -> bool:
        if self._lock.acquire(blocking=False):
            self._lock.release()
            return True
        return False

    def __enter__(self) -> None:
        self._lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()
        if self.resignal:
            self.resignal = False
            os.kill(os.getpid(), signal.SIGTERM)  # handled again, now that nothing is being written


class Session:
    """One activation of a cassette: its options, its file and the calls made while it is open."""

    def __init__(
        self, path: str, options: Options, cassette: Cassette | None = None, *, persist: bool = True
    ) -> None:
        self.path = path
        self.options = options
        self.record_mode = settings.record_mode or options.record_mode
        self.persist = persist
        self.redactor = Redactor(
            patterns=compile_redactions(options.redact),
            filter_headers=frozenset(h.lower() for h in options.filter_headers),
            paths=compile_paths(options.redact),
        )
        self.open = False
        self.replayed = 0
        self.served: list[Entry] = []  # the entries replay served, for the usage the run saved
        self.recorded = 0
        self.writes = 0
        self._lock = _WriteLock()
        self._live = False  # on_divergence="live" engaged: record from here on
        self._sequential_cursor = 0
        self._fresh_file = False
        self._replace_on_write = False
        self._own_index: dict[str, list[int]] | None = None
        self._pending: list[Entry] = []
        self._next_flush = 0.0
        self._flush_timer: threading.Timer | None = None
        self._writer: CassetteWriter | None = None
        self._versions_noted: set[str] = set()
        self._versions: dict[str, str] = {}  # provider -> SDK version, named in recorded_with once used
        self._open_streams: list[Callable[[], None]] = []  # finish a stream still being recorded
        self._previous_sigterm: Any = None
        self._rehashed = False
        self.unrecorded: dict[str, int] = {}  # host -> requests no provider claimed, let through
        self.cassette = cassette if cassette is not None else self._load()
        if options.seed is not None:
            self.cassette.seed = options.seed

    def _load(self) -> Cassette:
        if self.record_mode == "all":
            self._replace_on_write = True
            return Cassette(self.path, recorded_with=recorded_with())
        if not os.path.exists(self.path):
            if self.record_mode == "none":
                raise CassetteNotFoundError(
                    f"{self.path}: no such cassette and record_mode='none' forbids recording; "
                    f"record it with record_mode='once' (or --llmvcr-record-mode=once)"
                )
            self._fresh_file = True
            return Cassette(self.path, recorded_with=recorded_with())
        return load_cassette(self.path)

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> None:
        """Begin answering calls (``llmvcr.api`` installs interception and activates the session)."""
        self.open = True
        self._catch_sigterm()

    def finish(self, failed: bool) -> None:
        """Stop answering: keep streams still being read, write what is pending, prune if asked."""
        self.open = False
        self._restore_sigterm()
        for finish in self._open_streams:  # a stream the caller left unread: keep what it received
            finish()
        self._open_streams.clear()
        self.flush()
        if self.unrecorded:
            calls = ", ".join(f"{n} to {host}" for host, n in sorted(self.unrecorded.items()))
            nothing = " (the cassette recorded nothing)" if not self.recorded and not self.replayed else ""
            warnings.warn(
                f"{self.path or 'cassette'}: HTTP calls no provider claims were not recorded{nothing}: "
                f"{calls}. "
                f"Register a provider for their SDK (llmvcr.register_provider), or list the hosts in "
                f"allow_unrecognized= to say they are not LLM calls.",
                UnrecordedCallWarning,
                stacklevel=2,
            )
        if self.options.prune and self.cassette.unplayed and not failed and self.persist:
            self.cassette.drop_unplayed()
            save_cassette(self.path, self.cassette)
            self.writes += 1

    def _catch_sigterm(self) -> None:
        """While recording, SIGTERM first writes what was recorded, then does what it would have done."""
        if threading.current_thread() is not threading.main_thread():
            return
        previous = signal.getsignal(signal.SIGTERM)
        if previous is not signal.SIG_DFL:
            return

        def on_sigterm(signum: int, frame: Any) -> None:
            if not self._lock.free():
                self._lock.resignal = True  # a write is under way: its end signals again
                if not self._lock.free():
                    return
                self._lock.resignal = False  # it ended meanwhile
            self._terminate()

        signal.signal(signal.SIGTERM, on_sigterm)
        self._previous_sigterm = previous

    def _terminate(self) -> None:
        """Write what was recorded, then do what SIGTERM would have done without us."""
        self.flush()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    def _restore_sigterm(self) -> None:
        if self._previous_sigterm is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self._previous_sigterm)
            self._previous_sigterm = None

    # -- deciding ----------------------------------------------------------------------------------
    @property
    def can_record(self) -> bool:
        return self._live or self._fresh_file or self.record_mode in ("new_episodes", "all")

    def redact_request(self, request: Request) -> Request:
        """The request as it may be stored: credentials learned and dropped, secrets replaced.

        Headers first, so that a key learned from ``authorization`` is scrubbed from the body too.
        """
        redactor = self.redactor
        headers = redactor.headers(request.headers.items(), frozenset(request.headers))
        query = redactor.query(request.query) if request.query else ()
        return Request(
            request.method, redactor.text(request.path), redactor.body(request.body), query, headers
        )

    def decide(self, provider: Caller, request: Request) -> Decision:
        """Redact ``request``, then: a fault due on this call, the recorded entry, or live.

        Raises ``ReplayDivergence`` when nothing answers and the cassette may not record.
        """
        __tracebackhide__ = True  # pytest shows the user's frame and the message
        request = self.redact_request(request)
        normalised = request.normalised()
        stored_hash = default_request_hash(normalised)
        name = provider.name
        if name not in self._versions_noted:
            self._note_version(provider)
        fault = faults.take(name)
        if fault is not None:
            if fault.kind in ("timeout", "connection"):
                return Decision(name, request, "", fault=fault, session=self)
            return Decision(
                name, request, "", entry=Entry(name, request, fault.response(name), ""), session=self
            )
        fingerprinter = self.options.fingerprinter
        key = stored_hash if fingerprinter.is_default else fingerprinter.request_hash(normalised)
        live = Decision(name, request, stored_hash, session=self)
        if self.record_mode == "all" or self._live:
            return live
        position: int | None
        if self.options.mode == "sequential":
            position = self._claim_sequential()
        else:
            with self._lock:
                candidates = self._index().get(key, [])
            position = self.cassette.claim(candidates, allow_repeats=self.options.allow_playback_repeats)
            if position is None and not candidates and self._rehash_edited():
                with self._lock:
                    candidates = self._index().get(key, [])
                position = self.cassette.claim(candidates, allow_repeats=self.options.allow_playback_repeats)
        if position is not None:
            return self._serve(name, request, position, stored_hash)
        if self.can_record:
            return live
        if self.options.on_divergence == "live":
            self._live = True
            return live
        rows, nearest = self.nearest_diff(normalised)
        message = self.divergence_message(name, request, rows, nearest)
        if self.options.on_divergence == "warn":
            position = self._claim_sequential()
            if position is not None:
                warnings.warn(
                    message + "\nServing the next unused entry instead.",
                    ReplayDivergenceWarning,
                    stacklevel=2,
                )
                return self._serve(name, request, position, stored_hash)
        raise ReplayDivergence(message, cassette_path=self.path, diff=rows, request=request)

    def unclaimed(self, method: str, url: str, host: str) -> None:
        """A request no provider claims: refused in a replay-only session, else counted for the warning."""
        __tracebackhide__ = True
        allowed = self.options.allow_unrecognized
        if "*" in allowed or host in allowed:
            return
        if not self.can_record and self.options.on_divergence != "live":
            raise UnrecognizedRequestError(
                f"llmvcr: {method} {url} inside {self.path} (record_mode={self.record_mode!r}) is not a call "
                f"of any registered provider, and replay must not reach the network. If it is an LLM call, "
                f"register its SDK (llmvcr.register_provider); if it is not, add "
                f"allow_unrecognized=[{host!r}] to the cassette's options."
            )
        with self._lock:
            self.unrecorded[host] = self.unrecorded.get(host, 0) + 1

    def _note_version(self, provider: Caller) -> None:
        self._versions_noted.add(provider.name)
        version = provider.sdk_version()
        if version:
            self._versions[provider.name] = version

    def _rehash_edited(self) -> bool:
        """On a miss, once: entries whose stored ``request_hash`` no longer fits their request (a
        hand-edited cassette) are indexed by what the request says now, with a warning naming the file."""
        if self._rehashed or not self.options.fingerprinter.is_default:
            return False
        self._rehashed = True
        stale = [
            i
            for i in range(self.cassette.loaded_count)
            if self.cassette.entry(i).request_hash
            != default_request_hash(self.cassette.entry(i).request.normalised())
        ]
        if not stale:
            return False
        index: dict[str, list[int]] = {}
        for i in range(len(self.cassette)):
            entry = self.cassette.entry(i)
            h = default_request_hash(entry.request.normalised()) if i in stale else entry.request_hash
            index.setdefault(h, []).append(i)
        with self._lock:
            self._own_index = index
        shown = ", ".join(str(i) for i in stale[:10])
        warnings.warn(
            f"{self.path}: entry {shown} was edited by hand (its stored request_hash no longer matches its "
            f"request); matching uses the request as it reads now. Save the cassette again to store the "
            f"new hash (llmvcr convert {self.path} --to llmvcr-yaml).",
            EditedCassetteWarning,
            stacklevel=3,
        )
        return True

    def _serve(self, name: str, request: Request, position: int, stored_hash: str) -> Decision:
        entry = self.cassette.entry(position)
        with self._lock:
            self.replayed += 1
            self.served.append(entry)
        return Decision(name, request, stored_hash, entry=entry, session=self)

    def _index(self) -> dict[str, list[int]]:
        fingerprinter = self.options.fingerprinter
        if fingerprinter.is_default and self._own_index is None:
            return self.cassette.index  # type: ignore[return-value]
        if self._own_index is None:
            index: dict[str, list[int]] = {}
            for i in range(len(self.cassette)):
                h = fingerprinter.request_hash(self.cassette.entry(i).request.normalised())
                index.setdefault(h, []).append(i)
            self._own_index = index
        return self._own_index

    def _claim_sequential(self) -> int | None:
        with self._lock:
            position = self.cassette.claim_next_unplayed(self._sequential_cursor)
            if position is not None:
                self._sequential_cursor = position + 1
            return position

    def nearest_diff(self, normalised: dict[str, Any]) -> tuple[list[DiffRow], Entry | None]:
        """The recorded request on the same endpoint with the fewest differing paths (on a miss only)."""
        best: tuple[int, list[DiffRow], Entry] | None = None
        live = self.options.fingerprinter.prepare(normalised)
        for i in range(len(self.cassette)):
            entry = self.cassette.entry(i)
            if entry.request.method != normalised["method"] or entry.request.path != normalised["path"]:
                continue
            recorded = self.options.fingerprinter.prepare(entry.request.normalised())
            rows = structural_diff(recorded, live)
            rows = [r for r in rows if not r[0].startswith("request.headers")] or rows
            if not rows:  # identical but already played
                rows = [
                    ("request", "(already played: each entry serves one call)", "(the same request again)")
                ]
            if best is None or len(rows) < best[0]:
                best = (len(rows), rows, entry)
        return (best[1], best[2]) if best else ([], None)

    def divergence_message(
        self, provider: str, request: Request, rows: list[DiffRow], nearest: Entry | None
    ) -> str:
        head = (
            f"llmvcr: no recorded entry in {self.path} answers {provider} {request.method} {request.path} "
            f"(record_mode={self.record_mode!r}, mode={self.options.mode!r})."
        )
        if nearest is None:
            body = (
                f"\nThe cassette holds no {request.method} {request.path} request "
                f"({len(self.cassette)} entries in all)."
            )
        else:
            body = "\nNearest recorded request differs at:\n" + format_rows(rows)
        hint = (
            f"\nTo re-record it: run again with record_mode='all', which rewrites {self.path} "
            f"(pytest: -k <test> --llmvcr-record-mode=all); 'new_episodes' appends instead and leaves "
            f"the stale entry unplayed. To tolerate volatile fields, see ignore= and match_on=."
        )
        return head + body + hint

    # -- recording ---------------------------------------------------------------------------------
    def stream_opened(self, finish: Callable[[], None]) -> None:
        """A live stream is being recorded: ``finish()`` (idempotent) records it as truncated at exit."""
        with self._lock:
            self._open_streams.append(finish)

    def record(self, decision: Decision, response: Response) -> Entry | None:
        """Redact ``response``, pass the entry to ``before_record``, append it and write it soon."""
        redactor = self.redactor
        response = Response(
            response.status,
            redactor.headers(response.headers.items(), RESPONSE_HEADERS),
            body=redactor.body(response.body),
            stream=redactor.events(response.stream) if response.stream is not None else None,
            truncated=response.truncated,
            failure=response.failure,
        )
        entry = Entry(decision.provider, decision.request, response, decision.request_hash)
        if self.options.before_record is not None:
            result = self.options.before_record(entry)
            if result is None:
                return None
            entry = result
        position = self.cassette.append(entry)
        self.cassette.mark_played(position)
        with self._lock:
            version = self._versions.get(entry.provider)
            if version:
                self.cassette.recorded_with[entry.provider] = version
            if self._own_index is not None:
                h = self.options.fingerprinter.request_hash(entry.request.normalised())
                self._own_index.setdefault(h, []).append(position)
            self.recorded += 1
            self._pending.append(entry)
            self._flush_soon()
        return entry

    def flush(self) -> None:
        """Write entries recorded but not yet on disk."""
        with self._lock:
            self._flush_locked()

    def _flush_locked(self) -> None:
        if self._flush_timer is not None:
            self._flush_timer.cancel()
            self._flush_timer = None
        if not self._pending or not (self.persist and self.path):
            self._pending.clear()
            return
        started = time.monotonic()
        if not self.cassette.recorded_with:
            self.cassette.recorded_with = recorded_with()
        if self._writer is None:
            self._writer = CassetteWriter(self.path, replace=self._replace_on_write)
        self._writer.append(self.cassette, self._pending)
        self._pending = []
        self.writes += 1
        now = time.monotonic()
        self._next_flush = now + 9 * (now - started)

    def _flush_soon(self) -> None:
        # Each new entry reaches disk at once unless writing is slow next to the calls: then the
        # time spent writing is held to about a tenth of the time spent recording, and a timer
        # writes what is waiting when no further call comes.
        if time.monotonic() >= self._next_flush:
            self._flush_locked()
        elif self._flush_timer is None:
            timer = threading.Timer(max(0.0, self._next_flush - time.monotonic()), self.flush)
            timer.daemon = True
            self._flush_timer = timer
            timer.start()
