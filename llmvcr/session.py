"""Record modes, match modes and the divergence policy: what happens to each live request.

A ``Session`` is one activation of a cassette. It is found through a context variable, so a
cassette is scoped to the thread or asyncio task that opened it; a call made from a thread
that has no cassette of its own uses the only active one, if exactly one is active.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import os
import platform
import re
import signal
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from .cassette import Cassette, Entry, Request, Response
from .diff import DiffRow, format_rows, structural_diff
from .errors import CassetteNotFoundError, ReplayDivergence, ReplayDivergenceWarning
from .matching import DEFAULT_MATCH_ON, Fingerprinter, MatcherSpec, Placeholder, default_request_hash
from .redact import Redactor, compile_paths, compile_redactions
from .storage import LLMVCR_VERSION, CassetteWriter, load_cassette

RECORD_MODES = ("once", "new_episodes", "none", "all")
MATCH_MODES = ("strict", "sequential", "loose")
DIVERGENCE_POLICIES = ("raise", "warn", "live")

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(slots=True)
class _Config:
    cassette_dir: str = "cassettes"
    record_mode: str | None = None  # a process-wide override (the pytest flag)


_config = _Config()


def configure(*, cassette_dir: str | os.PathLike[str] | None = None, record_mode: str | None = None) -> None:
    """Process-wide defaults: where bare cassette names live, and a record mode that overrides all."""
    if cassette_dir is not None:
        _config.cassette_dir = os.fspath(cassette_dir)
    if record_mode is not None:
        _check("record_mode", record_mode, RECORD_MODES)
        _config.record_mode = record_mode


def resolve_path(name_or_path: str | os.PathLike[str]) -> str:
    """A path when it has a separator or a cassette extension; otherwise ``<cassette_dir>/<name>.yaml``."""
    text = os.fspath(name_or_path)
    if os.sep in text or "/" in text or text.lower().endswith((".yaml", ".yml", ".json")):
        return text
    return os.path.join(_config.cassette_dir, text + ".yaml")


def _check(option: str, value: Any, valid: Iterable[str]) -> None:
    valid = tuple(valid)
    if value not in valid:
        raise ValueError(f"unknown {option} {value!r}; valid: {', '.join(valid)}")


@dataclass(frozen=True, slots=True)
class Options:
    """Everything ``use_cassette`` and ``recording`` accept, checked when built."""

    record_mode: str = "once"
    mode: str = "strict"
    match_on: tuple[MatcherSpec, ...] = DEFAULT_MATCH_ON
    ignore: tuple[str, ...] = ()
    placeholders: tuple[Placeholder, ...] | None = None
    on_divergence: str = "raise"
    seed: str | None = None
    allow_playback_repeats: bool = False
    before_record: Callable[[Entry], Entry | None] | None = None
    filter_headers: tuple[str, ...] = ()
    redact: tuple[str | re.Pattern[str], ...] = ()
    replay_speed: float | None = None
    prune: bool = False
    fingerprinter: Fingerprinter = field(default_factory=Fingerprinter)

    @classmethod
    def build(cls, **options: Any) -> Options:
        known = set(cls.__dataclass_fields__) - {"fingerprinter"}
        unknown = sorted(set(options) - known)
        if unknown:
            raise ValueError(
                f"unknown option(s) {', '.join(map(repr, unknown))}; valid: {', '.join(sorted(known))}"
            )
        if "match_on" in options:
            match_on = options["match_on"]
            options["match_on"] = (
                (match_on,) if isinstance(match_on, str) or callable(match_on) else tuple(match_on)
            )
        for key in ("ignore", "filter_headers", "redact"):
            if key in options:
                value = options[key]
                options[key] = (value,) if isinstance(value, (str, re.Pattern)) else tuple(value)
        if options.get("placeholders") is not None:
            options["placeholders"] = tuple(options["placeholders"])
        built = cls(**options)
        _check("record_mode", built.record_mode, RECORD_MODES)
        _check("mode", built.mode, MATCH_MODES)
        _check("on_divergence", built.on_divergence, DIVERGENCE_POLICIES)
        if built.before_record is not None and not callable(built.before_record):
            raise ValueError(
                "before_record must be a callable taking an Entry and returning an Entry or None"
            )
        if built.replay_speed is not None and not built.replay_speed > 0:
            raise ValueError(
                f"replay_speed must be a positive number (1.0 = recorded pacing), not {built.replay_speed!r}"
            )
        match_on = ("last_user_message",) if built.mode == "loose" else built.match_on
        fingerprinter = Fingerprinter(match_on, built.ignore, built.placeholders)
        compile_redactions(built.redact)
        compile_paths(built.redact)
        return replace(built, fingerprinter=fingerprinter)


# -- the active sessions --------------------------------------------------------------------
_current: contextvars.ContextVar[Session | None] = contextvars.ContextVar("llmvcr_session", default=None)
_active: list[Session] = []
_active_lock = threading.Lock()
_listeners: list[Callable[[Session, str], None]] = []  # (session, "enter"|"exit"): the pytest summary


# SDK clients given to create_recording_adapter / create_replay_adapter, each with its own session.
_bound: weakref.WeakKeyDictionary[Any, Session] = weakref.WeakKeyDictionary()


def bind(client: Any, session: Session) -> None:
    """Route every call of ``client`` (this instance only) to ``session``, whatever cassette is open."""
    with _active_lock:
        _bound[client] = session


def bound_session(client: Any) -> Session | None:
    try:
        return _bound.get(client)
    except TypeError:  # an SDK client that cannot be weakly referenced was never bound
        return None


def current_session() -> Session | None:
    session = _current.get()
    if session is not None and session.open:
        return session
    with _active_lock:
        return _active[0] if len(_active) == 1 else None


def recorded_with() -> dict[str, str]:
    """The versions every new cassette names; each SDK's is added when a call through it is recorded."""
    return {"llmvcr": LLMVCR_VERSION, "python": platform.python_version()}


def _sdk_version(provider_name: str) -> str | None:
    from .providers import registered

    for provider in registered():
        if provider.name == provider_name:
            return provider.sdk_version()
    return None


@dataclass(slots=True)
class Decision:
    """What to do with a live request: serve ``entry``, or go to the network and record."""

    entry: Entry | None
    record: bool
    request_hash: str


class Session:
    """One activation of a cassette: its options, its file and the calls made while it is open."""

    def __init__(
        self, path: str, options: Options, cassette: Cassette | None = None, *, persist: bool = True
    ) -> None:
        self.path = path
        self.options = options
        self.record_mode = _config.record_mode or options.record_mode
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
        self._token: contextvars.Token[Session | None] | None = None
        self._lock = threading.Lock()
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
        self._open_streams: list[Callable[[], None]] = []  # finish a stream still being recorded
        self._previous_sigterm: Any = None
        self.cassette = cassette if cassette is not None else self._load()
        if options.seed is not None:
            self.cassette.seed = options.seed

    def _load(self) -> Cassette:
        exists = os.path.exists(self.path)
        if self.record_mode == "all":
            self._replace_on_write = True
            return Cassette(self.path, recorded_with=recorded_with())
        if not exists:
            if self.record_mode == "none":
                raise CassetteNotFoundError(
                    f"{self.path}: no such cassette and record_mode='none' forbids recording; "
                    f"record it with record_mode='once' (or --llmvcr-record-mode=once)"
                )
            self._fresh_file = True
            return Cassette(self.path, recorded_with=recorded_with())
        return load_cassette(self.path)

    # -- lifecycle -------------------------------------------------------------------------------
    def __enter__(self) -> Cassette:
        from .providers import install

        install()
        self.open = True
        self._token = _current.set(self)
        with _active_lock:
            _active.append(self)
        for listener in _listeners:
            listener(self, "enter")
        self._catch_sigterm()
        return self.cassette

    def _catch_sigterm(self) -> None:
        """While recording, SIGTERM first writes what was recorded, then does what it would have done."""
        if threading.current_thread() is not threading.main_thread():
            return
        previous = signal.getsignal(signal.SIGTERM)
        if previous is not signal.SIG_DFL:
            return

        def on_sigterm(signum: int, frame: Any) -> None:
            self.flush()
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)

        signal.signal(signal.SIGTERM, on_sigterm)
        self._previous_sigterm = previous

    def _restore_sigterm(self) -> None:
        if self._previous_sigterm is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self._previous_sigterm)
            self._previous_sigterm = None

    def __exit__(self, *exc: Any) -> None:
        from .providers import uninstall

        self.open = False
        self._restore_sigterm()
        for finish in self._open_streams:  # a stream the caller left unread: keep what it received
            finish()
        self._open_streams.clear()
        self.flush()
        if self._token is not None:
            try:
                _current.reset(self._token)
            except ValueError:  # exited from another context (a task that outlived its opener)
                _current.set(None)
            self._token = None
        with _active_lock:
            if self in _active:
                _active.remove(self)
        uninstall()
        if self.options.prune and self.cassette.unplayed and exc[0] is None and self.persist:
            self.cassette.drop_unplayed()
            from .storage import save_cassette

            save_cassette(self.path, self.cassette)
            self.writes += 1
        for listener in _listeners:
            listener(self, "exit")

    # -- deciding ----------------------------------------------------------------------------------
    @property
    def can_record(self) -> bool:
        return self._live or self._fresh_file or self.record_mode in ("new_episodes", "all")

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

    def _index(self) -> dict[str, list[int]]:
        fingerprinter = self.options.fingerprinter
        if fingerprinter.is_default:
            return self.cassette.index  # type: ignore[return-value]
        if self._own_index is None:
            index: dict[str, list[int]] = {}
            for i in range(len(self.cassette)):
                h = fingerprinter.request_hash(self.cassette.entry(i).request.normalised())
                index.setdefault(h, []).append(i)
            self._own_index = index
        return self._own_index

    def decide(self, provider: str, request: Request) -> Decision:
        normalised = request.normalised()
        stored_hash = default_request_hash(normalised)
        fingerprinter = self.options.fingerprinter
        key = stored_hash if fingerprinter.is_default else fingerprinter.request_hash(normalised)
        if self.record_mode == "all" or self._live:
            return Decision(None, True, stored_hash)
        position: int | None
        if self.options.mode == "sequential":
            position = self._claim_sequential()
        else:
            with self._lock:
                candidates = self._index().get(key, [])
            position = self.cassette.claim(candidates, allow_repeats=self.options.allow_playback_repeats)
        if position is not None:
            return self._serve(position, stored_hash)
        if self.can_record:
            return Decision(None, True, stored_hash)
        rows, nearest = self.nearest_diff(normalised)
        if self.options.on_divergence == "live":
            self._live = True
            return Decision(None, True, stored_hash)
        message = self.divergence_message(provider, request, rows, nearest)
        if self.options.on_divergence == "warn":
            position = self._claim_sequential()
            if position is not None:
                warnings.warn(
                    message + "\nServing the next unused entry instead.",
                    ReplayDivergenceWarning,
                    stacklevel=2,
                )
                return self._serve(position, stored_hash)
        raise ReplayDivergence(message, cassette_path=self.path, diff=rows, request=request)

    def _serve(self, position: int, stored_hash: str) -> Decision:
        entry = self.cassette.entry(position)
        with self._lock:
            self.replayed += 1
            self.served.append(entry)
        return Decision(entry, False, stored_hash)

    def _claim_sequential(self) -> int | None:
        with self._lock:
            position = self.cassette.claim_next_unplayed(self._sequential_cursor)
            if position is not None:
                self._sequential_cursor = position + 1
            return position

    def nearest_diff(self, normalised: dict[str, Any]) -> tuple[list[DiffRow], Entry | None]:
        """The recorded request on the same endpoint with the fewest differing paths (computed on a miss only)."""
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
            body = f"\nThe cassette holds no {request.method} {request.path} request ({len(self.cassette)} entries in all)."
        else:
            body = "\nNearest recorded request differs at:\n" + format_rows(rows)
        hint = (
            f"\nTo re-record: delete {self.path} and run again, or use record_mode='new_episodes' to append "
            f"(pytest: --llmvcr-record-mode=new_episodes); to tolerate volatile fields, see ignore= and match_on=."
        )
        return head + body + hint

    # -- recording ---------------------------------------------------------------------------------
    def stream_opened(self, finish: Callable[[], None]) -> None:
        """A live stream is being recorded: ``finish()`` (idempotent) records it as truncated at exit."""
        with self._lock:
            self._open_streams.append(finish)

    def record(self, provider: str, request: Request, response: Response, request_hash: str) -> Entry | None:
        entry = Entry(provider, request, response, request_hash)
        if self.options.before_record is not None:
            result = self.options.before_record(entry)
            if result is None:
                return None
            entry = result
        position = self.cassette.append(entry)
        self.cassette.mark_played(position)
        with self._lock:
            if provider not in self._versions_noted:  # the SDK versions this recording was made with
                self._versions_noted.add(provider)
                version = _sdk_version(provider)
                if version:
                    self.cassette.recorded_with[provider] = version
            if self._own_index is not None:
                h = self.options.fingerprinter.request_hash(entry.request.normalised())
                self._own_index.setdefault(h, []).append(position)
            self.recorded += 1
            self._pending.append(entry)
            self._flush_soon()
        return entry


class CassetteContext:
    """What ``use_cassette`` and ``recording`` return: a context manager and a decorator.

    >>> @llmvcr.use_cassette("bug-427")
    ... def test_summary(): ...
    >>> with llmvcr.recording("bug-427", seed="bug-repro-#427") as cassette: ...
    """

    def __init__(self, name_or_path: str | os.PathLike[str], options: Options) -> None:
        self._name = name_or_path
        self.options = options
        self._sessions: list[Session] = []

    @property
    def path(self) -> str:
        return resolve_path(self._name)

    def session(self) -> Session:
        return Session(self.path, self.options)

    def __enter__(self) -> Cassette:
        session = self.session()
        self._sessions.append(session)
        return session.__enter__()

    def __exit__(self, *exc: Any) -> None:
        self._sessions.pop().__exit__(*exc)

    async def __aenter__(self) -> Cassette:
        return self.__enter__()

    async def __aexit__(self, *exc: Any) -> None:
        self.__exit__(*exc)

    def __call__(self, fn: F) -> F:
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                with self.session():
                    return await fn(*args, **kwargs)

            return async_wrapper  # type: ignore[return-value]

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.session():
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


def use_cassette(name_or_path: str | os.PathLike[str], **options: Any) -> CassetteContext:
    """Record or replay every LLM call made inside; a decorator (sync or async) or a context manager.

    ``name_or_path`` is a file path (``tests/cassettes/x.json``) or a bare name under the cassette
    directory (``"bug-427"`` -> ``cassettes/bug-427.yaml``). Options: ``record_mode``, ``mode``,
    ``match_on``, ``ignore``, ``placeholders``, ``on_divergence``, ``seed``,
    ``allow_playback_repeats``, ``before_record``, ``filter_headers``, ``redact``,
    ``replay_speed``, ``prune``. Bad options raise ``ValueError`` here, not at the first call.
    """
    return CassetteContext(name_or_path, Options.build(**options))


def recording(name_or_path: str | os.PathLike[str], **options: Any) -> CassetteContext:
    """The context-manager form of :func:`use_cassette`; ``with ... as cassette`` yields the ``Cassette``."""
    return use_cassette(name_or_path, **options)
