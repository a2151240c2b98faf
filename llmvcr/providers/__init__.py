"""The provider adapter protocol, the registry, and the switch that installs interception.

A provider is a small object that knows one SDK: how to put its interception in place and take
it away again, which requests are its own, and (for HTTP SDKs) which headers carry meaning.
``anthropic`` and ``openai`` (Azure included) ship built in, as instances of the shared
Stainless adapter; ``register_provider`` adds more. Nothing outside this package names an SDK.
"""

from __future__ import annotations

import importlib
import sys
import threading
from typing import Any, Protocol, runtime_checkable

import wrapt

from ._http import HttpProvider, StainlessProvider, install_http, uninstall_http


@runtime_checkable
class Provider(Protocol):
    """What every adapter offers.

    ``install`` is called when the first cassette of the process opens and ``uninstall`` when the
    last one closes; after ``uninstall`` the SDK must be exactly as it was (``install`` must not
    import an SDK that is not imported yet). Interception code, for each call:

    1. asks ``llmvcr.session.current_session()`` for the session that should answer it (None: let
       the call through untouched);
    2. turns the call into a ``llmvcr.cassette.Request`` (method, path, JSON body, query,
       meaningful headers; strings through ``session.redactor``);
    3. calls ``session.decide(name, request)``: a ``Decision`` whose ``entry`` is the recorded
       exchange to serve, or None to make the call live (it raises ``ReplayDivergence`` itself);
    4. serves ``entry.response`` (``status``, ``headers``, ``body`` or a ``stream`` of
       ``{"data", "t"?, "event"?}`` events, ``failure``) through the SDK's own parsing, or records
       the live outcome with ``session.record(name, request, response, decision.request_hash)``.

    ``HttpProvider`` does 1-4 at httpx2/httpx ``Client.send``; ``openai_ws`` and ``function`` show
    adapters for a WebSocket and for any Python function.
    """

    name: str

    def sdk_version(self) -> str | None:
        """The installed SDK's version for ``recorded_with``, or None when it is not installed."""

    def install(self) -> None: ...

    def uninstall(self) -> None: ...


_providers: dict[str, Provider] = {}
_lock = threading.RLock()
_installed = 0


def register_provider(provider: Provider | str) -> Provider:
    """Add an adapter; a string is an import path ``"pkg.mod:attr"`` naming one.

    >>> llmvcr.register_provider(StainlessProvider("groq", package="groq", client_names=("Groq",)))
    """
    if isinstance(provider, str):
        provider = _from_path(provider)
    if not isinstance(provider, Provider):
        raise ValueError(
            f"{provider!r} is not a provider: it needs name, sdk_version(), install(), uninstall()"
        )
    with _lock:
        old = _providers.get(provider.name)
        _providers[provider.name] = provider
        if _installed:
            if old is not None:
                old.uninstall()
            _install_one(provider)
    return provider


def _from_path(path: str) -> Provider:
    """``"stainless:groq"`` (or ``"stainless:cerebras.cloud.sdk:Cerebras"``) builds the shared Stainless
    adapter for that package; ``"pkg.mod:attr"`` names a provider object."""
    kind, _, rest = path.partition(":")
    if kind == "stainless" and rest:
        package, _, client = rest.partition(":")
        client_name = client or package.split(".")[0].capitalize()
        return StainlessProvider(package.split(".")[0], package=package, client_names=(client_name,))
    module_name, _, attr = path.partition(":")
    try:
        value: Provider = getattr(importlib.import_module(module_name), attr or "provider")
    except (ImportError, AttributeError) as err:
        raise ValueError(
            f"register_provider({path!r}): {err}; use 'stainless:<package>' or 'pkg.mod:attr'"
        ) from None
    return value


def unregister_provider(name: str) -> None:
    with _lock:
        provider = _providers.pop(name, None)
        if provider is not None and _installed:
            provider.uninstall()


def registered() -> list[Provider]:
    return list(_providers.values())


def http_providers() -> list[HttpProvider]:
    return [p for p in _providers.values() if isinstance(p, HttpProvider)]


def install() -> None:
    """Put every provider's interception in place (reference-counted across cassettes).

    Each call also catches up with what was imported since the last one; an SDK imported later
    still, while interception is in place, is patched by a post-import hook as it loads.
    """
    global _installed
    with _lock:
        _installed += 1
        install_http(http_providers)
        for provider in _providers.values():
            _install_one(provider)


_hooked: set[str] = set()


def _install_one(provider: Provider) -> None:
    package: Any = getattr(provider, "package", None)
    if isinstance(package, str) and package not in sys.modules and package not in _hooked:
        _hooked.add(package)
        wrapt.register_post_import_hook(lambda module: _late_install(module.__name__), package)
    provider.install()  # idempotent, and a no-op while its SDK is not imported


def _late_install(package: str) -> None:
    with _lock:
        if _installed:
            for provider in _providers.values():
                if getattr(provider, "package", None) == package:
                    provider.install()


def uninstall() -> None:
    global _installed
    with _lock:
        if _installed == 0:
            return
        _installed -= 1
        if _installed == 0:
            for provider in _providers.values():
                provider.uninstall()
            uninstall_http()


def installed() -> bool:
    return _installed > 0


def _builtin() -> None:
    from .anthropic import provider as anthropic_provider
    from .openai import provider as openai_provider
    from .openai_ws import provider as openai_ws_provider

    for p in (anthropic_provider, openai_provider, openai_ws_provider):
        _providers[p.name] = p


_builtin()

__all__ = [
    "HttpProvider",
    "Provider",
    "StainlessProvider",
    "install",
    "register_provider",
    "registered",
    "uninstall",
    "unregister_provider",
]
