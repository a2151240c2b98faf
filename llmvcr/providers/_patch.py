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
from typing import Any, overload

import wrapt


@overload
def resolve_attr(spec: str) -> tuple[Any, str]: ...
@overload
def resolve_attr(spec: str, *, missing_ok: bool) -> tuple[Any, str] | None: ...


def resolve_attr(spec: str, *, missing_ok: bool = False) -> tuple[Any, str] | None:
    """``"pkg.mod:Class.attr"`` -> ``(pkg.mod.Class, "attr")``, importing ``pkg.mod``.

    Every name is looked up, the last one too: a missing one raises ``AttributeError`` (or
    ``ImportError`` for the module), or gives None with ``missing_ok``.
    """
    module_name, _, dotted = spec.partition(":")
    try:
        owner: Any = importlib.import_module(module_name)
        *parents, attr = dotted.split(".")
        for name in parents:
            owner = getattr(owner, name)
        getattr(owner, attr)
    except (ImportError, AttributeError):
        if missing_ok:
            return None
        raise
    return owner, attr


class Patch:
    """One wrapt wrapper on ``owner.attr``, applied once and removed by its handle.

    A patch applied again over the same original reuses its wrapper object, and one that is
    still outermost is removed by putting the original back where it was: a cassette per test
    opens and closes six of them, and wrapt's path resolution was most of that cost. Anything
    else (a wrapper another library put on top, a method inherited from a base class) goes
    through wrapt.
    """

    def __init__(self, owner: Any, attr: str, wrapper: Callable[..., Any]) -> None:
        self.owner, self.attr, self.wrapper = owner, attr, wrapper
        self._handle: Any = None
        self._spare: Any = None  # the wrapper object of the last apply, for the same original

    @property
    def applied(self) -> bool:
        return self._handle is not None

    def apply(self) -> None:
        if self._handle is not None:
            return
        spare, own = self._spare, _own(self.owner)
        if spare is not None and own is not None and own.get(self.attr, _ABSENT) is spare.__wrapped__:
            setattr(self.owner, self.attr, spare)  # what wrapt would build: the same wrapper, same original
            self._handle = spare
            return
        was_own = own is not None and self.attr in own  # not a shadow over a base class's method
        self._handle = wrapt.wrap_function_wrapper(self.owner, self.attr, self.wrapper)
        self._spare = self._handle if was_own else None

    def undo(self) -> None:
        """Remove our wrapper wherever it now sits in the chain; what others added stays."""
        handle = self._handle
        if handle is None:
            return
        self._handle = None
        own = _own(self.owner)
        if handle is self._spare and own is not None and own.get(self.attr) is handle:
            setattr(self.owner, self.attr, handle.__wrapped__)  # still outermost: the original goes back
            return
        self._spare = None
        wrapt.unwrap_object(self.owner, self.attr, handle, missing_ok=True)


_ABSENT = object()


def _own(owner: Any) -> Any:
    """The owner's own attribute mapping (a class's ``__dict__``), or None when it has none."""
    try:
        return vars(owner)
    except TypeError:
        return None
