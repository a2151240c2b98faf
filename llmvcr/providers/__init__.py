"""Providers: the adapters that know one SDK each, their registry, and ``decide()``.

A provider puts its interception in place and takes it away again, and for each call asks
:func:`decide` what to do (see ``providers.base`` for the contract). ``anthropic`` and
``openai`` (Azure included) ship built in, as instances of the shared Stainless adapter;
``register_provider`` adds more. Nothing outside this package names an SDK.
"""

from __future__ import annotations

from ..session import Decision
from . import (
    _httpx,  # noqa: F401 - adds the httpx seam
    base,
)
from .anthropic import provider as anthropic_provider
from .base import Provider, decide, installed, registered, watching
from .google import provider as google_provider
from .http import HttpProvider, StainlessProvider, request_from_wire
from .openai import provider as openai_provider
from .openai_ws import provider as openai_ws_provider
from .registry import SEAM_HOOKS, install, register_provider, uninstall, unregister_provider, watch_imports

for _builtin in (anthropic_provider, openai_provider, openai_ws_provider, google_provider):
    base.put(_builtin)

__all__ = [
    "SEAM_HOOKS",
    "Decision",
    "HttpProvider",
    "Provider",
    "StainlessProvider",
    "decide",
    "install",
    "installed",
    "register_provider",
    "registered",
    "request_from_wire",
    "uninstall",
    "unregister_provider",
    "watch_imports",
    "watching",
]
