"""The HTTP seam: ``Client.send``/``AsyncClient.send`` of httpx2 and of legacy httpx.

One request, top to bottom: find whose call it is (the SDK funnel it runs in, else ``owns``),
turn the wire request into a ``Request`` (``_headers.record_of``), ask ``base.decide``, then
serve the recorded response (``_streams.serve``) or send it and capture what comes back
(``_streams.capture``, ending in ``decision.record``). The sync and async wrappers share every
step but the awaits.
"""

from __future__ import annotations

import importlib
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import wrapt

from ..errors import LLMVCRError
from ..session import Decision
from ._answer import PREMADE
from ._funnel import carry, current_caller
from ._headers import record_of
from ._patch import Patch
from ._streams import Capture, serve, tee
from .base import decide, lookup, outer_call, registered, unclaimed, watching
from .http import HttpProvider, without_userinfo

_patches: list[Patch] = []
_patched_modules: set[str] = set()
_hooked_modules: set[str] = set()
_active = False
_lock = threading.RLock()  # a post-import hook may fire while an install imports


def _http_providers() -> list[HttpProvider]:
    return [p for p in registered() if isinstance(p, HttpProvider)]


def _owner(request: Any) -> HttpProvider | None:
    caller = current_caller()
    if caller is not None:
        provider = lookup(caller.provider)
        return provider if isinstance(provider, HttpProvider) else None
    for provider in _http_providers():
        if provider.owns(request):
            if not provider.installed:
                provider.install()  # the SDK was imported after the cassette opened
            return provider
    return None


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
    provider = _owner(request)
    if provider is None:
        try:
            url = without_userinfo(str(request.url))
            recorded = unclaimed(request.method, url, request.url.host, can_serve=True)
        except LLMVCRError as err:
            raise carry(err) from None
        if recorded is None:
            return None
        return Decision(recorded.provider, recorded.request, "", entry=recorded), request
    caller = current_caller()
    premade = request.extensions.get(PREMADE)
    if premade is not None and premade.still_fits(request):
        wire = premade.request  # built in the funnel from the same pieces (providers._answer)
    else:
        wire = record_of(request, provider)
    try:
        decision = decide(provider, wire, caller.client if caller else None, host=request.url.host)
        if premade is not None and decision.entry is None and decision.fault is None:
            raise LLMVCRError(  # a request built for replay alone never goes on the wire
                f"llmvcr: {request.method} {without_userinfo(str(request.url))} was made inside a "
                f"replay-only cassette that was closed before the request was sent; keep the cassette "
                f"open until the call returns"
            )
    except LLMVCRError as err:
        raise carry(err) from None
    fault = decision.fault
    if fault is not None:
        error = module.ReadTimeout if fault.kind == "timeout" else module.ConnectError
        raise error(fault.message, request=request)
    if decision.entry is None and not decision.recording:
        return None
    return decision, request


def _capture(
    module: Any, decision: Decision, response: Any, stream: bool, start: float, is_async: bool
) -> Any:
    sse = stream and "text/event-stream" in response.headers.get("content-type", "")
    capture = Capture(decision.record, response.status_code, _response_headers(response), sse)
    capture.restart_clock(start)
    if stream and not _already_read(module, response):
        response.stream = tee(module, response.stream, capture, is_async)
        decision.on_close(lambda: capture.finish(truncated=True))
    else:  # a transport that answers with the whole body (MockTransport) leaves nothing to stream
        capture.feed(response.content)
        capture.finish()
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


def install_http() -> None:
    """Wrap ``send`` of httpx2 and of legacy httpx, now or when it loads (only what is not wrapped yet)."""
    global _active
    with _lock:
        _active = True
        for module_name in ("httpx2", "httpx"):
            if module_name in _patched_modules:
                continue
            if module_name == "httpx" and module_name not in sys.modules:
                if module_name not in _hooked_modules:  # never import it ourselves; patch it as it loads
                    _hooked_modules.add(module_name)
                    wrapt.register_post_import_hook(_on_import, module_name)
                continue
            try:
                module = importlib.import_module(module_name)
            except ImportError:
                continue
            _patch_send(module)


_made: dict[str, tuple[Any, list[Patch]]] = {}  # module name -> (module, its patches), reused by each install


def _patch_send(module: Any) -> None:
    made = _made.get(module.__name__)
    if made is None or made[0] is not module:  # first install, or the module was reloaded
        sync_send, async_send = _wrappers(module)
        pair = ((module.Client, sync_send), (module.AsyncClient, async_send))
        made = _made[module.__name__] = (module, [Patch(owner, "send", wrapper) for owner, wrapper in pair])
    for patch in made[1]:
        patch.apply()
        _patches.append(patch)
    _patched_modules.add(module.__name__)


def _on_import(module: Any) -> None:
    with _lock:
        if _active and module.__name__ not in _patched_modules:
            _patch_send(module)


def uninstall_http() -> None:
    global _active
    with _lock:
        _active = False
        while _patches:
            _patches.pop().undo()
        _patched_modules.clear()
