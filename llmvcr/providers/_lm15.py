"""The lm15 seam: ``StdlibTransport.stream`` / ``StdlibAsyncTransport.stream``.

DSPy 3.4's default engine is lm15, vendored as ``dspy._vendor.lm15``: its transports open
sockets themselves (no httpx, no SDK). Their ``stream(TransportRequest)`` is lm15's public,
bytes-in/bytes-out transport interface and every native call passes it, so it is where a
request is recognised by its wire format (``HttpProvider.owns``: Anthropic's, OpenAI's,
Gemini's), decided, and answered with lm15's own ``TransportResponse`` built from the record.
A request no provider claims is refused or counted like any other (``base.unclaimed``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from .. import _active
from ..cassette import Request, Response
from ..errors import SDKChangedError
from ..faults import Fault
from ..session import Decision
from . import _internals
from ._driver import LibraryPatches, capture, decision
from ._patch import Patch
from ._streams import Capture, cut_short, schedule, served_headers
from .base import Seam, add_seam, watching
from .http import HttpProvider, request_from_wire

# lm15 on its own, and the copy DSPy ships
MODULES = ("lm15.transports", _internals.where("dspy.lm15"))


class _Url(NamedTuple):
    host: str
    path: str


class _View(NamedTuple):
    """What ``HttpProvider.owns`` reads of a request."""

    url: _Url
    headers: dict[str, str]


def _decide(module: Any, request: Any) -> Decision | None:
    """The decision for this request, or None to let it through untouched."""
    __tracebackhide__ = True
    if not watching():
        return None
    parts = urlsplit(request.url)
    view = _View(_Url(parts.hostname or "", parts.path), {k.lower(): v for k, v in request.headers})

    def record(provider: HttpProvider) -> Request:
        body = request.body or b""
        return request_from_wire(
            request.method, request.url, request.headers, body, meaning_headers=provider.meaning_headers
        )

    def fault(fault: Fault) -> BaseException:
        return (module.ReadTimeout if fault.kind == "timeout" else module.ConnectError)(fault.message)  # type: ignore[no-any-return]

    return decision(view, request.method, request.url, record, fault)


def _capture(decided: Decision, response: Any, start: float) -> Capture:
    headers = {k.lower(): v for k, v in response.headers}
    return capture(
        decided, response.status, headers, start, sse="text/event-stream" in headers.get("content-type", "")
    )


def _wrappers(module: Any) -> tuple[Any, Any]:
    def served_chunks(recorded: Response, speed: float | None) -> Iterator[bytes]:
        for wait, chunk in schedule(recorded, speed):
            if wait:
                time.sleep(wait)
            yield chunk
        if recorded.failure:
            raise cut_short(recorded.failure) or module.ReadError(recorded.failure)

    def sync_stream(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        __tracebackhide__ = True
        request = args[0] if args else kwargs["request"]
        decision = _decide(module, request)
        if decision is None:
            return wrapped(*args, **kwargs)
        if decision.entry is not None:
            recorded = decision.entry.response
            chunks = served_chunks(recorded, decision.replay_speed)
            return _served(module.TransportResponse, recorded, chunks, lambda consumed: None)
        start = time.perf_counter()
        live = wrapped(*args, **kwargs)
        capture = _capture(decision, live, start)
        return _teed(module.TransportResponse, live, capture.passing(live), lambda consumed: live.close())

    def async_stream(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        request = args[0] if args else kwargs["request"]
        decision = _decide(module, request)
        if decision is None:
            return wrapped(*args, **kwargs)
        return _async_answer(module, decision, None if decision.entry else wrapped(*args, **kwargs))

    return sync_stream, async_stream


@contextlib.asynccontextmanager
async def _async_answer(module: Any, decision: Decision, live_cm: Any) -> AsyncIterator[Any]:
    """``async with transport.stream(request) as response``: the recorded or the teed live response."""
    if decision.entry is not None:
        recorded = decision.entry.response

        async def served() -> AsyncIterator[bytes]:
            for wait, chunk in schedule(recorded, decision.replay_speed):
                if wait:
                    await asyncio.sleep(wait)
                yield chunk
            if recorded.failure:
                raise cut_short(recorded.failure) or module.ReadError(recorded.failure)

        async def release(consumed: bool) -> None:
            pass

        yield _served(module.AsyncTransportResponse, recorded, served(), release)
        return
    start = time.perf_counter()
    async with live_cm as live:
        capture = _capture(decision, live, start)

        async def release_live(consumed: bool) -> None:
            pass  # the live response is released as this block exits

        yield _teed(module.AsyncTransportResponse, live, capture.passing_async(live), release_live)


def _served(cls: Any, recorded: Response, chunks: Any, release: Any) -> Any:
    """lm15's (sync or async) ``TransportResponse`` for a recorded response."""
    headers = served_headers(recorded)
    return cls(
        status=recorded.status,
        reason="",
        headers=headers,
        http_version="HTTP/1.1",
        chunks=chunks,
        release=release,
    )


def _teed(cls: Any, live: Any, chunks: Any, release: Any) -> Any:
    """lm15's (sync or async) ``TransportResponse`` for a live one, its body passing ``chunks``."""
    return cls(
        status=live.status,
        reason=live.reason,
        headers=live.headers,
        http_version=live.http_version,
        chunks=chunks,
        release=release,
    )


def _patches(module: Any) -> list[Patch]:
    sync_stream, async_stream = _wrappers(module)
    return [
        Patch(module.StdlibTransport, "stream", sync_stream),
        Patch(module.StdlibAsyncTransport, "stream", async_stream),
    ]


# DSPy's public ways to call a model, refused inside a cassette when its lm15 moved (not intercepted)
_DSPY_CALLS = ("__call__", "acall")  # not forward: DSPy tells a plugin LM by an overridden forward


def _dspy_patches(dspy: Any) -> list[Patch]:
    """None while DSPy's lm15 is where ``MODULES`` waits for it; else its calls refused in a cassette."""
    if _internals.present("dspy.lm15"):
        return []
    refuse = _refusing(_internals.error("dspy.lm15"))
    lm = getattr(dspy, "LM", None)
    return [Patch(lm, name, refuse) for name in _DSPY_CALLS if hasattr(lm, name)]


def _refusing(error: SDKChangedError) -> Any:
    def call(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        if watching() and _active.session_for(None) is not None:
            raise error
        return wrapped(*args, **kwargs)

    return call


_library = LibraryPatches("lm15", MODULES, _patches)
_dspy = LibraryPatches("dspy", ("dspy",), _dspy_patches)


def on_import(module: Any) -> None:
    """An lm15 transports module was imported (the post-import hook ``providers.install`` registers)."""
    _library.on_import(module)


def on_dspy_import(module: Any) -> None:
    """DSPy was imported: its vendored lm15 must be where ``MODULES`` waits for it."""
    _dspy.on_import(module)


add_seam(Seam("lm15", _library.install, _library.uninstall))
add_seam(Seam("dspy", _dspy.install, _dspy.uninstall))
