"""The HTTP seam: ``Client.send``/``AsyncClient.send`` of httpx2 and of legacy httpx.

Only httpx's translations live here; the driver (``providers._driver``) does the rest. The wire
request's record is read at ``send`` (``_headers.record_of``), or was built in the SDK's funnel
(``providers._answer``); a recorded response is served as httpx's own (``_streams.serve``); a
live one is teed into a capture as the caller reads it (``_streams.tee``); an injected fault is
httpx's ``ReadTimeout`` or ``ConnectError``. The sync and async wrappers differ only in awaits.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from ..faults import Fault
from ..session import Decision
from ._answer import PREMADE
from ._driver import LibraryPatches, capture, decision
from ._headers import record_of
from ._patch import Patch
from ._streams import serve, tee
from .base import Seam, add_seam, outer_call, watching
from .http import HttpProvider, without_userinfo


def _response_headers(response: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in response.headers.multi_items():
        out[name] = f"{out[name]}, {value}" if name in out else value
    return out


def _decide(module: Any, args: Any, kwargs: Any) -> tuple[Decision, Any] | None:
    """The decision for this send, or None to let it through untouched."""
    __tracebackhide__ = True  # pytest shows the user's frame and the message
    if not watching():
        return None
    request = args[0] if args else kwargs["request"]
    premade = request.extensions.get(PREMADE)
    fits = premade is not None and premade.still_fits(request)

    def record(provider: HttpProvider) -> Any:
        # built in the funnel from the same pieces (providers._answer), unless changed since
        return premade.request if fits else record_of(request, provider)

    def fault(fault: Fault) -> BaseException:
        error = module.ReadTimeout if fault.kind == "timeout" else module.ConnectError
        return error(fault.message, request=request)  # type: ignore[no-any-return]

    url = without_userinfo(str(request.url))
    decided = decision(
        request, request.method, url, record, fault, replay_only=premade is not None, can_serve=True
    )
    return None if decided is None else (decided, request)


def _capture(
    module: Any, decided: Decision, response: Any, stream: bool, start: float, is_async: bool
) -> Any:
    sse = stream and "text/event-stream" in response.headers.get("content-type", "")
    taken = capture(decided, response.status_code, _response_headers(response), start, sse=sse)
    if stream and not _already_read(module, response):
        response.stream = tee(module, response.stream, taken, is_async)
    else:  # a transport that answers with the whole body (MockTransport) leaves nothing to stream
        taken.feed(response.content)
        taken.finish()
    return response


def _already_read(module: Any, response: Any) -> bool:
    """Whether ``response`` came back from the transport with its body (anthropic 2.17 sends every
    request with ``stream=True`` and reads it after; an in-memory transport's body never streams)."""
    try:
        response.content  # noqa: B018 - raises ResponseNotRead while the body is still on the wire
    except module.ResponseNotRead:
        return False
    return True


def _wrappers(module: Any) -> tuple[Callable[..., Any], Callable[..., Awaitable[Any]]]:
    def sync_send(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        __tracebackhide__ = True  # pytest shows the user's frame and the message
        decided = _decide(module, args, kwargs)
        if decided is None:
            return wrapped(*args, **kwargs)
        decision, request = decided
        stream = kwargs.get("stream", False)
        if decision.entry is not None:
            response = serve(module, decision.entry.response, request, decision.replay_speed, False)
            if not stream:
                response.read()
            return response
        request.headers["accept-encoding"] = "identity"
        start = time.perf_counter()
        with outer_call():  # a transport below (litellm's aiohttp one) is part of this call
            response = wrapped(*args, **kwargs)
        return _capture(module, decision, response, stream, start, False)

    async def async_send(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        __tracebackhide__ = True  # pytest shows the user's frame and the message
        decided = _decide(module, args, kwargs)
        if decided is None:
            return await wrapped(*args, **kwargs)
        decision, request = decided
        stream = kwargs.get("stream", False)
        if decision.entry is not None:
            response = serve(module, decision.entry.response, request, decision.replay_speed, True)
            if not stream:
                await response.aread()
            return response
        request.headers["accept-encoding"] = "identity"
        start = time.perf_counter()
        with outer_call():
            response = await wrapped(*args, **kwargs)
        return _capture(module, decision, response, stream, start, True)

    return sync_send, async_send


def _patches(module: Any) -> list[Patch]:
    sync_send, async_send = _wrappers(module)
    return [Patch(module.Client, "send", sync_send), Patch(module.AsyncClient, "send", async_send)]


MODULES = ("httpx2", "httpx")
_library = LibraryPatches("httpx", MODULES, _patches)


def on_import(module: Any) -> None:
    """httpx2 or httpx was imported (the post-import hook ``providers.install`` registers)."""
    _library.on_import(module)


add_seam(Seam("httpx", _library.install, _library.uninstall))
