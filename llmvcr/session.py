"""One activation of a cassette: what happens to each call, and what reaches the file.

``Session.decide`` is the whole policy for one request: redact it (every provider's requests
pass here, so no adapter can skip it), take an injected fault, match it, answer with a
:class:`Decision`. ``Decision.record`` is the way back: the live response is redacted, passed to
``before_record`` and written. The session installs nothing and knows no SDK; ``llmvcr.api``
opens it and ``llmvcr._active`` finds it.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

from . import faults, wire
from .cassette import Cassette, Entry, Request, Response
from .cassette.schema import recorded_with
from .errors import (
    CassetteNotFoundError,
    EditedCassetteWarning,
    ReplayDivergence,
    ReplayDivergenceWarning,
)
from .matching import default_request_hash, other_calls
from .matching.as_recorded import StaleCall, as_recorded, check_drift
from .matching.diff import divergence_message, nearest_diff
from .options import Options, settings
from .redaction import Redactor, compile_keep, compile_paths, compile_redactions
from .storage.files import check_cassette_path, load_cassette, refuse_foreign
from .storage.kept_timing import EarlierTimings
from .storage.shutdown import SigtermFlush, WriteLock
from .storage.write_queue import WriteQueue
from .storage.writer import save_cassette
from .wire.headers import RESPONSE_HEADERS


class Caller(Protocol):
    """What the session needs of the provider a call came through."""

    @property
    def name(self) -> str: ...

    def sdk_version(self) -> str | None: ...


@dataclass(slots=True, eq=False, repr=False)  # compared and shown as itself: one per call
class Decision:
    """One call's answer: serve ``entry``, raise ``fault``, or go live and :meth:`record` the reply."""

    provider: str
    request: Request  # as it is stored: redacted
    request_hash: str
    entry: Entry | None = None
    fault: faults.Fault | None = None
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


class Session:
    """One activation of a cassette: its options, its file and the calls made while it is open."""

    def __init__(
        self,
        path: str,
        options: Options,
        cassette: Cassette | None = None,
        *,
        persist: bool = True,
        record_mode: str | None = None,  # over every other setting: an expired cassette re-recorded
    ) -> None:
        self.path = path
        self.options = options
        self.record_mode = (
            record_mode or settings.record_mode or options.record_mode or settings.default_record_mode
        )
        self.persist = persist
        self.redactor = Redactor(
            patterns=compile_redactions(options.redact),
            filter_headers=frozenset(h.lower() for h in options.filter_headers),
            paths=compile_paths(options.redact),
            keep=compile_keep(options.redact_keep),
        )
        self.open = False
        self.replayed = 0
        self.served: list[Entry] = []  # the entries replay served, for the usage the run saved
        self.recorded = 0
        self._lock = WriteLock()
        self._live = False  # on_divergence="live" engaged: record from here on
        self._sequential_cursor = 0
        self._fresh_file = False
        self._replace_on_write = False
        self._own_index: dict[str, list[int]] | None = None
        self._versions_noted: set[str] = set()
        self._versions: dict[str, str] = {}  # provider -> SDK version, named in recorded_with once used
        self._open_streams: list[Callable[[], None]] = []  # finish a stream still being recorded
        self._sigterm: SigtermFlush | None = None
        self._rehashed = False
        self._earlier: EarlierTimings | None = None  # record_mode="all": the streams the file held
        self.unrecorded: dict[str, int] = {}  # host -> requests no provider claimed, let through
        self.calls = 0  # calls that reached decide(), whatever answered them
        self.wrote_nothing = False  # see other_calls.report_at_close
        self.quiet_when_empty = False
        self.cassette = cassette if cassette is not None else self._load()
        self.stale: list[StaleCall] = []  # calls served although their request drifted from the recording
        # a vcrpy-made cassette is matched as it was recorded (llmvcr.matching.as_recorded)
        self.recorded_match_on, self.fingerprinter = as_recorded(self.cassette, options)
        replace = self._replace_on_write
        self._queue = WriteQueue(path, self.cassette, self._lock, replace=replace, persist=persist)
        if options.seed is not None:  # a seed is written into the file: no key in it either
            self.cassette.seed = self.redactor.text(options.seed)

    def _load(self) -> Cassette:
        check_cassette_path(self.path)  # a folder or a symlink loop is an error, not "no file yet"
        if self.record_mode == "all":
            refuse_foreign(self.path)  # "all" rewrites without reading: never over a vcrpy file
            self._replace_on_write = True
            return Cassette(self.path, recorded_with=recorded_with(), layout=self.options.layout)
        if not os.path.exists(self.path):
            if self.record_mode == "none":
                raise CassetteNotFoundError(
                    f"{self.path}: no such cassette and record_mode='none' forbids recording; "
                    f"record it with record_mode='once' (or --llmvcr-record-mode=once)"
                )
            self._fresh_file = True
            return Cassette(self.path, recorded_with=recorded_with(), layout=self.options.layout)
        return load_cassette(self.path)

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> None:
        """Begin answering calls (``llmvcr.api`` installs interception and activates the session)."""
        self.open = True
        if self.can_record or self.options.on_divergence == "live":  # replay-only never has a write to save
            self._sigterm = SigtermFlush.install(self._lock, self._queue.close)

    def finish(self, failed: bool) -> None:
        """Stop answering: keep streams still being read, write what is pending, prune if asked."""
        self.open = False
        for finish in self._open_streams:  # a stream the caller left unread: keep what it received
            finish()
        self._open_streams.clear()
        try:
            self._queue.close()  # CassetteWriteError naming the file and the entries it could not write
        finally:
            if self._sigterm is not None:  # only now: a signal during the last write still waits for it
                self._sigterm.restore()
                self._sigterm = None
        self.wrote_nothing = other_calls.report_at_close(self, failed)  # calls it did not record
        if self.options.prune and self.cassette.unplayed and not failed and self.persist:
            self.cassette.drop_unplayed()
            save_cassette(self.path, self.cassette)
            self._queue.writes += 1

    # -- deciding ----------------------------------------------------------------------------------
    @property
    def can_record(self) -> bool:
        may_write = self.cassette.read_only is None  # a foreign file read in place: never written
        return may_write and (self._live or self._fresh_file or self.record_mode in ("new_episodes", "all"))

    def redact_request(self, request: Request) -> Request:
        """The request as it may be stored: credentials learned and dropped, secrets replaced.

        Headers first, so that a key learned from ``authorization`` is scrubbed from the body too.
        """
        redactor = self.redactor
        headers = redactor.headers(request.headers.items(), frozenset(request.headers))
        query = redactor.query(request.query) if request.query else ()
        path = redactor.text(request.path)
        where = f"{self.path}: call {len(self.cassette) + 1} ({request.method} {path}), the request body"
        return Request(request.method, path, redactor.body(request.body, where=where), query, headers)

    def decide(self, provider: Caller, request: Request) -> Decision:
        """Redact ``request``, then: a fault due on this call, the recorded entry, or live.

        Raises ``ReplayDivergence`` when nothing answers and the cassette may not record.
        """
        __tracebackhide__ = True  # pytest shows the user's frame and the message
        self.calls += 1
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
        fingerprinter = self.fingerprinter
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
            if position is None:
                position = self._claim_as_asked(name, request)
        if position is not None:
            stale = check_drift(self, position, normalised, stored_hash, request)  # or raises
            if stale is not None:
                self.stale.append(stale)  # one list append: atomic across threads
            return self._serve(name, request, position, stored_hash)
        if self.can_record:
            return live
        if self.options.on_divergence == "live" and self.cassette.read_only is None:
            self._live = True
            return live
        rows, nearest = nearest_diff(self.cassette.entries, normalised, self.fingerprinter.prepare)
        message = divergence_message(
            self.path, name, request, rows, nearest, self.record_mode, self.options.mode, self.cassette
        )
        if self.options.on_divergence == "warn":
            position = self._claim_sequential()
            if position is not None:
                warnings.warn(
                    message + "\nServing the next unused entry instead.",
                    ReplayDivergenceWarning,
                    stacklevel=2,
                )
                return self._serve(name, request, position, stored_hash)
        raise ReplayDivergence(message, cassette_path=self.path, diff=rows, request=request, nearest=nearest)

    def unclaimed(self, method: str, url: str, host: str, *, can_serve: bool = False) -> Entry | None:
        """A request no provider claims: answered from the file when it recorded it (a foreign
        cassette's non-LLM call), else refused in a replay-only session, else counted for the warning."""
        __tracebackhide__ = True
        recorded = other_calls.answer(self, method, url, host, can_serve=can_serve)  # or raises
        if recorded is None and not other_calls.allowed(self.options.allow_unrecognized, host):
            with self._lock:
                self.unrecorded[host] = self.unrecorded.get(host, 0) + 1
        return recorded

    def _note_version(self, provider: Caller) -> None:
        self._versions_noted.add(provider.name)
        version = provider.sdk_version()
        if version:
            self._versions[provider.name] = version

    def _rehash_edited(self) -> bool:
        """On a miss, once: entries whose stored ``request_hash`` no longer fits their request (a
        hand-edited cassette) are indexed by what the request says now, with a warning naming the file."""
        if self._rehashed or not self.fingerprinter.is_default:
            return False
        self._rehashed = True
        stale = [
            i
            for i in range(self.cassette.loaded_count)
            if not self.cassette.entry(i).hashed_as_sent
            and self.cassette.entry(i).request_hash
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
            f"request); matching uses the request as it reads now. Store the new hash with: "
            f"llmvcr rehash {self.path}",
            EditedCassetteWarning,
            stacklevel=3,
        )
        return True

    def _claim_as_asked(self, name: str, request: Request) -> int | None:
        """A streamed call answered by an ``as_asked`` entry, stored as the plain call (its source,
        a trace, never said whether the call streamed)."""
        fmt = wire.lookup(name)
        if fmt is None or not fmt.asks_stream(request):
            return None
        plain = fmt.plain_request(request).normalised()
        fingerprinter = self.fingerprinter
        key = default_request_hash(plain) if fingerprinter.is_default else fingerprinter.request_hash(plain)
        with self._lock:
            candidates = [i for i in self._index().get(key, []) if self.cassette.entry(i).response.as_asked]
        return self.cassette.claim(candidates, allow_repeats=self.options.allow_playback_repeats)

    def _serve(self, name: str, request: Request, position: int, stored_hash: str) -> Decision:
        """The decision serving entry ``position`` to ``request``, once its answer is checked to fit."""
        entry = self.cassette.entry(position)
        where = (
            f"{self.path or 'cassette'}: entry {position} ({entry.provider} {request.method} {request.path})"
        )
        response = wire.answer_for(where, entry.provider or name, request, entry.response)
        if response is not entry.response:
            entry = Entry(entry.provider, entry.request, response, entry.request_hash)
        with self._lock:
            self.replayed += 1
            self.served.append(entry)
        return Decision(name, request, stored_hash, entry=entry, session=self)

    def _index(self) -> dict[str, list[int]]:
        fingerprinter = self.fingerprinter
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
            redactor.headers(response.headers.items(), RESPONSE_HEADERS, by_name=False),
            body=redactor.body(response.body, f"{self.path}: call {len(self.cassette) + 1}, the response"),
            stream=redactor.events(response.stream) if response.stream is not None else None,
            truncated=response.truncated,
            failure=response.failure,
        )
        entry = Entry(decision.provider, decision.request, response, decision.request_hash)
        if self._replace_on_write:  # an unchanged stream keeps its offsets: no timing noise in a PR diff
            if self._earlier is None:
                self._earlier = EarlierTimings.of_file(self.path)
            entry = self._earlier.keep(entry)
        if self.options.before_record is not None:
            result = self.options.before_record(entry)
            if result is None:
                return None
            if result.request != entry.request:  # replay still finds it by the request as sent
                result = replace(result, request_hash=decision.request_hash, hashed_as_sent=True)
            entry = result
        position = self.cassette.append(entry)
        self.cassette.mark_played(position)
        with self._lock:
            version = self._versions.get(entry.provider)
            if version:
                self.cassette.recorded_with[entry.provider] = version
            if self._own_index is not None:
                h = self.fingerprinter.request_hash(entry.request.normalised())
                self._own_index.setdefault(h, []).append(position)
            self.recorded += 1
            self._queue.add(entry)
        return entry

    @property
    def writes(self) -> int:
        """How many times this session wrote its file."""
        return self._queue.writes

    def flush(self) -> None:
        """Write entries recorded but not yet on disk; ``CassetteWriteError`` naming the file if it cannot."""
        with self._lock:
            self._queue.write()
