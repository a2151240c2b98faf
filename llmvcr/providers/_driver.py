"""The one seam driver: what intercepting a request means, whatever HTTP library sends it.

httpx2/httpx (``providers._httpx``), aiohttp (``providers._aiohttp``) and lm15 (``providers._lm15``)
each supply only their translations: the wire request as a ``Request`` record and as what
``HttpProvider.owns`` reads, a recorded ``Response`` as the library's own response, a live one
as bytes for a ``Capture``, and the library's error classes for an injected fault. Everything else
happens here, once: whose call it is (the SDK funnel it runs in, else a provider's ``owns``), the
unclaimed-request policy, ``decide``, carrying an llmvcr error past the SDK's retry loop, the
fault, the capture of a live answer, and the seams' install state (the pacing of a served stream
and the headers never served are ``_streams.schedule`` and ``served_headers``).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

from ..cassette.entries import Request
from ..errors import LLMVCRError
from ..faults import Fault
from ..session import Decision
from ._patch import Patch
from ._streams import Capture
from .base import carry, current_caller, decide, installed, lookup, registered, unclaimed
from .http import HttpProvider
from .placeholder_keys import carries_placeholder, refuse_recording


def owner(view: Any) -> HttpProvider | None:
    """The provider whose call this is: the SDK funnel it runs in, else the first whose ``owns``
    recognises ``view`` (anything with ``url.host``, ``url.path`` and ``headers``)."""
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


def decision(
    view: Any,
    method: str,
    url: str,
    record: Callable[[HttpProvider], Request],
    fault: Callable[[Fault], BaseException],
    *,
    replay_only: bool = False,
    can_serve: bool = False,
) -> Decision | None:
    """What to do with one request: a decision to serve or record, or None to let it through.

    ``record`` builds the request's record for its provider; ``fault`` is the library's own
    exception for an injected timeout or dropped connection, raised here. A request built for a
    replay-only cassette (``replay_only``) that no entry answers is refused, never sent. A request
    no provider claims is answered from the cassette when it recorded it (a foreign cassette's
    non-LLM call) and the seam ``can_serve`` a plain recorded response.
    """
    __tracebackhide__ = True  # pytest shows the user's frame and the message
    provider = owner(view)
    host = view.url.host or ""
    try:
        if provider is None:
            recorded = unclaimed(method, url, host, can_serve=can_serve)
            if recorded is None:
                return None
            return Decision(recorded.provider, recorded.request, "", entry=recorded)
        caller = current_caller()
        decided = decide(provider, record(provider), caller.client if caller else None, host=host)
        if replay_only and decided.entry is None and decided.fault is None:
            raise LLMVCRError(
                f"llmvcr: {method} {url} was made inside a replay-only cassette that was closed before "
                f"the request was sent; keep the cassette open until the call returns"
            )
        if decided.recording and carries_placeholder(getattr(view, "headers", None), url):
            raise refuse_recording(provider.name, f"{method} {url}")  # never sent with a fake key
    except LLMVCRError as err:
        raise carry(err) from None
    if decided.fault is not None:
        raise fault(decided.fault)
    if decided.entry is None and not decided.recording:
        return None
    return decided


def capture(
    decision: Decision, status: int, headers: Mapping[str, str], start: float, *, sse: bool
) -> Capture:
    """The capture of a live answer into ``decision.record``, its clock started when the request was
    sent; a caller that stops reading leaves it marked truncated when the cassette closes."""
    # an error is kept as its body whatever its type says: Gemini labels the JSON error it answers a
    # refused stream with ``text/event-stream``, and parsed as events it would be lost
    taken = Capture(decision.record, status, headers, sse and status < 400)
    taken.restart_clock(start)
    decision.on_close(lambda: taken.finish(truncated=True))
    return taken


class LibraryPatches:
    """One HTTP library's wrappers, applied all or none while interception is in place.

    ``patches(module)`` builds the library module's patches (once per module object: a reloaded
    module gets new ones); they go on at install, or as the module loads while ``active()`` says
    interception is in place, and come off together.
    """

    def __init__(
        self,
        name: str,
        modules: tuple[str, ...],
        patches: Callable[[Any], list[Patch]],
        active: Callable[[], bool] = installed,
    ) -> None:
        self.name, self.modules, self._build, self._active = name, modules, patches, active
        self._made: dict[str, tuple[Any, list[Patch]]] = {}
        self._on: list[Patch] = []
        self._lock = threading.RLock()  # a post-import hook may fire while an install imports

    def install(self) -> None:
        """Wrap every one of the library's modules that is imported (never import one ourselves)."""
        for name in self.modules:
            module = sys.modules.get(name)
            if module is not None:
                self.on_import(module)

    def on_import(self, module: Any) -> None:
        """``module`` was imported (or is, at install): wrap it while interception is in place."""
        with self._lock:
            if not self._active():
                return
            made = self._made.get(module.__name__)
            if made is None or made[0] is not module:
                made = self._made[module.__name__] = (module, self._build(module))
            if any(patch.applied for patch in made[1]):
                return
            done: list[Patch] = []
            try:
                for patch in made[1]:
                    patch.apply()
                    done.append(patch)
            except BaseException:
                for patch in reversed(done):
                    patch.undo()
                raise
            self._on.extend(done)

    def uninstall(self) -> None:
        with self._lock:
            on, self._on = self._on, []
            for patch in reversed(on):
                patch.undo()
