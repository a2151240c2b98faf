"""The provider contract, the registry, ``decide()`` (the one call an adapter makes), and the SDK funnel.

An adapter translates at the edge: it turns its SDK's call into a :class:`~llmvcr.cassette.Request`,
asks :func:`decide`, and acts on the :class:`~llmvcr.session.Decision`::

    decision = decide(provider, request, client)
    if decision.fault is not None:          # an injected timeout or dropped connection
        raise MySDKTimeout(decision.fault.message)
    if decision.entry is not None:          # replay: hand the recorded response to the SDK
        return rebuild(decision.entry.response)
    response = call_the_real_thing()         # live
    decision.record(to_response(response))  # kept if the cassette records; redacted by the session
    return response

Redaction, faults, matching, divergence errors and writing all happen behind ``decide`` and
``record``; an adapter cannot skip them.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import importlib
import importlib.metadata
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, NamedTuple, Protocol, runtime_checkable

import wrapt

from .. import _active
from ..cassette import Entry, Request
from ..errors import LLMVCRError
from ..session import Decision


@runtime_checkable
class Provider(Protocol):
    """What every adapter offers; like an HTTP transport, it has one job and a small surface.

    ``name`` is stored in each entry it records. ``sdk_version()`` names the installed SDK in
    ``recorded_with`` (None when it is not installed). ``install()`` puts the interception in
    place when the first cassette of the process opens; it must be idempotent, and must not
    import an SDK that is not imported yet (it is called again as cassettes open, and after a
    late import). ``uninstall()`` runs when the last cassette closes and must leave the SDK
    exactly as it was, other libraries' wrappers included (use ``providers._patch.Patch``).

    Between the two, for each call: build the request (raw: the session redacts it), call
    :func:`decide`, then serve ``decision.entry.response``, raise for ``decision.fault``, or
    make the call live and give the outcome to ``decision.record``.
    """

    name: str

    def sdk_version(self) -> str | None:
        """The installed SDK's version for ``recorded_with``, or None when it is not installed."""

    def install(self) -> None:
        """Intercept the SDK's calls from now on (idempotent; no-op while the SDK is not imported)."""

    def uninstall(self) -> None:
        """Remove exactly the interception ``install`` added."""


@functools.cache
def package_version(distribution: str) -> str | None:
    """The installed version of a distribution (``"anthropic"``), for ``sdk_version()``; None if absent."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


_providers: dict[str, Provider] = {}
lock = threading.RLock()  # held while the registry or the installed interception changes


def registered() -> list[Provider]:
    """Every registered provider, built-in ones first."""
    return list(_providers.values())


def lookup(name: str) -> Provider | None:
    return _providers.get(name)


def put(provider: Provider) -> Provider | None:
    """Add ``provider`` to the registry; the one it replaces, if any."""
    with lock:
        old = _providers.get(provider.name)
        _providers[provider.name] = provider
        return old


def pop(name: str) -> Provider | None:
    with lock:
        return _providers.pop(name, None)


# -- interception state, and the seams below the SDKs ---------------------------------------------
_installs = 0  # open ``providers.install()`` calls


def count_install(step: int) -> int:
    """Add ``step`` (1 or -1) to the open installs, under ``lock``; the new count."""
    global _installs
    with lock:
        _installs = max(0, _installs + step)
        return _installs


def installed() -> bool:
    """Whether interception is in place (a cassette or an adapter is open)."""
    return _installs > 0


class Seam(NamedTuple):
    """An HTTP library an SDK may send through (aiohttp, lm15), wrapped while interception is in place.

    Its module is imported by a post-import hook when the library itself is, and adds its seam
    here; from then on ``install`` and ``uninstall`` follow the providers'.
    """

    name: str
    install: Callable[[], None]
    uninstall: Callable[[], None]


_waiting: set[tuple[str, str]] = set()  # (module, hook) pairs a post-import hook waits for
_ran: set[tuple[str, str]] = set()  # ... and those whose hook has run


def when_imported(name: str, hook: str | Callable[[Any], None], key: str | None = None) -> None:
    """Call ``hook(module)`` as the module ``name`` is imported (now, if it is and never was seen).

    ``hook`` is a callable or a lazy ``"module:function"``; ``key`` tells hooks apart (a callable's
    default key is its qualified name). wrapt runs a post-import hook once, so a module removed from
    ``sys.modules`` and imported again (pytest's in-process ``pytester`` runs restore ``sys.modules``
    after each run; so do other isolation tools) would load unwatched and its calls go out
    unrecorded: once the hook has run and the module is gone, this waits for it again.
    """
    pair = (name, key or (hook if isinstance(hook, str) else hook.__qualname__))
    loaded = sys.modules.get(name)
    if pair in _waiting:
        if loaded is not None:  # imported past the hook (wrapt's finder was taken away): run it now
            _fire(pair, hook, loaded)
        return
    if pair in _ran and loaded is not None:
        return
    _waiting.add(pair)
    wrapt.register_post_import_hook(lambda module: _fire(pair, hook, module), name)


def _fire(pair: tuple[str, str], hook: str | Callable[[Any], None], module: Any) -> None:
    _waiting.discard(pair)
    _ran.add(pair)
    if isinstance(hook, str):
        where, _, attr = hook.partition(":")
        getattr(importlib.import_module(where), attr)(module)
    else:
        hook(module)


_seams: dict[str, Seam] = {}


def add_seam(seam: Seam) -> None:
    with lock:
        _seams[seam.name] = seam


def seams() -> list[Seam]:
    """The seams whose library was imported, so far."""
    with lock:
        return list(_seams.values())


_outer: contextvars.ContextVar[bool] = contextvars.ContextVar("llmvcr_outer_call", default=False)


@contextlib.contextmanager
def outer_call() -> Iterator[None]:
    """A recorded call is running live: what it sends below (its HTTP requests) is part of it.

    The outermost interception owns a call; without this a patched function and the HTTP
    request it makes would both be recorded, and replay would serve the function alone.
    """
    token = _outer.set(True)
    try:
        yield
    finally:
        _outer.reset(token)


def watching() -> bool:
    """Whether a call may need llmvcr now; False lets an adapter call through without building a request."""
    return not _outer.get() and _active.watching()


def decide(provider: Provider, request: Request, client: Any = None, *, host: str | None = None) -> Decision:
    """What to do with one call of ``provider``'s SDK, made by ``client`` (None when unknown).

    The session bound to ``client`` (``create_replay_adapter``) or the open cassette answers;
    outside every cassette the call goes live unrecorded, unless the network guard refuses it
    (``host`` lets it allow a host by name). Raises ``ReplayDivergence`` or
    ``NetworkBlockedError``, both ``LLMVCRError``.
    """
    __tracebackhide__ = True  # pytest shows the user's frame and the message
    session = _active.session_for(client)
    if session is None:
        error = _active.outside_call(provider.name, f"{request.method} {request.path}", host)
        if error is not None:
            raise error
        return Decision(provider.name, request, "")
    return session.decide(provider, request)


def unclaimed(
    method: str, url: str, host: str, client: Any = None, *, can_serve: bool = False
) -> Entry | None:
    """A seam saw an HTTP request no provider claims; the session answers it from the cassette (a
    non-LLM call a foreign cassette recorded), refuses it or counts it.

    Raises ``UnrecognizedRequestError`` inside a replay-only cassette that did not record it;
    outside every cassette, or in one that records, the request goes on (a recording cassette warns
    at exit). Returns the recorded entry to serve (``can_serve``: the seam can build its response;
    one that cannot gets ``UnrecognizedRequestError`` rather than a recorded call sent live), or None.
    """
    __tracebackhide__ = True
    if url.partition("?")[0] in _recorded_elsewhere:
        return None
    session = _active.session_for(client)
    if session is not None and session.open:
        return session.unclaimed(method, url, host, can_serve=can_serve)
    return None


_recorded_elsewhere: dict[str, int] = {}  # URL -> open connections another seam records (an MCP server)


def recorded_elsewhere(url: str, step: int) -> None:
    """Requests to ``url`` are recorded by another seam (``step`` 1 while it is open, -1 after): the
    HTTP seam lets them through without counting them as unrecorded calls."""
    with lock:
        count = _recorded_elsewhere.get(url, 0) + step
        if count > 0:
            _recorded_elsewhere[url] = count
        else:
            _recorded_elsewhere.pop(url, None)


# -- the SDK funnel: the one method every call of an SDK passes above its retry loop ---------------
# Inside it, llmvcr knows which SDK client made the call, whatever headers a framework set on it
# (pydantic-ai, LangChain and the OpenAI Agents SDK replace the SDK's ``User-Agent``). The HTTP
# library's ``send`` sits inside the SDK's retry loop, which would retry an llmvcr error and wrap
# it as a connection error, so an llmvcr error leaves ``send`` as a ``BaseException`` carrier
# (past the SDK's ``except Exception``) and the funnel turns it back into the error.


class Caller(NamedTuple):
    """Whose funnel the current call is in: the provider's name and the SDK client instance."""

    provider: str
    client: Any


_caller: contextvars.ContextVar[Caller | None] = contextvars.ContextVar("llmvcr_funnel", default=None)


class Halt(BaseException):
    """Carries an llmvcr error through the SDK's retry loop to its funnel, unwrapped."""

    def __init__(self, error: LLMVCRError) -> None:
        super().__init__(str(error))
        self.error = error


def current_caller() -> Caller | None:
    """The funnel the current call is in, or None outside every funnel."""
    return _caller.get()


def carry(error: LLMVCRError) -> BaseException:
    """What to raise below a funnel (a ``Halt``), or the error itself outside one."""
    return Halt(error) if _caller.get() is not None else error


def funnel_wrappers(provider: str) -> tuple[Callable[..., Any], Callable[..., Awaitable[Any]]]:
    """The sync and async wrapt wrappers for ``provider``'s funnel methods."""

    def sync_funnel(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        __tracebackhide__ = True  # pytest shows the user's frame and the message
        token = _caller.set(Caller(provider, instance))
        try:
            return wrapped(*args, **kwargs)
        except Halt as halt:
            raise halt.error from None
        finally:
            _caller.reset(token)

    def async_funnel(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Awaitable[Any]:
        async def run() -> Any:
            __tracebackhide__ = True  # pytest shows the user's frame and the message
            token = _caller.set(Caller(provider, instance))
            try:
                return await wrapped(*args, **kwargs)
            except Halt as halt:
                raise halt.error from None
            finally:
                _caller.reset(token)

        return run()

    return sync_funnel, async_funnel


# -- an SDK's stream reader: the same for an llmvcr error raised while a stream is read -------------
# A served stream raises an llmvcr error (``TruncatedStreamError`` at a recorded cut) from the HTTP
# library's byte stream, after the funnel returned. anthropic 2.17 turns any failed read into
# ``APIConnectionError("Connection error.")`` with the error as its cause, so the reader (a Stainless
# SDK's ``Stream._iter_events``, named in ``providers._internals``) is wrapped to raise the error itself.


def _own(error: BaseException) -> LLMVCRError | None:
    """The llmvcr error an SDK error wraps, if that is what it is."""
    cause = error.__cause__
    return cause if isinstance(cause, LLMVCRError) and not isinstance(error, LLMVCRError) else None


def _surfacing(events: Iterator[Any]) -> Iterator[Any]:
    try:
        yield from events
    except Exception as err:
        own = _own(err)
        if own is None:
            raise
        raise own from None


async def _surfacing_async(events: AsyncIterator[Any]) -> AsyncIterator[Any]:
    try:
        async for event in events:
            yield event
    except Exception as err:
        own = _own(err)
        if own is None:
            raise
        raise own from None
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:  # closing this reader closes the SDK's, as if it were not wrapped
            await aclose()


def reader_wrappers() -> tuple[Callable[..., Iterator[Any]], Callable[..., AsyncIterator[Any]]]:
    """The sync and async wrapt wrappers for an SDK's stream reader (a generator of its events)."""

    def sync_reader(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Iterator[Any]:
        return _surfacing(wrapped(*args, **kwargs))

    def async_reader(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> AsyncIterator[Any]:
        return _surfacing_async(wrapped(*args, **kwargs))

    return sync_reader, async_reader
