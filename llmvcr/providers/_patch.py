"""Reversible patches with wrapt handles: undo removes exactly the wrapper llmvcr put in place.

Another library may wrap the same method while a cassette is open (an APM agent, an
OpenTelemetry instrumentation). Undoing by ``setattr(owner, name, original)`` would silently drop
its wrapper; ``wrapt.unwrap_object`` with the handle ``wrap_function_wrapper`` returned splices
out only ours, and restores a method patched through a subclass on the class that defines it,
leaving no shadow in the subclass.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import wrapt


def resolve_attr(spec: str) -> tuple[Any, str]:
    """``"pkg.mod:Class.attr"`` -> ``(pkg.mod.Class, "attr")``, importing ``pkg.mod``."""
    module_name, _, dotted = spec.partition(":")
    owner: Any = importlib.import_module(module_name)
    *parents, attr = dotted.split(".")
    for name in parents:
        owner = getattr(owner, name)
    return owner, attr


class Patch:
    """One wrapt wrapper on ``owner.attr``, applied once and removed by its handle."""

    def __init__(self, owner: Any, attr: str, wrapper: Callable[..., Any]) -> None:
        self.owner, self.attr, self.wrapper = owner, attr, wrapper
        self._handle: Any = None

    @property
    def applied(self) -> bool:
        return self._handle is not None

    def apply(self) -> None:
        if self._handle is None:
            self._handle = wrapt.wrap_function_wrapper(self.owner, self.attr, self.wrapper)

    def undo(self) -> None:
        """Remove our wrapper wherever it now sits in the chain; what others added stays."""
        if self._handle is not None:
            wrapt.unwrap_object(self.owner, self.attr, self._handle, missing_ok=True)
            self._handle = None
