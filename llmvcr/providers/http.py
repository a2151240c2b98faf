"""SDKs built on httpx2 (or httpx): the wire request as a ``Request``, and whose call it is.

Every call of these SDKs, whatever resource or helper made it (``create``, ``stream()``,
``parse()``, ``with_raw_response``, beta, Azure), ends in ``Client.send`` of the HTTP library
with the final wire request (``providers._httpx`` intercepts there). A call made inside the SDK's
funnel is that SDK's whatever its headers say; a request that reaches ``send`` outside every
funnel (a framework's own HTTP client speaking an SDK's wire format) is recognised by its
``User-Agent`` or host.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..cassette.values import Value
from ..errors import SDKChangedWarning
from ..wire.format import WireFormat
from ..wire.http_request import body_bytes, parse_body, request_from_wire, without_userinfo
from . import _internals
from ._answer import FAST_PATH, build_request_wrapper
from ._patch import Patch, resolve_attr
from .base import funnel_wrappers, package_version, reader_wrappers

_Provider = TypeVar("_Provider", bound="HttpProvider")

__all__ = [
    "HttpProvider",
    "StainlessProvider",
    "body_bytes",
    "parse_body",
    "request_from_wire",
    "without_userinfo",
]


@dataclass(eq=False, repr=False)
class HttpProvider(Value):
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
    _patches: list[Patch] = field(default_factory=list, repr=False)
    _on: bool = field(default=False, repr=False)  # installed, with or without funnels to wrap
    # (id of owner, name) -> (owner, its patch), reused by each install
    _made: dict[tuple[int, str], tuple[Any, Patch]] = field(default_factory=dict, repr=False)

    @classmethod
    def speaking(cls: type[_Provider], fmt: WireFormat, package: str, **more: Any) -> _Provider:
        """The adapter of the SDK ``package`` whose calls are ``fmt``'s: its name, the headers that
        change a call's meaning, its API host and its paths, all from the one wire description."""
        return cls(
            name=fmt.name,
            package=package,
            meaning_headers=fmt.meaning_headers,
            hosts=(fmt.api_host,),
            wire=fmt.seam_paths,
            **more,
        )

    def sdk_version(self) -> str | None:
        return package_version(self.package.split(".")[0])

    def adapted(self, client: Any) -> tuple[Any, ...] | None:
        """The objects whose calls are ``client``'s, when ``client`` is this SDK's (None otherwise).

        ``create_replay_adapter`` binds each of them: a funnel sees the object that makes the call,
        which for some SDKs is not the client the user holds.
        """
        module = type(client).__module__
        root = self.package.split(".")[0]
        return (
            (client,)
            if module == self.package or module.startswith((self.package + ".", root + "."))
            else None
        )

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
        return self._on

    def install(self) -> None:
        """Wrap the funnels of an SDK that is already imported (never import one ourselves).

        A funnel a release renamed is left out (the HTTP seam still sees the SDK's calls, by
        ``owns``); a patch that fails to apply undoes the ones before it, so nothing is left half done.
        """
        if self._on or self.package not in sys.modules:
            return
        self._on = True
        for owner, attr, wrapper in self.targets():
            key = (id(owner), attr)
            made = self._made.get(key)
            if made is None or made[0] is not owner:  # new, or its module was reloaded
                made = self._made[key] = (owner, Patch(owner, attr, wrapper))
            try:
                made[1].apply()
            except BaseException:
                self.uninstall()
                raise
            self._patches.append(made[1])

    def targets(self) -> list[tuple[Any, str, Any]]:
        """``(owner, name, wrapt wrapper)`` for each method to wrap; a funnel that is not there is
        skipped with an ``SDKChangedWarning``."""
        sync_funnel, async_funnel = funnel_wrappers(self.name)
        out = []
        for specs, wrapper in ((self.sync_funnels, sync_funnel), (self.async_funnels, async_funnel)):
            for spec in specs:
                found = resolve_attr(spec, missing_ok=True)
                if found is None:
                    if spec in _said:
                        continue
                    _said.add(spec)
                    warnings.warn(
                        f"llmvcr: {spec} is not there ({self.package} {self.sdk_version()}); the "
                        f"{self.name} provider sees its calls at the HTTP seam only",
                        SDKChangedWarning,
                        stacklevel=3,
                    )
                    continue
                out.append((*found, wrapper))
        return out

    def uninstall(self) -> None:
        self._on = False
        while self._patches:
            self._patches.pop().undo()


_said: set[str] = set()  # a user's funnel spec that was not there, warned about once


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
        super().__init__(name, package, meaning_headers, hosts=hosts, wire=wire)
        self.client_names = client_names

    def targets(self) -> list[tuple[Any, str, Any]]:
        """The base client's ``request`` (sync and async) as funnels, and ``_build_request`` for the
        fast path when every name it reads is there; what a release renamed is left out (reported
        once by the registry)."""
        sdk = self.package
        if not _internals.present("stainless.module", sdk=sdk):
            return []
        sync_funnel, async_funnel = funnel_wrappers(self.name)
        out = []
        for key, wrapper in (
            ("stainless.sync_request", sync_funnel),
            ("stainless.async_request", async_funnel),
        ):
            found = _internals.resolve(key, sdk=sdk)
            if found is not None:
                out.append((*found, wrapper))
        sync_reader, async_reader = reader_wrappers()  # an llmvcr error met reading a stream leaves as itself
        for key, reader in (
            ("stainless.stream_events", sync_reader),
            ("stainless.async_stream_events", async_reader),
        ):
            found = _internals.resolve(key, sdk=sdk)
            if found is not None:
                out.append((*found, reader))
        if all([_internals.present(key, sdk=sdk) for key in FAST_PATH]):  # a list: each missing one is named
            owner, attr = _internals.resolve("stainless.build_request", sdk=sdk) or (None, "")
            dumps = _internals.resolve("stainless.dumps", sdk=sdk)
            if owner is not None and dumps is not None:
                out.append((owner, attr, build_request_wrapper(self, getattr(*dumps))))
        return out

    def replay_client(self, *, asynchronous: bool = False) -> Any:
        """A client of this SDK to serve a cassette: a placeholder key (no call leaves), no retries."""
        module = importlib.import_module(self.package)
        name = ("Async" if asynchronous else "") + self.client_names[0]
        return getattr(module, name)(api_key="llmvcr-replay", max_retries=0)

    def owns(self, request: Any) -> bool:
        agent = request.headers.get("user-agent", "")
        head = agent.split("/", 1)[0]
        return any(name in head for name in self.client_names) or super().owns(request)
