"""The provider registry: adding and removing adapters, and putting every one's interception in place
and taking it away again (reference-counted across cassettes)."""

from __future__ import annotations

import sys
from typing import Any

from . import _internals, base
from ._patch import resolve_attr
from .base import Provider, installed, registered
from .http import StainlessProvider

# HTTP libraries an SDK may send through, and the hook (``module:function``) of the llmvcr module
# that wraps each. The module is imported by wrapt when its library is: never in a process
# without aiohttp or lm15, and never at ``import llmvcr``.
SEAM_HOOKS = {
    "httpx2": "llmvcr.providers._httpx:on_import",
    "httpx": "llmvcr.providers._httpx:on_import",
    "aiohttp": "llmvcr.providers._aiohttp:on_import",
    "lm15.transports": "llmvcr.providers._lm15:on_import",
    _internals.where("dspy.lm15"): "llmvcr.providers._lm15:on_import",
    "dspy": "llmvcr.providers._lm15:on_dspy_import",  # checks its lm15 is where the line above waits
    "mcp": "llmvcr.mcp.seam:on_import",  # MCP client sessions (a room above providers, named lazily)
}


def register_provider(provider: Provider | str) -> Provider:
    """Add an adapter; a string is an import path ``"pkg.mod:attr"`` naming one.

    >>> llmvcr.register_provider(StainlessProvider("groq", package="groq", client_names=("Groq",)))
    >>> llmvcr.register_provider("stainless:groq")          # the same, for a Stainless-generated SDK
    """
    if isinstance(provider, str):
        provider = _from_path(provider)
    if not isinstance(provider, Provider):
        raise ValueError(
            f"{provider!r} is not a provider: it needs name, sdk_version(), install(), uninstall()"
        )
    with base.lock:
        old = base.put(provider)
        if installed():
            if old is not None and old is not provider:
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
    spec = path if ":" in path else path + ":provider"
    try:
        owner, attr = resolve_attr(spec)
        value: Provider = getattr(owner, attr)
    except (ImportError, AttributeError) as err:
        raise ValueError(
            f"register_provider({path!r}): {err}; use 'stainless:<package>' or 'pkg.mod:attr'"
        ) from None
    return value


def unregister_provider(name: str) -> None:
    """Remove the adapter named ``name``, undoing its interception if it is in place."""
    with base.lock:
        provider = base.pop(name)
        if provider is not None and installed():
            provider.uninstall()


def install() -> None:
    """Put every provider's interception in place (reference-counted across cassettes).

    Each call also catches up with what was imported since the last one; an SDK imported later
    still, while interception is in place, is patched by a post-import hook as it loads.
    """
    with base.lock:
        first = not installed()
        base.count_install(1)
        try:
            watch_imports()
            for seam in base.seams():
                seam.install()
            for provider in registered():
                _install_one(provider)
        except BaseException:
            # nothing half applied: the count goes back, and a first install is undone whole
            if base.count_install(-1) == 0 and first:
                _uninstall_all()
            raise


def watch_imports() -> None:
    """Wait for the HTTP libraries and the SDKs of the registered providers to be imported.

    ``install`` calls it; the pytest plugin calls it at start-up too, so that wrapt's import hook
    sits in ``sys.meta_path`` before any test: an in-process ``pytester`` run restores
    ``sys.meta_path`` as it found it, and would take a hook first put there during the run away
    from the rest of the session. A hook does nothing while interception is not in place.
    """
    for target, hook in SEAM_HOOKS.items():  # runs now if the library is imported, else as it loads
        base.when_imported(target, hook)
    for provider in registered():
        package = getattr(provider, "package", None)
        if isinstance(package, str) and package not in sys.modules:
            base.when_imported(package, _late_install_module, "late_install")


def _install_one(provider: Provider) -> None:
    package = getattr(provider, "package", None)
    if isinstance(package, str) and package not in sys.modules:
        base.when_imported(package, _late_install_module, "late_install")
    provider.install()  # idempotent, and a no-op while its SDK is not imported


def _late_install_module(module: Any) -> None:
    _late_install(module.__name__)


def _late_install(package: str) -> None:
    with base.lock:
        if installed():
            for provider in registered():
                if getattr(provider, "package", None) == package:
                    provider.install()


def uninstall() -> None:
    """Release one ``install``; the last release leaves every SDK exactly as it was."""
    with base.lock:
        if not installed():
            return
        if base.count_install(-1) == 0:
            _uninstall_all()


def _uninstall_all() -> None:
    for provider in registered():
        provider.uninstall()
    for seam in base.seams():
        seam.uninstall()
