"""Which session answers a call: the one bound to the calling client, else the caller's own.

A cassette is scoped to the thread or asyncio task that opened it (a context variable), and to
threads run in a copy of that context (``contextvars.copy_context().run``); a call from a thread
with no cassette of its own uses the only open one, if exactly one is open. A client given to
``create_recording_adapter``/``create_replay_adapter`` is bound to its own session, whatever else
is open. A call that no session answers is refused while a replay-only cassette is open (it may
be that cassette's, and must not reach the network unrecorded); otherwise it meets the outside
policy (the pytest plugin's network guard), if one is set.
"""

from __future__ import annotations

import contextvars
import threading
import weakref
from collections.abc import Callable
from typing import Any

from .errors import LLMVCRError, NetworkBlockedError
from .session import Session

Listener = Callable[[Session, str], None]  # (session, "enter" | "exit")
# (provider name, "METHOD url" of the call, host or None) -> the error to raise, or None to let it through
OutsidePolicy = Callable[[str, str, "str | None"], "LLMVCRError | None"]

_current: contextvars.ContextVar[Session | None] = contextvars.ContextVar("llmvcr_session", default=None)
_open: list[Session] = []
_bound: weakref.WeakKeyDictionary[Any, Session] = weakref.WeakKeyDictionary()
_lock = threading.Lock()
_listeners: list[Listener] = []
_outside: list[OutsidePolicy] = []


def activate(session: Session) -> contextvars.Token[Session | None]:
    """Make ``session`` the one this thread or task's calls go to; tell the listeners."""
    token = _current.set(session)
    with _lock:
        _open.append(session)
    for listener in _listeners:
        listener(session, "enter")
    return token


def deactivate(session: Session, token: contextvars.Token[Session | None] | None) -> None:
    if token is not None:
        try:
            _current.reset(token)
        except ValueError:  # exited from another context (a task that outlived its opener)
            _current.set(None)
    with _lock:
        if session in _open:
            _open.remove(session)


def announce_exit(session: Session) -> None:
    """Tell the listeners a session ended (after its last write)."""
    for listener in _listeners:
        listener(session, "exit")


def bind(client: Any, session: Session) -> None:
    """Route every call of ``client`` (this instance only) to ``session``, whatever cassette is open."""
    try:
        weakref.ref(client)
    except TypeError:
        raise ValueError(f"{type(client).__name__} cannot be adapted: pass an SDK client instance") from None
    with _lock:
        _bound[client] = session


def bound_clients() -> bool:
    """Whether any client is bound to a session of its own (an explicit adapter is alive)."""
    return bool(_bound)


def current_session() -> Session | None:
    """The session of this thread or task, else the only open one."""
    session = _current.get()
    if session is not None and session.open:
        return session
    with _lock:
        return _open[0] if len(_open) == 1 else None


def session_for(client: Any) -> Session | None:
    """The session that answers a call made by ``client`` (None: the SDK's own call, untouched)."""
    if client is not None and _bound:
        try:
            bound = _bound.get(client)
        except TypeError:  # a client that cannot be weakly referenced was never bound
            bound = None
        if bound is not None:
            return bound
    return current_session()


def watching() -> bool:
    """Whether any call may need llmvcr: a session is open, a client is bound, or a policy is set."""
    return bool(_open or _bound or _outside or _current.get() is not None)


def add_listener(listener: Listener) -> None:
    """Call ``listener(session, "enter"|"exit")`` as each session starts and ends (summaries, play logs)."""
    _listeners.append(listener)


def remove_listener(listener: Listener) -> None:
    if listener in _listeners:
        _listeners.remove(listener)


def set_outside_policy(policy: OutsidePolicy | None) -> None:
    """Judge LLM calls made outside every session (the network guard); None removes it."""
    _outside.clear()
    if policy is not None:
        _outside.append(policy)


def outside_call(provider: str, call: str, host: str | None) -> LLMVCRError | None:
    """The error for a call no session answers: refused beside a replay-only cassette, else the
    outside policy's verdict (None lets it through)."""
    with _lock:
        open_now = list(_open)
    replay_only = [s for s in open_now if s.record_mode == "none" and s.options.on_divergence != "live"]
    if replay_only:
        return _orphan_error(provider, call, open_now, replay_only[0])
    return _outside[0](provider, call, host) if _outside else None


def _orphan_error(provider: str, call: str, open_now: list[Session], replay_only: Session) -> LLMVCRError:
    names = ", ".join(s.path for s in open_now)
    return NetworkBlockedError(
        f"llmvcr: the {provider} call {call} from thread {threading.current_thread().name!r} belongs to no "
        f"cassette: {len(open_now)} are open ({names}) and this thread opened none. {replay_only.path} "
        f"replays only (record_mode='none'), so the call may not reach the network unrecorded. Run the "
        f"worker in the context of the thread that opened the cassette: "
        f"ctx = contextvars.copy_context(); executor.submit(ctx.run, fn, *args) (one copy per task)"
    )
