"""OpenAI's Responses API over WebSocket (``client.responses.connect()``, sync and async).

The seam: the connection managers' ``_connect_ws`` (sync and async, GA and beta; the names are in
``providers._internals``) returns the ``websockets`` connection the SDK sends on and reads from;
the SDK only ever calls its ``send``, ``recv(decode=False)`` and ``close``. While a cassette is
open it returns a stand-in instead.

Each message the client sends is one request (method ``WS``, the socket's path, the message as
body); the server messages read after it, until the next client message, are its response
``stream`` (each with its arrival offset ``t`` in ms after the send), and a close by the server
is its ``failure``. On replay a matched message queues its recorded messages for ``recv`` (paced
by ``replay_speed``) and the SDK parses them into its own event types. The real connection is
opened, through the SDK's own code, at the first message the cassette does not answer; replay
never opens one. A ``recv`` with nothing recorded left raises :class:`ReplayExhausted` (live, it
would wait for ever), or ``TimeoutError`` when given a timeout.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import orjson

from .. import _active
from ..cassette import Request, Response
from ..errors import ReplayExhausted, SDKChangedError
from ..session import Decision
from . import _internals
from ._driver import LibraryPatches
from ._patch import Patch
from .base import decide, package_version, when_imported
from .openai import provider as openai_http

_MODULES = _internals.WS_MODULES
_ENTER = ("__enter__", "__aenter__")  # the managers' public entry, refused when the socket cannot be seen
_TERMINAL = frozenset({"response.completed", "response.failed", "response.incomplete", "error"})


def _close_error(failure: str | None, *, by_client: bool = False) -> BaseException:
    """``"1011 reason"`` -> the ``websockets`` exception the SDK saw live."""
    from websockets.exceptions import ConnectionClosedError, ConnectionClosedOK
    from websockets.frames import Close

    code_text, _, reason = (failure or "1000").partition(" ")
    code = int(code_text) if code_text.isdigit() else 1006
    frame = Close(code, reason)
    cls = ConnectionClosedOK if code in (1000, 1001) else ConnectionClosedError
    return cls(frame, frame, not by_client)


class _Socket:
    """What both stand-ins share: the turn being recorded, and the queue of replayed messages."""

    def __init__(
        self, client: Any, path: str, query: tuple[tuple[str, str], ...], opener: Callable[[], Any]
    ) -> None:
        self.client, self.path, self.query, self.opener = client, path, query, opener
        self.cassette_path = ""
        self.real: Any = None
        self.queue: deque[tuple[float, bytes | None, str | None]] = deque()  # (due, message, failure)
        self.turn: tuple[Decision, float, list[dict[str, Any]]] | None = None
        self.waiting: list[dict[str, Any]] = []  # messages read before any was sent
        self.closed: tuple[int, str] | None = None
        self.lock = threading.Lock()

    # -- both directions -------------------------------------------------------------------
    def _begin(self, data: str | bytes) -> bool:
        """A client message: serve it from the cassette (False), or send it live (True)."""
        try:
            body: Any = orjson.loads(data)
        except orjson.JSONDecodeError:
            body = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
        request = Request("WS", self.path, body=body, query=self.query)
        with self.lock:
            self._finish()
        decision = decide(openai_http, request, self.client)  # may raise ReplayDivergence
        if decision.session is not None:
            self.cassette_path = decision.session.path
        now = time.perf_counter()
        if decision.fault is not None:
            raise _close_error(f"1006 {decision.fault.message}")
        if decision.entry is not None:
            self._enqueue(decision.entry.response, now, decision.replay_speed)
            return False
        with self.lock:
            events, self.waiting = self.waiting, []
            self.turn = (decision, now, events)
        return True

    def _enqueue(self, response: Response, now: float, speed: float | None) -> None:
        due = now
        with self.lock:
            for event in response.stream or []:
                t = event.get("t")
                if speed and isinstance(t, (int, float)):
                    due = now + t / 1000 / speed
                data = event.get("data")
                self.queue.append((due, data.encode() if isinstance(data, str) else orjson.dumps(data), None))
            if response.failure:
                self.queue.append((due, None, response.failure))

    def _received(self, message: str | bytes) -> None:
        try:
            data: Any = orjson.loads(message)
        except orjson.JSONDecodeError:
            data = message.decode("utf-8", "replace") if isinstance(message, bytes) else message
        with self.lock:
            if self.turn is None:
                self.waiting.append({"data": data, "t": 0.0})
                return
            start, events = self.turn[1], self.turn[2]
            events.append({"data": data, "t": round((time.perf_counter() - start) * 1000, 1)})

    def _finish(self, *, failure: str | None = None, closing: bool = False) -> None:
        """Record the turn in progress (called with the lock held)."""
        if self.turn is None:
            return
        decision, _, events = self.turn
        self.turn = None
        last = events[-1]["data"] if events else None
        kind = last.get("type") if isinstance(last, dict) else None
        truncated = closing and failure is None and kind not in _TERMINAL
        decision.record(Response(101, {}, stream=events, truncated=truncated, failure=failure))

    def _closed_live(self, err: BaseException) -> None:
        rcvd = getattr(err, "rcvd", None)
        failure = f"{rcvd.code} {rcvd.reason}".rstrip() if rcvd is not None else "1006"
        with self.lock:
            self._finish(failure=failure)

    def _peek(self) -> tuple[float, bytes | None, str | None] | None:
        with self.lock:
            return self.queue[0] if self.queue else None

    def _take(self, decode: bool | None) -> str | bytes:
        """Hand out the message at the head of the queue (after its wait: a cancelled wait loses nothing)."""
        with self.lock:
            if not self.queue:  # closed while waiting
                raise self._nothing_left(None)
            _, message, failure = self.queue.popleft()
        if message is None:
            raise _close_error(failure)
        return message if decode is False else message.decode("utf-8")

    def _nothing_left(self, timeout: float | None) -> BaseException:
        if self.closed is not None:
            return _close_error(f"{self.closed[0]} {self.closed[1]}", by_client=True)
        if timeout is not None:
            return TimeoutError("timed out while receiving data")
        return ReplayExhausted(
            f"llmvcr: recv() on a replayed OpenAI WebSocket ({self.path}) with no recorded message left in "
            f"{self.cassette_path or 'the cassette'}; live, this call would wait for a message the "
            f"recording never received"
        )

    def _close_local(self, code: int, reason: str) -> None:
        with self.lock:
            self._finish(closing=True)
            self.closed = (code, reason)
            self.queue.clear()


class SyncSocket(_Socket):
    """Stands in for ``websockets.sync.client.ClientConnection``."""

    def send(self, message: str | bytes, text: bool | None = None) -> None:
        if self.closed is not None:
            raise _close_error(f"{self.closed[0]} {self.closed[1]}", by_client=True)
        if self._begin(message):
            if self.real is None:
                self.real = self.opener()
            self.real.send(message)

    def recv(self, timeout: float | None = None, decode: bool | None = None) -> str | bytes:
        item = self._peek()
        if item is not None:
            wait = item[0] - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            return self._take(decode)
        if self.real is None or self.closed is not None:
            raise self._nothing_left(timeout)
        from websockets.exceptions import ConnectionClosed

        try:
            message = self.real.recv(timeout=timeout, decode=decode)
        except ConnectionClosed as err:
            self._closed_live(err)
            raise
        self._received(message)
        return message  # type: ignore[no-any-return]

    def close(self, code: int = 1000, reason: str = "") -> None:
        self._close_local(code, reason)
        if self.real is not None:
            self.real.close(code=code, reason=reason)


class AsyncSocket(_Socket):
    """Stands in for ``websockets.asyncio.client.ClientConnection``."""

    async def send(self, message: str | bytes, text: bool | None = None) -> None:
        if self.closed is not None:
            raise _close_error(f"{self.closed[0]} {self.closed[1]}", by_client=True)
        if self._begin(message):
            if self.real is None:
                self.real = await self.opener()
            await self.real.send(message)

    async def recv(self, decode: bool | None = None) -> str | bytes:
        item = self._peek()
        if item is not None:
            wait = item[0] - time.perf_counter()
            if wait > 0:
                await asyncio.sleep(wait)
            return self._take(decode)
        if self.real is None or self.closed is not None:
            raise self._nothing_left(None)
        from websockets.exceptions import ConnectionClosed

        try:
            message = await self.real.recv(decode=decode)
        except ConnectionClosed as err:
            self._closed_live(err)
            raise
        self._received(message)
        return message  # type: ignore[no-any-return]

    async def close(self, code: int = 1000, reason: str = "") -> None:
        self._close_local(code, reason)
        if self.real is not None:
            await self.real.close(code=code, reason=reason)


_CLIENT = _internals.attribute("openai.ws_client")  # "__client", stored mangled by the manager class
_PREPARE_URL = _internals.attribute("openai.ws_url")
_blind: set[type] = set()  # manager classes whose client cannot be found (a release renamed it)


def _client_of(manager: Any) -> Any:
    """The SDK client that opened this socket; None when a release renamed where it is kept.

    Without it a socket answers to the open cassette; a client bound by ``create_replay_adapter`` or
    ``create_recording_adapter`` cannot be told, so such a socket is refused rather than sent live.
    """
    cls = type(manager)
    # stored mangled (``_ResponsesConnectionManager__client``) by whichever class set it
    found = next((v for k, v in vars(manager).items() if k.endswith(_CLIENT)), None)
    found = None if cls in _blind else found
    if found is None and _active.bound_clients():  # renamed on the class, or on this object alone
        fill = {"module": cls.__module__, "manager": cls.__name__}
        raise _internals.error("openai.ws_client", **fill)
    return found


def _socket_args(manager: Any, args: Any, kwargs: Any) -> tuple[str, tuple[tuple[str, str], ...]]:
    url = getattr(manager, _PREPARE_URL)()
    extra_query = (args[0] if args else kwargs.get("extra_query")) or {}
    pairs = list(url.params.multi_items()) + [(str(k), str(v)) for k, v in dict(extra_query).items()]
    return url.path, tuple(sorted(pairs))


def _sync_wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    client = _client_of(instance)
    if _active.session_for(client) is None:
        return wrapped(*args, **kwargs)
    path, query = _socket_args(instance, args, kwargs)
    return SyncSocket(client, path, query, lambda: wrapped(*args, **kwargs))


async def _async_wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    client = _client_of(instance)
    if _active.session_for(client) is None:
        return await wrapped(*args, **kwargs)
    path, query = _socket_args(instance, args, kwargs)
    return AsyncSocket(client, path, query, lambda: wrapped(*args, **kwargs))


def _refusing(error: SDKChangedError) -> Callable[..., Any]:
    """For ``__enter__``/``__aenter__`` when the socket cannot be intercepted: refused inside a
    cassette (never opened live unrecorded), opened as usual outside every one."""

    def enter(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        if _active.session_for(_client_of(instance)) is not None:
            raise error
        return wrapped(*args, **kwargs)

    return enter


class OpenAIWebSocketProvider:
    """The ``Provider`` for ``responses.connect()``; entries it records are the ``openai`` SDK's."""

    name = "openai-responses-websocket"
    package = "openai"

    def __init__(self) -> None:
        self._installed = False
        self._library = LibraryPatches(self.name, _MODULES, _ws_patches, active=lambda: self._installed)

    def sdk_version(self) -> str | None:
        return package_version("openai")

    def install(self) -> None:
        """Wrap the connection managers of the responses modules openai has loaded so far.

        openai loads its resources lazily; importing them here would cost every process a few
        hundred milliseconds at its first cassette, so a module not loaded yet is wrapped by a
        post-import hook when (if ever) the user's code reaches it.
        """
        self._installed = True
        for module_name in _MODULES:
            if module_name not in sys.modules:
                when_imported(module_name, self._library.on_import, self.name)
        self._library.install()

    def uninstall(self) -> None:
        self._installed = False
        self._library.uninstall()


def _ws_patches(module: Any) -> list[Patch]:
    """The wrappers for one responses module's connection managers (none in an openai without them)."""
    out: list[Patch] = []
    wrappers = (_sync_wrapper, _async_wrapper)
    for cls_name, wrapper, enter in zip(_internals.WS_MANAGERS, wrappers, _ENTER, strict=True):
        cls = getattr(module, cls_name, None)
        if cls is None:  # an openai without this WebSocket API
            continue
        fill = {"module": module.__name__, "manager": cls_name}
        if not _internals.present("openai.ws_client", **fill):
            _blind.add(cls)
        missing = [k for k in ("openai.connect_ws", "openai.ws_url") if not _internals.present(k, **fill)]
        if missing:  # the socket cannot be intercepted: refuse it inside a cassette
            refuse = _refusing(_internals.error(missing[0], **fill))
            out += [Patch(cls, name, refuse) for name in (enter, "enter") if hasattr(cls, name)]
        else:
            out.append(Patch(cls, _internals.attribute("openai.connect_ws"), wrapper))
    return out


provider = OpenAIWebSocketProvider()
