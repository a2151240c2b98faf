"""A subcommand of ``llmvcr`` as data: one :class:`Command` row, read by ``llmvcr.cli.build_parser``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

Arg = tuple[tuple[str, ...], dict[str, Any]]


class Command(NamedTuple):
    """A subcommand, as :func:`build_parser` reads it."""

    name: str
    run: Callable[..., int]  # (args, out) -> exit status
    help: str  # one line, in ``llmvcr --help``
    description: str  # the paragraph of ``llmvcr NAME --help``
    arguments: list[Arg]


def arg(*names: str, **kwargs: Any) -> Arg:
    """One ``add_argument`` call of a subcommand, as data."""
    return names, kwargs
