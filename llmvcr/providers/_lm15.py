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
import sys
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from ..cassette import Response
from ..sse import encode_events
from ._patch import Patch
from ._streams import Capture
from .base import Seam, add_seam, decide, installed, registered, unclaimed, watching
from .http import HttpProvider, body_bytes, request_from_wire

# lm15 on its own, and the copy DSPy ships
MODULES = ("lm15.transports", "dspy._vendor.lm15.transports")

_patches: dict[str, list[Patch]] = {}


class _Url(NamedTuple):
    host: str
    path: str


class _View(NamedTuple):
    """What ``HttpProvider.owns`` reads of a request."""

    url: _Url
    headers: dict[str, str]


def _owner(view: _View) -> HttpProvider | None:
    for provider in registered():
        if isinstance(provider, HttpProvider) and provider.owns(view):
            return provider
    return None


def _decide(request: Any) -> Any:
    """The decision for this request, or None to let it through untouched."""
    __tracebackhide__ = True
    if not watching():
        return None
    parts = urlsplit(request.url)
    view = _View(_Url(parts.hostname or "", parts.path), {k.lower(): v for k, v in request.headers})
    provider = _owner(view)
    if provider is None:
        unclaimed(request.method, request.url, view.url.host)
        return None
    wire = request_from_wire(
        request.method,
        request.url,
        request.headers,
        request.body or b"",
        meaning_headers=provider.meaning_headers,
    )
    return decide(provider, wire, None, host=view.url.host)


def _chunks(recorded: Response, speed: float | None) -> list[tuple[float, bytes]]:
    """``(seconds to wait first, bytes)``: a stream's events at ``replay_speed``, else at once."""
    if recorded.stream is None:
        content_type = recorded.headers.get("content-type", "application/json")
        return [(0.0, body_bytes(recorded.body, content_type))]
    out, last = [], 0.0
    for t, chunk in encode_events(recorded.stream):
        wait = 0.0
        if speed and isinstance(t, (int, float)):
            wait, last = max(0.0, (t - last) / 1000 / speed), t
        out.append((wait, chunk))
    return out


def _headers(recorded: Response) -> list[tuple[str, str]]:
    headers = [(k, v) for k, v in recorded.headers.items() if k not in ("content-length", "content-encoding")]
    if recorded.stream is not None and "content-type" not in recorded.headers:
        headers.append(("content-type", "text/event-stream"))
    return headers


def _capture(decision: Any, response: Any, start: float) -> Capture:
    headers = {k.lower(): v for k, v in response.headers}
    sse = "text/event-stream" in headers.get("content-type", "")
    capture = Capture(decision.record, response.status, headers, sse)
    capture.restart_clock(start)
    decision.on_close(lambda: capture.finish(truncated=True))
    return capture


def _wrappers(module: Any) -> tuple[Any, Any]:
    def served_chunks(recorded: Response, speed: float | None) -> Iterator[bytes]:
        for wait, chunk in _chunks(recorded, speed):
            if wait:
                time.sleep(wait)
            yield chunk
        if recorded.failure:
            raise module.ReadError(recorded.failure)

    def sync_stream(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        __tracebackhide__ = True
        request = args[0] if args else kwargs["request"]
        decision = _decide(request)
        if decision is None:
            return wrapped(*args, **kwargs)
        if decision.fault is not None:
            error = module.ReadTimeout if decision.fault.kind == "timeout" else module.ConnectError
            raise error(decision.fault.message)
        if decision.entry is not None:
            recorded = decision.entry.response
            return module.TransportResponse(
                status=recorded.status,
                reason="",
                headers=_headers(recorded),
                http_version="HTTP/1.1",
                chunks=served_chunks(recorded, decision.replay_speed),
                release=lambda consumed: None,
            )
        if not decision.recording:
            return wrapped(*args, **kwargs)
        start = time.perf_counter()
        live = wrapped(*args, **kwargs)
        capture = _capture(decision, live, start)
        return module.TransportResponse(
            status=live.status,
            reason=live.reason,
            headers=live.headers,
            http_version=live.http_version,
            chunks=capture.passing(live),
            release=lambda consumed: live.close(),
        )

    def async_stream(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        request = args[0] if args else kwargs["request"]
        decision = _decide(request)
        if decision is None:
            return wrapped(*args, **kwargs)
        return _async_answer(module, decision, wrapped(*args, **kwargs) if _goes_live(decision) else None)

    return sync_stream, async_stream


def _goes_live(decision: Any) -> bool:
    return decision.fault is None and decision.entry is None


@contextlib.asynccontextmanager
async def _async_answer(module: Any, decision: Any, live_cm: Any) -> AsyncIterator[Any]:
    """``async with transport.stream(request) as response``: the recorded or the teed live response."""
    if decision.fault is not None:
        error = module.ReadTimeout if decision.fault.kind == "timeout" else module.ConnectError
        raise error(decision.fault.message)
    if decision.entry is not None:
        recorded = decision.entry.response

        async def served() -> AsyncIterator[bytes]:
            for wait, chunk in _chunks(recorded, decision.replay_speed):
                if wait:
                    await asyncio.sleep(wait)
                yield chunk
            if recorded.failure:
                raise module.ReadError(recorded.failure)

        async def release(consumed: bool) -> None:
            pass

        yield module.AsyncTransportResponse(
            status=recorded.status,
            reason="",
            headers=_headers(recorded),
            http_version="HTTP/1.1",
            chunks=served(),
            release=release,
        )
        return
    start = time.perf_counter()
    async with live_cm as live:
        if not decision.recording:
            yield live
            return
        capture = _capture(decision, live, start)

        async def release_live(consumed: bool) -> None:
            pass  # the live response is released as this block exits

        yield module.AsyncTransportResponse(
            status=live.status,
            reason=live.reason,
            headers=live.headers,
            http_version=live.http_version,
            chunks=capture.passing_async(live),
            release=release_live,
        )


def install_lm15() -> None:
    """Wrap the lm15 transports that are imported (never import one ourselves)."""
    for name in MODULES:
        if name in sys.modules:
            _apply(sys.modules[name])


def _apply(module: Any) -> None:
    if module.__name__ in _patches:
        return
    sync_stream, async_stream = _wrappers(module)
    patches = [
        Patch(module.StdlibTransport, "stream", sync_stream),
        Patch(module.StdlibAsyncTransport, "stream", async_stream),
    ]
    for patch in patches:
        patch.apply()
    _patches[module.__name__] = patches


def on_import(module: Any) -> None:
    """An lm15 transports module was imported (the post-import hook ``providers.install`` registers)."""
    if installed():
        _apply(module)


def uninstall_lm15() -> None:
    for patches in _patches.values():
        for patch in reversed(patches):
            patch.undo()
    _patches.clear()


add_seam(Seam("lm15", install_lm15, uninstall_lm15))
