"""One activation of a cassette: what happens to each call, and what reaches the file.

``Session.decide`` is the whole policy for one request: redact it (every provider's requests
pass here, so no adapter can skip it), take an injected fault, match it, answer with a
:class:`Decision`. ``Decision.record`` is the way back: the live response is redacted, passed to
``before_record`` and written. It installs nothing and knows no SDK; ``llmvcr.lifecycle`` opens it.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

from . import faults, wire
from .cassette import Cassette, Entry, Request, Response, Served
from .errors import ReplayDivergenceWarning
from .matching import other_calls
from .matching.as_recorded import StaleCall, as_recorded, check_drift
from .matching.claims import Claims
from .matching.diff import divergence
from .matching.rules import default_request_hash
from .options import Options, settings
from .redaction import Redactor
from .storage.cassette_file import CassetteFile


def effective_record_mode(options: Options, record_mode: str | None = None) -> str:
    """The record mode a session opens with: ``record_mode``, else the run's, the options', the default."""
    return record_mode or settings.record_mode or options.record_mode or settings.default_record_mode


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
        self.record_mode = effective_record_mode(options, record_mode)
        self.persist = persist
        self.redactor = Redactor.configured(options.redact, options.filter_headers, options.redact_keep)
        self.open = False
        self.calls = 0  # calls that reached decide(), whatever answered them
        self.replayed = 0
        self.recorded = 0
        self.served = Served()  # the entries replay served, counted, for the usage the run saved
        self.stale: list[StaleCall] = []  # calls served although their request drifted from the recording
        self.wrote_nothing = False  # see other_calls.report_at_close
        self.quiet_when_empty = False
        self._lock = threading.Lock()  # the session's own counters and index; the file has its own
        self._live = False  # on_divergence="live" engaged: record from here on
        self._callers: dict[str, Caller] = {}  # provider name -> the provider its calls came through
        self._versions: dict[str, str | None] = {}  # provider name -> SDK version, once it recorded
        self._open_streams: list[Callable[[], None]] = []  # finish a stream still being recorded
        self.file = CassetteFile(path, self.record_mode, options.layout, cassette, persist=persist)
        self.cassette = self.file.cassette
        # a vcrpy-made cassette is matched as it was recorded (llmvcr.matching.as_recorded)
        self.recorded_match_on, self.fingerprinter = as_recorded(
            self.cassette,
            options.fingerprinter,
            chosen=options.matching_chosen,
            configured=options.recorded_match_on,
        )
        self.claims = Claims(self.cassette, self.fingerprinter, allow_repeats=options.allow_playback_repeats)
        self._unclaimed = other_calls.Unclaimed(
            self.cassette, options.allow_unrecognized, options.allow_playback_repeats
        )
        self.unrecorded = self._unclaimed.counted  # host -> requests no provider claimed, let through
        if options.seed is not None:  # a seed is written into the file: no key in it either
            self.cassette.seed = self.redactor.text(options.seed)

    def start(self) -> None:
        """Begin answering calls (``llmvcr.api`` installs interception and activates the session)."""
        self.open = True
        self.file.start(may_write=self.can_record or self.options.on_divergence == "live")

    def finish(self, failed: bool) -> None:
        """Stop answering: keep streams still being read, write what is pending, prune if asked."""
        self.open = False
        for finish in self._open_streams:  # a stream the caller left unread: keep what it received
            finish()
        self._open_streams.clear()
        self.file.close()  # CassetteWriteError naming the file and the entries it could not write
        self.wrote_nothing = other_calls.report_at_close(  # calls it did not record
            self.path,
            self.unrecorded,
            answered=self.recorded + self.replayed,
            calls=self.calls,
            keeps_file=self.persist,
            quiet=self.quiet_when_empty,
            failed=failed,
        )
        if self.options.prune and self.cassette.unplayed and not failed and self.persist:
            self.file.prune()

    @property
    def can_record(self) -> bool:
        may_write = self.cassette.read_only is None  # a foreign file read in place: never written
        return may_write and (self._live or self.file.fresh or self.record_mode in ("new_episodes", "all"))

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
        if name not in self._callers:
            self._callers[name] = provider
        fault = faults.take(name)
        if fault is not None:
            if fault.kind in ("timeout", "connection"):
                return Decision(name, request, "", fault=fault, session=self)
            return Decision(
                name, request, "", entry=Entry(name, request, fault.response(name), ""), session=self
            )
        live = Decision(name, request, stored_hash, session=self)
        if self.record_mode == "all" or self._live:
            return live
        mode = self.options.mode
        if mode == "sequential":
            position = self.claims.next_unused()
        else:
            position = self.claims.by_hash(self.claims.key(normalised, stored_hash), stacklevel=2)
            if position is None:
                position = self._claim_as_asked(name, request)
        if position is not None:
            if self.recorded_match_on is not None and mode == "strict":  # a vcrpy cassette: its drift
                stale = check_drift(
                    self.cassette.entry(position),
                    position,
                    normalised,
                    stored_hash,
                    request,
                    match_on=self.recorded_match_on,
                    on_stale=self.options.on_stale,
                    path=self.path,
                    read_only=self.cassette.read_only,
                )  # or raises
                if stale is not None:
                    self.stale.append(stale)  # one list append: atomic across threads
            return self._serve(name, request, position, stored_hash)
        if self.can_record:
            return live
        if self.options.on_divergence == "live" and self.cassette.read_only is None:
            self._live = True
            return live
        cassette, prepare = self.cassette, self.fingerprinter.prepare
        error = divergence(self.path, name, request, normalised, cassette, prepare, self.record_mode, mode)
        if self.options.on_divergence == "warn" and (position := self.claims.next_unused()) is not None:
            message = f"{error}\nServing the next unused entry instead."
            warnings.warn(message, ReplayDivergenceWarning, stacklevel=2)
            return self._serve(name, request, position, stored_hash)
        raise error

    def unclaimed(self, method: str, url: str, host: str, *, can_serve: bool = False) -> Entry | None:
        """A request no provider claims: answered from the file when it recorded it (a foreign
        cassette's non-LLM call), else refused in a replay-only session, else counted for the warning."""
        __tracebackhide__ = True
        may_go_out = self.can_record or self.options.on_divergence == "live"
        return self._unclaimed.answer(  # or raises
            method, url, host, can_serve=can_serve, may_go_out=may_go_out, record_mode=self.record_mode
        )

    def _claim_as_asked(self, name: str, request: Request) -> int | None:
        """A streamed call answered by an ``as_asked`` entry, stored as the plain call (its source,
        a trace, never said whether the call streamed)."""
        fmt = wire.lookup(name)
        if fmt is None or not fmt.asks_stream(request):
            return None
        plain = fmt.plain_request(request).normalised()
        return self.claims.where(
            self.claims.key(plain, default_request_hash(plain)), lambda e: e.response.as_asked
        )

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
            self.served.add(position, entry)
        return Decision(name, request, stored_hash, entry=entry, session=self)

    def stream_opened(self, finish: Callable[[], None]) -> None:
        """A live stream is being recorded: ``finish()`` (idempotent) records it as truncated at exit."""
        with self._lock:
            self._open_streams.append(finish)

    def record(self, decision: Decision, response: Response) -> Entry | None:
        """Redact ``response``, pass the entry to ``before_record``, append it and write it soon."""
        where = f"{self.path}: call {len(self.cassette) + 1}, the response"
        response = self.redactor.response(response, where)
        entry = Entry(decision.provider, decision.request, response, decision.request_hash)
        entry = self.file.keep_timing(entry)  # an unchanged stream keeps its offsets: no noise in a PR diff
        if self.options.before_record is not None:
            result = self.options.before_record(entry)
            if result is None:
                return None
            if result.request != entry.request:  # replay still finds it by the request as sent
                result = replace(result, request_hash=decision.request_hash, hashed_as_sent=True)
            entry = result
        position = self.cassette.append(entry)
        self.cassette.mark_played(position)
        version = self._version(entry.provider)
        with self._lock:
            if version:
                self.cassette.recorded_with[entry.provider] = version
            self.recorded += 1
        self.claims.recorded(entry, position)
        self.file.add(entry)
        return entry

    def _version(self, provider: str) -> str | None:
        """The SDK version a call of ``provider`` came through: asked once, and only when it records."""
        if provider not in self._versions:
            caller = self._callers.get(provider)
            self._versions[provider] = caller.sdk_version() if caller is not None else None
        return self._versions[provider]

    @property
    def writes(self) -> int:
        """How many times this session wrote its file."""
        return self.file.writes

    def flush(self) -> None:
        """Write entries recorded but not yet on disk; ``CassetteWriteError`` naming the file if it cannot."""
        self.file.flush()
