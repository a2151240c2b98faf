"""The aiohttp seam: ``ClientSession._request`` (named in ``providers._internals``), where every aiohttp
request starts.

google-genai's ``client.aio`` sends through aiohttp whenever it is importable, and so do
litellm's async paths. Only aiohttp's translations live here (the driver,
``providers._driver``, does the rest): the wire request as a ``Request``
(``http.request_from_wire``), a recorded response as aiohttp's own ``ClientResponse`` (the SDKs
check its type), the live one's body teed into the record as the caller reads it, and aiohttp's
error classes for an injected fault.
``ClientSession.request``, ``get``, ``post`` and ``async with session.post(...)`` all pass
``_request``; wrapping it (not a transport) is the one place a response can be answered.
"""

from __future__ import annotations

import asyncio
import importlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from http import HTTPStatus
from typing import Any, NamedTuple

import orjson

from ..cassette import Request, Response
from ..errors import SDKChangedError
from ..faults import Fault
from . import _internals
from ._driver import LibraryPatches, capture, decision
from ._patch import Patch
from ._streams import Capture, cut_short, schedule, served_headers
from .base import Seam, add_seam, watching
from .http import HttpProvider, request_from_wire

_BUILD_URL = _internals.attribute("aiohttp.build_url")
_HEADERS = _internals.attribute("aiohttp.headers")
_RAW_HEADERS = _internals.attribute("aiohttp.raw_headers")


class _View(NamedTuple):
    """What ``HttpProvider.owns`` reads of a request: ``url.host``, ``url.path``, ``headers``."""

    url: Any  # yarl.URL
    headers: Any  # multidict.CIMultiDict


def _wire(multidict: Any, yarl: Any, session: Any, args: Any, kwargs: Any) -> tuple[str, Any, Any, bytes]:
    """Method, absolute URL, merged headers and body bytes, as aiohttp will send them."""
    from_args = list(args)
    method = kwargs.get("method") or from_args.pop(0)
    target = kwargs.get("str_or_url") or kwargs.get("url") or from_args.pop(0)
    build = getattr(session, _BUILD_URL, None)  # joins a relative URL to the session's base_url
    # without it (a release renamed it) an absolute URL is as given; a relative one is refused below
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


async def _pace(content: Any, chunks: list[tuple[float, bytes]]) -> None:
    """Feed a served stream at its recorded pace (``replay_speed``), as it arrived when recorded."""
    for wait, chunk in chunks:
        if wait:
            await asyncio.sleep(wait)
        content.feed_data(chunk)
    content.feed_eof()


def _served(
    aiohttp: Any, multidict: Any, session: Any, method: str, url: Any, recorded: Response, speed: float | None
) -> Any:
    """aiohttp's own ``ClientResponse`` for ``recorded``, its body already in its stream."""
    loop = asyncio.get_running_loop()
    headers = multidict.CIMultiDict(served_headers(recorded))
    info = aiohttp.RequestInfo(url, method, multidict.CIMultiDictProxy(multidict.CIMultiDict()))
    response = aiohttp.ClientResponse(
        method,
        url,
        writer=None,
        continue100=None,
        timer=None,  # aiohttp puts its own no-op timer
        request_info=info,
        traces=[],
        loop=loop,
        session=session,
        stream_writer=_Sent(),
    )
    content = aiohttp.StreamReader(_NoFlowControl(), 2**16, loop=loop)
    chunks = schedule(recorded, speed)
    if any(wait for wait, _ in chunks):
        pacer = loop.create_task(_pace(content, chunks))
        _pacers.add(pacer)  # held until done: the loop keeps only a weak reference
        pacer.add_done_callback(_pacers.discard)
    else:
        for _, chunk in chunks:
            content.feed_data(chunk)
        content.feed_eof()
    response.status = recorded.status
    try:
        response.reason = HTTPStatus(recorded.status).phrase
    except ValueError:
        response.reason = ""
    # read back by the public ``headers`` and ``raw_headers`` (checked at install: see ``_patches``)
    setattr(response, _HEADERS, multidict.CIMultiDictProxy(headers))
    setattr(response, _RAW_HEADERS, tuple((k.encode(), v.encode()) for k, v in headers.items()))
    response.content = (
        _Cut(content, cut_short(recorded.failure) or aiohttp.ClientPayloadError(recorded.failure))
        if recorded.failure
        else content
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


def _fault(aiohttp: Any) -> Callable[[Fault], BaseException]:
    def fault(fault: Fault) -> BaseException:
        error = aiohttp.ServerTimeoutError if fault.kind == "timeout" else aiohttp.ClientConnectionError
        return error(fault.message)  # type: ignore[no-any-return]

    return fault


def _wrapper(aiohttp: Any, broken: SDKChangedError | None) -> Callable[..., Awaitable[Any]]:
    """The wrapper of ``ClientSession._request``; ``broken``: what a release took that serving needs
    (every call an SDK makes raises it, inside a cassette)."""
    multidict = importlib.import_module("multidict")  # aiohttp's own dependencies
    yarl = importlib.import_module("yarl")
    fault = _fault(aiohttp)

    async def request(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        __tracebackhide__ = True  # pytest shows the user's frame and the message
        if not watching():
            return await wrapped(*args, **kwargs)
        method, url, headers, body = _wire(multidict, yarl, instance, args, kwargs)

        def record(provider: HttpProvider) -> Request:
            if broken is not None:
                raise broken
            if not url.is_absolute():  # a relative URL that only the renamed _build_url could place
                raise _internals.error("aiohttp.build_url")
            return request_from_wire(
                method, str(url), headers.items(), body, meaning_headers=provider.meaning_headers
            )

        decided = decision(_View(url, headers), method, str(url), record, fault)
        if decided is None:
            return await wrapped(*args, **kwargs)
        if decided.entry is not None:
            return _served(
                aiohttp, multidict, instance, method, url, decided.entry.response, decided.replay_speed
            )
        start = time.perf_counter()
        response = await wrapped(*args, **kwargs)
        sse = "text/event-stream" in response.headers.get("content-type", "")
        taken = capture(decided, response.status, _lowered(response.headers), start, sse=sse)
        response.content = _Tee(response.content, taken)
        return response

    return request


# ``ClientSession``'s public ways in, each of which calls ``_request``: wrapped to refuse an SDK's call
# inside a cassette when a release renamed ``_request`` (it could not be intercepted)
_PUBLIC = ("request", "get", "options", "head", "post", "put", "patch", "delete")


def _refusing(aiohttp: Any, error: SDKChangedError) -> Callable[..., Any]:
    multidict = importlib.import_module("multidict")
    yarl = importlib.import_module("yarl")
    fault = _fault(aiohttp)

    def refuse(provider: HttpProvider) -> Request:
        raise error

    def public(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        __tracebackhide__ = True
        if watching():
            method = "GET" if wrapped.__name__ == "request" else wrapped.__name__.upper()
            given = args if wrapped.__name__ == "request" else (method, *args)
            method, url, headers, _ = _wire(multidict, yarl, instance, given, kwargs)
            decision(_View(url, headers), method, str(url), refuse, fault)  # an SDK's call raises
        return wrapped(*args, **kwargs)

    return public


def _patches(aiohttp: Any) -> list[Patch]:
    """The wrappers for this aiohttp; what a release renamed is named by the registry."""
    _internals.present("aiohttp.build_url")  # only warns: a URL is taken as given without it
    serving = [key for key in ("aiohttp.headers", "aiohttp.raw_headers") if not _internals.present(key)]
    broken = _internals.error(serving[0]) if serving else None
    found = _internals.resolve("aiohttp.request")
    if found is not None:
        return [Patch(*found, _wrapper(aiohttp, broken))]
    refuse = _refusing(aiohttp, _internals.error("aiohttp.request"))
    return [Patch(aiohttp.ClientSession, name, refuse) for name in _PUBLIC]


_library = LibraryPatches("aiohttp", ("aiohttp",), _patches)


def on_import(module: Any) -> None:
    """aiohttp was imported (the post-import hook ``providers.install`` registers)."""
    _library.on_import(module)


add_seam(Seam("aiohttp", _library.install, _library.uninstall))
