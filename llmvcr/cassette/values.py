"""``==``, ``hash`` and ``repr`` for llmvcr's dataclasses, written once instead of once per class.

``@dataclass`` writes these methods as source text and compiles them for every class when its
module is imported: on Python 3.11 that was 5 of the 30 ms that ``import llmvcr.pytest_plugin``
cost (22 classes). A class declared ``@dataclass(eq=False, repr=False)`` over :class:`Value` (or
:class:`FrozenValue`, for a frozen one) inherits them instead. They answer as the generated ones
do: the fields with ``compare`` (``repr``) in their order, equal only to an instance of the very
same class, a mutable value unhashable. Each is a little slower a call, and none is on a
replayed call's path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from operator import attrgetter
from typing import Any

__all__ = ["FrozenValue", "Value"]

_keys: dict[type, Callable[[Any], tuple[Any, ...]]] = {}
_shown: dict[type, tuple[str, ...]] = {}


def _key(value: Any) -> tuple[Any, ...]:
    """The fields that ``==`` and ``hash`` compare, as a tuple (a getter made once per class)."""
    get = _keys.get(type(value))
    if get is None:
        names = [f.name for f in fields(value) if f.compare]
        if len(names) == 1:
            one = attrgetter(names[0])
            get = lambda v: (one(v),)  # noqa: E731  (attrgetter of one name gives the value itself)
        else:
            get = attrgetter(*names) if names else (lambda v: ())
        _keys[type(value)] = get
    return get(value)


class _ByField:
    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return _key(self) == _key(other)

    def __repr__(self) -> str:
        shown = _shown.get(type(self))
        if shown is None:
            shown = _shown[type(self)] = tuple(f.name for f in fields(self) if f.repr)  # type: ignore[arg-type]
        inside = ", ".join(f"{name}={getattr(self, name)!r}" for name in shown)
        return f"{type(self).__qualname__}({inside})"


class Value(_ByField):
    """The base of a mutable llmvcr dataclass: ``==`` and ``repr`` by field; not hashable."""

    __slots__ = ()
    __hash__ = None  # type: ignore[assignment]  # as @dataclass leaves a mutable class with ==


class FrozenValue(_ByField):
    """The base of a frozen llmvcr dataclass: ``==``, ``repr`` and ``hash`` by field."""

    __slots__ = ()

    def __hash__(self) -> int:
        return hash(_key(self))
