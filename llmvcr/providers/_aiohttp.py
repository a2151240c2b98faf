"""The aiohttp seam: ``ClientSession._request``, where every aiohttp request starts.

google-genai's ``client.aio`` sends through aiohttp whenever it is importable, and so do
litellm's async paths. One request runs as in ``providers._send``: whose call it is (the SDK
funnel it runs in, else a provider's ``owns``), the ``Request`` (``http.request_from_wire``),
``base.decide``, then a recorded response served as aiohttp's own ``ClientResponse`` (the SDKs
check its type) or the live one with its body teed into the record as the caller reads it.
``ClientSession.request``, ``get``, ``post`` and ``async with session.post(...)`` all pass
``_request``; wrapping it (not a transport) is the one place a response can be answered.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from http import HTTPStatus
from typing import Any, NamedTuple

import orjson

from ..cassette import Response
from ..errors import LLMVCRError
from ..sse import encode_events
from ._funnel import carry, current_caller
from ._patch import Patch
from ._streams import Capture
from .base import Seam, add_seam, decide, installed, lookup, registered, unclaimed, watching
from .http import HttpProvider, body_bytes, request_from_wire

_patch: Patch | None = None


class _View(NamedTuple):
    """What ``HttpProvider.owns`` reads of a request: ``url.host``, ``url.path``, ``headers``."""

    url: Any  # yarl.URL
    headers: Any  # multidict.CIMultiDict


def _owner(view: _View) -> HttpProvider | None:
    caller = current_caller()
    if caller is not None:
        provider = lookup(caller.provider)
        return provider if isinstance(provider, HttpProvider) else None
    for provider in registered():
        if isinstance(provider, HttpProvider) and provider.owns(view):
            if not provider.installed:
                provider.install()  # the SDK was imported after the cassette opened
            return provider
    return None


def _wire(multidict: Any, yarl: Any, session: Any, args: Any, kwargs: Any) -> tuple[str, Any, Any, bytes]:
    """Method, absolute URL, merged headers and body bytes, as aiohttp will send them."""
    from_args = list(args)
    method = kwargs.get("method") or from_args.pop(0)
    target = kwargs.get("str_or_url") or from_args.pop(0)
    build = getattr(session, "_build_url", None)  # joins a relative URL to the session's base_url
    url = build(target) if build is not None else yarl.URL(target)
    params = kwargs.get("params")
    if params:
        url = url.extend_query(params)
    headers = multidict.CIMultiDict(session.headers)
    headers.update(multidict.CIMultiDict(kwargs.get("headers") or {}))
    data, js = kwargs.get("data"), kwargs.get("json")
    if js is not None:
        body, headers["content-type"] = orjson.dumps(js), "application/json"
    elif isinstance(data, str):
        body = data.encode("utf-8")
    elif isinstance(data, (bytes, bytearray, memoryview)):
        body = bytes(data)
    else:
        body = b""
    return method.upper(), url, headers, body


def _lowered(headers: Any) -> dict[str, str]:
    """Response headers as recorded: lower-case names, a repeated one joined."""
    out: dict[str, str] = {}
    for name, value in headers.items():
        lower = name.lower()
        out[lower] = f"{out[lower]}, {value}" if lower in out else value
    return out


class _Sent:
    output_size = 0  # the request already went out: what ClientResponse reads of its writer


class _NoFlowControl:
    _reading_paused = False  # a served body is in memory: nothing to pause
    connected = True

    def pause_reading(self, *args: Any, **kwargs: Any) -> None:
        pass

    def resume_reading(self, *args: Any, **kwargs: Any) -> None:
        pass


_pacers: set[asyncio.Task[None]] = set()


async def _pace(content: Any, events: list[tuple[Any, bytes]], speed: float) -> None:
    """Feed a served stream at its recorded pace (``replay_speed``), as it arrived when recorded."""
    last = 0.0
    for t, chunk in events:
        if isinstance(t, (int, float)):
            await asyncio.sleep(max(0.0, (t - last) / 1000 / speed))
            last = t
        content.feed_data(chunk)
    content.feed_eof()


def _served(
    aiohttp: Any, multidict: Any, session: Any, method: str, url: Any, recorded: Response, speed: float | None
) -> Any:
    """aiohttp's own ``ClientResponse`` for ``recorded``, its body already in its stream."""
    loop = asyncio.get_running_loop()
    headers = multidict.CIMultiDict(
        (k, v) for k, v in recorded.headers.items() if k not in ("content-length", "content-encoding")
    )
    info = aiohttp.RequestInfo(url, method, multidict.CIMultiDictProxy(multidict.CIMultiDict()))
    response = aiohttp.ClientResponse(
        method,
        url,
        writer=None,
        continue100=None,
        timer=aiohttp.helpers.TimerNoop(),
        request_info=info,
        traces=[],
        loop=loop,
        session=session,
        stream_writer=_Sent(),
    )
    content = aiohttp.StreamReader(_NoFlowControl(), 2**16, loop=loop)
    if recorded.stream is not None:
        headers.setdefault("content-type", "text/event-stream")
        events = encode_events(recorded.stream)
        if speed:
            pacer = loop.create_task(_pace(content, events, speed))
            _pacers.add(pacer)  # held until done: the loop keeps only a weak reference
            pacer.add_done_callback(_pacers.discard)
        else:
            for _, chunk in events:
                content.feed_data(chunk)
            content.feed_eof()
    else:
        content.feed_data(body_bytes(recorded.body, headers.get("content-type", "application/json")))
        content.feed_eof()
    response.status = recorded.status
    try:
        response.reason = HTTPStatus(recorded.status).phrase
    except ValueError:
        response.reason = ""
    response._headers = multidict.CIMultiDictProxy(headers)
    response._raw_headers = tuple((k.encode(), v.encode()) for k, v in headers.items())
    response.content = (
        _Cut(content, aiohttp.ClientPayloadError(recorded.failure)) if recorded.failure else content
    )
    return response


class _Reader:
    """A response's body stream seen through ``_seen``: every read of aiohttp's ``StreamReader`` API."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def _seen(self, data: bytes, whole: bool) -> None:
        """``data`` was read (``whole``: by ``read()``, to the end); may raise."""

    def _failed(self, error: Exception) -> None:
        """The read raised ``error`` (it is raised on)."""

    async def _read(self, read: Awaitable[Any], chunked: bool = False, whole: bool = False) -> Any:
        try:
            got = await read
        except Exception as err:
            self._failed(err)
            raise
        self._seen(got[0] if chunked else got, whole)
        return got

    async def read(self, n: int = -1) -> bytes:
        return await self._read(self._inner.read(n), whole=n < 0)  # type: ignore[no-any-return]

    async def readany(self) -> bytes:
        return await self._read(self._inner.readany())  # type: ignore[no-any-return]

    async def readline(self) -> bytes:
        return await self._read(self._inner.readline())  # type: ignore[no-any-return]

    async def readexactly(self, n: int) -> bytes:
        return await self._read(self._inner.readexactly(n))  # type: ignore[no-any-return]

    async def readchunk(self) -> tuple[bytes, bool]:
        return await self._read(self._inner.readchunk(), chunked=True)  # type: ignore[no-any-return]

    async def _iterate(self, read: Callable[[], Awaitable[bytes]]) -> AsyncIterator[bytes]:
        while data := await read():
            yield data

    def iter_any(self) -> AsyncIterator[bytes]:
        return self._iterate(self.readany)

    def iter_chunked(self, n: int) -> AsyncIterator[bytes]:
        return self._iterate(lambda: self.read(n))

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._iterate(self.readline)


class _Tee(_Reader):
    """The live response's body stream, feeding what the caller reads into the record."""

    def __init__(self, inner: Any, capture: Capture) -> None:
        super().__init__(inner)
        self._capture = capture

    def _seen(self, data: bytes, whole: bool) -> None:
        if data:
            self._capture.feed(data)
        if self._inner.at_eof():
            self._capture.finish()

    def _failed(self, error: Exception) -> None:
        self._capture.failed(error)


class _Cut(_Reader):
    """A served body that was cut when recorded: what arrived, then the error, as aiohttp raises it."""

    def __init__(self, inner: Any, error: Exception) -> None:
        super().__init__(inner)
        self._error = error

    def _seen(self, data: bytes, whole: bool) -> None:
        if whole or (not data and self._inner.at_eof()):
            raise self._error


def _wrapper(aiohttp: Any) -> Callable[..., Awaitable[Any]]:
    multidict = importlib.import_module("multidict")  # aiohttp's own dependencies
    yarl = importlib.import_module("yarl")

    def on_wire(session: Any, args: Any, kwargs: Any) -> tuple[str, Any, Any, bytes]:
        return _wire(multidict, yarl, session, args, kwargs)

    async def request(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        __tracebackhide__ = True  # pytest shows the user's frame and the message
        if not watching():
            return await wrapped(*args, **kwargs)
        method, url, headers, body = on_wire(instance, args, kwargs)
        provider = _owner(_View(url, headers))
        try:
            if provider is None:
                unclaimed(method, str(url), url.host or "")
                return await wrapped(*args, **kwargs)
            caller = current_caller()
            wire = request_from_wire(
                method, str(url), headers.items(), body, meaning_headers=provider.meaning_headers
            )
            decision = decide(provider, wire, caller.client if caller else None, host=url.host)
        except LLMVCRError as err:
            raise carry(err) from None
        if decision.fault is not None:
            if decision.fault.kind == "timeout":
                raise aiohttp.ServerTimeoutError(decision.fault.message)
            raise aiohttp.ClientConnectionError(decision.fault.message)
        if decision.entry is not None:
            return _served(
                aiohttp, multidict, instance, method, url, decision.entry.response, decision.replay_speed
            )
        if not decision.recording:
            return await wrapped(*args, **kwargs)
        start = time.perf_counter()
        response = await wrapped(*args, **kwargs)
        sse = "text/event-stream" in response.headers.get("content-type", "")
        capture = Capture(decision.record, response.status, _lowered(response.headers), sse)
        capture.restart_clock(start)
        response.content = _Tee(response.content, capture)
        decision.on_close(lambda: capture.finish(truncated=True))
        return response

    return request


def install_aiohttp() -> None:
    """Wrap ``ClientSession._request`` if aiohttp is imported (never import it ourselves)."""
    if "aiohttp" in sys.modules:
        _apply(sys.modules["aiohttp"])


def _apply(aiohttp: Any) -> None:
    global _patch
    if _patch is None:
        _patch = Patch(aiohttp.ClientSession, "_request", _wrapper(aiohttp))
        _patch.apply()


def on_import(module: Any) -> None:
    """aiohttp was imported (the post-import hook ``providers.install`` registers)."""
    if installed():
        _apply(module)


def uninstall_aiohttp() -> None:
    global _patch
    if _patch is not None:
        _patch.undo()
        _patch = None


add_seam(Seam("aiohttp", install_aiohttp, uninstall_aiohttp))
