"""Whether a cassette still tells the truth, checked as it opens and closes.

- **Expiry** (as it opens): with ``max_age`` set, a cassette whose recording date
  (``recorded_with.at``) is older is expired. ``expiry="warn"`` (the default) warns,
  ``"fail"`` raises ``ExpiredCassetteError`` before the test runs, ``"re-record"`` records it
  again from scratch, but only where recording is allowed: on CI (``CI`` set) or under
  ``record_mode="none"`` it warns instead, so expiry never makes CI call an API.
- **Unplayed entries** (as it closes, when the block raised nothing): entries the file holds that
  no call used mean a stale cassette or a test that no longer makes the calls it claims.
  ``on_unplayed="warn"`` (the default) warns with their ids and the commands that drop or
  re-record them, ``"fail"`` raises ``UnplayedEntriesError``, ``"ignore"`` says nothing.

The run's settings (the pytest flags) override each cassette's, as ``--llmvcr-record-mode``
does. Every finding is also handed to the listeners (the pytest summary, the planner).
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from ..cassette.age import age_text, on_ci, recorded_at
from ..cassette.values import Value
from ..errors import (
    ExpiredCassetteError,
    ExpiredCassetteWarning,
    LLMVCRError,
    UnplayedEntriesError,
    UnplayedEntriesWarning,
)
from ..options import Options, settings
from ..session import Session
from ..storage.files import load_cassette
from ..wire import mcp as mcp_wire
from ..wording import shown

__all__ = [
    "Finding",
    "RunPolicy",
    "add_listener",
    "at_close",
    "at_open",
    "policy",
    "remove_listener",
    "swap_listeners",
]

SHOWN = 5  # entries named in a message; the rest are counted


@dataclass(eq=False, repr=False)
class Finding(Value):
    """Something that makes a cassette doubtful: ``kind`` is ``unplayed``, ``expired`` or ``undated``."""

    kind: str
    path: str
    test: str
    detail: str  # one line: what was found
    action: str = ""  # warned, failed, re-recorded
    ids: list[str] = field(default_factory=list)  # unplayed: "#3" per entry


@dataclass(eq=False, repr=False)
class RunPolicy(Value):
    """The run's settings, over every cassette's (the pytest flags set them); ``test`` is the test
    running now, so a message can give the command that re-records it."""

    on_unplayed: str | None = None
    max_age: timedelta | None = None
    expiry: str | None = None
    test: str = ""
    # (path, record mode, file exists, test) before a cassette opens; raises to refuse (a budget)
    gate: Callable[[str, str, bool, str], None] | None = None
    now: Callable[[], datetime] = field(default=lambda: datetime.now(timezone.utc), repr=False)


policy = RunPolicy()
_listeners: list[Callable[[Finding], None]] = []
_lock = threading.Lock()


def add_listener(listener: Callable[[Finding], None]) -> None:
    """Call ``listener(finding)`` for every expired, undated or not fully played cassette."""
    with _lock:
        _listeners.append(listener)


def remove_listener(listener: Callable[[Finding], None]) -> None:
    with _lock:
        if listener in _listeners:
            _listeners.remove(listener)


def swap_listeners(listeners: list[Callable[[Finding], None]]) -> list[Callable[[Finding], None]]:
    """Replace every listener, returning the old ones: a pytest run nested in another (pytester)
    reports its own findings, not into the outer run's summary."""
    global _listeners
    with _lock:
        old, _listeners = _listeners, list(listeners)
    return old


def _tell(finding: Finding) -> None:
    with _lock:
        listeners = list(_listeners)
    for listener in listeners:
        listener(finding)


def rerecord_command(path: str) -> str:
    """How to record ``path`` again: the test's own command under pytest, the option otherwise."""
    if policy.test:
        return f"pytest '{policy.test}' --llmvcr-record-mode=all"
    return f"record_mode='all' on {path}"


# -- expiry ------------------------------------------------------------------------------------------
def at_open(path: str, options: Options) -> str | None:
    """Check the cassette at ``path`` for expiry before it opens; the record mode to open it with
    (``"all"`` to re-record it) or None. Warns, or raises ``ExpiredCassetteError``; the run's
    ``gate`` (a record budget) may refuse it."""
    mode = settings.record_mode or options.record_mode or settings.default_record_mode
    override = _expiry(path, options, mode)
    if policy.gate is not None:
        policy.gate(path, override or mode, os.path.exists(path), policy.test)
    return override


def _expiry(path: str, options: Options, mode: str) -> str | None:
    max_age = policy.max_age or options.max_age
    if max_age is None:
        return None
    if mode == "all":  # re-recorded anyway
        return None
    try:
        cassette = load_cassette(path)
    except LLMVCRError:  # missing or unreadable: the session says so as it opens
        return None
    test = policy.test
    when = recorded_at(cassette.recorded_with)
    if when is None:
        _tell(Finding("undated", path, test, "names no recording date (recorded_with.at)", "counted"))
        return None
    age = policy.now() - when
    if age <= max_age:
        return None
    expiry = policy.expiry or options.expiry or "warn"
    recorded = f"recorded {when:%Y-%m-%d %H:%M} UTC, {age_text(age)} ago, over max_age {age_text(max_age)}"
    if expiry == "re-record" and not on_ci() and mode != "none":
        _tell(Finding("expired", path, test, recorded, "re-recorded"))
        return "all"
    why = ""
    if expiry == "re-record":
        why = " (expiry='re-record' does not record on CI nor under record_mode='none')"
    message = f"{shown(path)}: expired: {recorded}{why}. Record it again: {rerecord_command(shown(path))}"
    if expiry == "fail":
        _tell(Finding("expired", path, test, recorded, "failed"))
        raise ExpiredCassetteError(message)
    _tell(Finding("expired", path, test, recorded, "warned"))
    warnings.warn(message, ExpiredCassetteWarning, stacklevel=4)
    return None


# -- unplayed entries --------------------------------------------------------------------------------
def _described(raw: Any, position: int) -> str:
    """``#2 POST /v1/messages claude-sonnet-4-5 sha256:1a2b3c4d`` from an entry or its stored mapping."""
    if isinstance(raw, Mapping):
        found = raw.get("request")
        request: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        method, where = request.get("method", "?"), request.get("path", "?")
        body = request.get("body")
        request_hash = str(raw.get("request_hash", ""))
    else:
        method, where, body, request_hash = (
            raw.request.method,
            raw.request.path,
            raw.request.body,
            raw.request_hash,
        )
    model = f" {body['model']}" if isinstance(body, Mapping) and isinstance(body.get("model"), str) else ""
    return f"#{position} {method} {where}{model} {request_hash[:15]}"


def unplayed_policy(session: Session) -> str:
    """What is done with the entries a cassette's file holds that no call used: the run's choice
    (``--llmvcr-on-unplayed``), else the cassette's ``on_unplayed``, else ``"warn"``."""
    return policy.on_unplayed or session.options.on_unplayed or "warn"


def at_close(session: Session, *, failed: bool) -> None:
    """After a cassette closed: warn about, or fail on, the entries its file holds that no call used.

    When the block raised (its calls stopped early) the unused entries are only noted for the run's
    summary, never offered to prune. Skipped when the session keeps no file.
    """
    if not session.persist or not session.path:
        return
    choice = unplayed_policy(session)
    if session.record_mode == "all":
        if not failed:
            _left_unfilled(session, choice)
        return
    cassette = session.cassette
    unplayed = [i for i in range(min(cassette.loaded_count, len(cassette))) if cassette.play_count(i) == 0]
    if not unplayed or choice == "ignore":
        return
    count = f"{len(unplayed)} of {cassette.loaded_count} recorded entries"
    ids = [f"#{i}" for i in unplayed]
    if failed:  # noted for the summary only
        _tell(Finding("unplayed", session.path, policy.test, f"{count} not used", "", ids))
        return
    path = shown(session.path)
    mcp = sum(1 for i in unplayed if mcp_wire.is_mcp(cassette.entry(i)))
    if mcp and not mcp_wire.sdk_installed():  # the MCP sessions could not even be opened here
        raise LLMVCRError(
            f"{path}: {mcp} MCP entries were not used, and the mcp package is not installed: the MCP "
            f"sessions this cassette recorded cannot be opened or replayed here. Install it (pip install mcp)"
        )
    listed = "; ".join(_described(cassette.raw(i), i) for i in unplayed[:SHOWN])
    more = f"; and {len(unplayed) - SHOWN} more" if len(unplayed) > SHOWN else ""
    message = (
        f"{path}: {count} were not used: {listed}{more}. The code no longer makes these calls, or the "
        f"cassette is stale. Drop them after this run with: llmvcr prune {path}; or record the cassette "
        f"again: {rerecord_command(path)} (on_unplayed='ignore' accepts them)"
    )
    action = "failed" if choice == "fail" else "warned"
    _tell(Finding("unplayed", session.path, policy.test, f"{count} not used", action, ids))
    if choice == "fail":
        raise UnplayedEntriesError(message)
    warnings.warn(message, UnplayedEntriesWarning, stacklevel=3)


def _left_unfilled(session: Session, choice: str) -> None:
    """``record_mode="all"`` that recorded nothing leaves the file of an earlier recording in place:
    every entry in it went unused (cassetter's ``rewrite`` would have deleted it)."""
    if session.recorded or session.writes or choice == "ignore" or not os.path.exists(session.path):
        return
    try:
        held = len(load_cassette(session.path))
    except LLMVCRError:
        return
    if not held:
        return
    path = shown(session.path)
    message = (
        f"{path}: record_mode='all' recorded nothing, so the file keeps all {held} entries of an earlier "
        f"recording, none of them used. If the code no longer calls an LLM here, delete the file "
        f"(on_unplayed='ignore' accepts it)"
    )
    action = "failed" if choice == "fail" else "warned"
    ids = [f"#{i}" for i in range(held)]
    _tell(Finding("unplayed", session.path, policy.test, f"all {held} entries not used", action, ids))
    if choice == "fail":
        raise UnplayedEntriesError(message)
    warnings.warn(message, UnplayedEntriesWarning, stacklevel=3)
