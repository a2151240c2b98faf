"""SDKs built on httpx2 (or httpx): the wire request as a ``Request``, and whose call it is.

Every call of these SDKs, whatever resource or helper made it (``create``, ``stream()``,
``parse()``, ``with_raw_response``, beta, Azure), ends in ``Client.send`` of the HTTP library
with the final wire request (``providers._send`` intercepts there). A call made inside the SDK's
funnel is that SDK's whatever its headers say; a request that reaches ``send`` outside every
funnel (a framework's own HTTP client speaking an SDK's wire format) is recognised by its
``User-Agent`` or host.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass, field
from typing import Any

from ..http_request import body_bytes, parse_body, request_from_wire, without_userinfo
from ._answer import build_request_wrapper
from ._funnel import funnel_wrappers
from ._patch import Patch, resolve_attr
from .base import package_version

__all__ = [
    "HttpProvider",
    "StainlessProvider",
    "body_bytes",
    "parse_body",
    "request_from_wire",
    "without_userinfo",
]


@dataclass
class HttpProvider:
    """An SDK whose calls reach the network through ``httpx2``/``httpx`` ``Client.send``.

    ``funnels`` name the SDK methods (``"module:Class.method"``, async ones apart) that every
    call passes above its retry loop; ``owns`` recognises a request sent outside them.
    """

    name: str
    package: str
    meaning_headers: tuple[str, ...] = ()
    sync_funnels: tuple[str, ...] = ()
    async_funnels: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()
    # the wire format, for requests from clients that are not the SDK's (litellm's own httpx client):
    # (path ending, header it must carry or "" for none)
    wire: tuple[tuple[str, str], ...] = ()
    # methods that build the HTTP request, wrapped to build it lighter in a replay-only cassette
    # (``providers._answer``); an SDK version without one keeps the wire path
    answer_builders: tuple[str, ...] = ()
    _patches: list[Patch] = field(default_factory=list, repr=False)
    _made: dict[str, tuple[Any, Patch]] = field(default_factory=dict, repr=False)  # reused by each install

    def sdk_version(self) -> str | None:
        return package_version(self.package.split(".")[0])

    def owns(self, request: Any) -> bool:
        """Whether a request sent outside the SDK's funnel is this SDK's: its wire format, or its host."""
        if request.url.host in self.hosts:
            return True
        path = request.url.path
        return any(
            path.endswith(end) and (not header or header in request.headers) for end, header in self.wire
        )

    @property
    def installed(self) -> bool:
        return bool(self._patches)

    def install(self) -> None:
        """Wrap the funnels of an SDK that is already imported (never import one ourselves)."""
        if self._patches or self.package not in sys.modules:
            return
        sync_funnel, async_funnel = funnel_wrappers(self.name)
        wanted = [(spec, sync_funnel, True) for spec in self.sync_funnels]
        wanted += [(spec, async_funnel, True) for spec in self.async_funnels]
        wanted += [(spec, build_request_wrapper(self), False) for spec in self.answer_builders]
        for spec, wrapper, required in wanted:
            patch = self._patch(spec, wrapper, required)
            if patch is not None:
                patch.apply()
                self._patches.append(patch)

    def _patch(self, spec: str, wrapper: Any, required: bool) -> Patch | None:
        module = sys.modules.get(spec.partition(":")[0])
        module_then, patch = self._made.get(spec, (None, None))
        if patch is None or module is None or module is not module_then:  # new, or reloaded
            try:
                owner, attr = resolve_attr(spec)
            except AttributeError:
                if required:
                    raise
                return None  # an SDK version without it keeps the wire path
            patch = Patch(owner, attr, wrapper)
            self._made[spec] = (sys.modules.get(spec.partition(":")[0]), patch)
        return patch

    def uninstall(self) -> None:
        while self._patches:
            self._patches.pop().undo()


class StainlessProvider(HttpProvider):
    """The shared adapter for Stainless-generated SDKs (anthropic, openai, groq, cerebras, ...).

    Their base client's ``request`` is the funnel; outside it their clients name themselves in
    ``User-Agent`` (``Anthropic/Python 2.16.0``).
    """

    def __init__(
        self,
        name: str,
        *,
        package: str,
        client_names: tuple[str, ...],
        meaning_headers: tuple[str, ...] = (),
        hosts: tuple[str, ...] = (),
        wire: tuple[tuple[str, str], ...] = (),
    ) -> None:
        super().__init__(
            name,
            package,
            meaning_headers,
            sync_funnels=(f"{package}._base_client:SyncAPIClient.request",),
            async_funnels=(f"{package}._base_client:AsyncAPIClient.request",),
            answer_builders=(f"{package}._base_client:BaseClient._build_request",),
            hosts=hosts,
            wire=wire,
        )
        self.client_names = client_names

    def replay_client(self, *, asynchronous: bool = False) -> Any:
        """A client of this SDK to serve a cassette: a placeholder key (no call leaves), no retries."""
        module = importlib.import_module(self.package)
        name = ("Async" if asynchronous else "") + self.client_names[0]
        return getattr(module, name)(api_key="llmvcr-replay", max_retries=0)

    def owns(self, request: Any) -> bool:
        agent = request.headers.get("user-agent", "")
        head = agent.split("/", 1)[0]
        return any(name in head for name in self.client_names) or super().owns(request)
