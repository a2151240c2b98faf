"""Matching a cassette as its recorder matched it, and the calls whose request has drifted since.

A vcrpy or pytest-recording cassette was matched on method and URI (vcrpy's default, or the
``match_on`` of the project's ``vcr_config``), never on the body. Real suites' cassettes are often
stale against today's code (``max_tokens`` raised since), so comparing bodies would fail tests
that have passed for months. Such a cassette, read in place or converted, is matched the way it
was recorded until it is re-recorded; each call whose request differs from the recording is kept
as a :class:`StaleCall` for the end-of-run report (``on_stale="fail"`` makes it an error instead).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..cassette import Cassette, Entry, Request
from ..cassette.values import FrozenValue
from ..errors import ReplayDivergence
from .diff import DiffRow, format_rows, structural_diff
from .rules import Fingerprinter, MatcherSpec, Normalised

VCRPY_MATCH_ON: tuple[str, ...] = ("method", "scheme", "host", "port", "path", "query")
# the converters' names of cassettes written by vcrpy or a tool built on it
VCRPY_FORMATS = frozenset({"vcrpy", "pydantic-ai", "cassetter", "langchain-gz"})
# vcrpy matchers with no llmvcr counterpart: an SDK client talks to one host, so they never tell
# two of its calls apart
_SAME_FOR_ONE_CLIENT = frozenset({"scheme", "host", "port"})
_SAME_NAME = frozenset({"method", "query", "headers", "body"})
VCRPY_ONLY = frozenset({"uri", "raw_body"}) | _SAME_FOR_ONE_CLIENT


def path_without_query(r: Normalised) -> str:
    """vcrpy's ``path`` matcher: the path alone (llmvcr's ``path`` includes the query)."""
    return str(r["path"])


def from_vcrpy_names(names: Iterable[Any]) -> tuple[MatcherSpec, ...]:
    """llmvcr matchers for vcrpy's ``match_on`` names (``uri`` -> method-free path and query).

    A name vcrpy does not ship (one a project registered with ``vcr.register_matcher``) raises
    ``ValueError`` naming it: llmvcr cannot know what it compared.
    """
    out: list[MatcherSpec] = []
    for name in names:
        if callable(name):
            out.append(name)
        elif name == "uri":
            out.append("path")
        elif name == "path":
            out.append(path_without_query)
        elif name == "raw_body":
            out.append("body")
        elif name in _SAME_NAME:
            out.append(str(name))
        elif name not in _SAME_FOR_ONE_CLIENT:
            raise ValueError(
                f"match_on names {name!r}, which is neither a vcrpy matcher nor an llmvcr one; pass a "
                f"callable taking the normalised request instead"
            )
    return tuple(out) or ("method",)


def is_vcrpy_match_on(names: Any) -> bool:
    """True when a ``match_on`` uses a name only vcrpy knows (a ``vcr_config`` renamed ``llmvcr_config``)."""
    if isinstance(names, str):
        names = (names,)
    try:
        return any(isinstance(n, str) and n in VCRPY_ONLY for n in names)
    except TypeError:
        return False


def recorded_match_on(cassette: Cassette, configured: tuple[str, ...] | None) -> tuple[str, ...] | None:
    """The vcrpy ``match_on`` a cassette was recorded under, or None when llmvcr recorded it.

    The file's own ``metadata.recorded_match_on`` first, then the project's configuration
    (``configured``: its ``vcr_config``), then vcrpy's default.
    """
    stored = cassette.metadata.get("recorded_match_on")
    if isinstance(stored, list) and all(isinstance(n, str) for n in stored):
        return tuple(stored)
    source = cassette.metadata.get("converted_from")
    if not isinstance(source, dict) or source.get("format") not in VCRPY_FORMATS:
        return None
    return configured or VCRPY_MATCH_ON


def as_recorded(
    cassette: Cassette, fingerprinter: Fingerprinter, *, chosen: bool, configured: tuple[str, ...] | None
) -> tuple[tuple[str, ...] | None, Fingerprinter]:
    """How a session matches: the vcrpy ``match_on`` a foreign cassette was recorded under and its
    fingerprinter (keeping ``fingerprinter``'s ignore paths and placeholders), unless the options
    ``chosen`` a matching (``match_on``, a mode); else ``fingerprinter``."""
    names = None if chosen else recorded_match_on(cassette, configured)
    if names is None:
        return None, fingerprinter
    return names, Fingerprinter(from_vcrpy_names(names), fingerprinter.ignore, fingerprinter.placeholders)


def describe(names: Sequence[str]) -> str:
    """``method + URI`` for vcrpy's default; else the names joined."""
    if tuple(names) == VCRPY_MATCH_ON:
        return "method + URI"
    return " + ".join(names)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class StaleCall(FrozenValue):
    """A replayed call whose request differs from the recorded one it matched as recorded."""

    position: int  # the entry that answered it
    rows: tuple[DiffRow, ...]  # (path, recorded, live), the request's method, path, query and body


def request_drift(recorded: Normalised, live: Normalised) -> list[DiffRow]:
    """Where a live request differs from a recorded one, in what the stored hash covers."""

    def view(r: Normalised) -> dict[str, Any]:
        return {
            "method": r["method"],
            "path": r["path"],
            "query": r.get("query") or [],
            "body": r.get("body"),
        }

    return structural_diff(view(recorded), view(live))


def check_drift(
    recorded: Entry,
    position: int,
    live: Normalised,
    live_hash: str,
    request: Request,
    *,
    match_on: Sequence[str],
    on_stale: str,
    path: str,
    read_only: str | None,
) -> StaleCall | None:
    """The drift of a call matched as recorded (under ``match_on``) to entry ``position``,
    ``recorded``: None when its request is the recorded one; ``ReplayDivergence`` when
    ``on_stale="fail"``."""
    __tracebackhide__ = True
    if recorded.request_hash == live_hash:
        return None
    rows = request_drift(recorded.request.normalised(), live)
    if not rows:
        return None
    if on_stale == "fail":
        again = read_only or (
            f"Re-record it to store the request as it is sent now: record_mode='all' rewrites {path}."
        )
        raise ReplayDivergence(
            f"llmvcr: {path}: entry {position} answers {request.method} {request.path} as its "
            f"recorder matched it ({describe(match_on)}), but the request differs "
            f"from the recording, and on_stale='fail' (--llmvcr-fail-on-stale) makes that an error:\n"
            f"{format_rows(rows)}\n{again}",
            cassette_path=path,
            diff=rows,
            request=request,
            nearest=recorded,
        )
    return StaleCall(position, tuple(rows))
