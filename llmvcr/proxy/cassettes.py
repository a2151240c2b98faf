"""The cassettes the proxy has open: one ``Session`` per file, opened by name, closed with a summary.

A cassette is opened by the control API (``POST /_llmvcr/cassettes/<name>``) or by the first
request that names it; it stays open, answering every client that names it, until ``DELETE`` or
the server stops, and each entry is written by the session's own atomic writer as it is recorded.
A name is a file under the cassette folder, never outside it. With ``CI`` set a cassette that
names no record mode replays only, as under the pytest plugin.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any

from ..cassette import exactjson
from ..cassette.schema import entry_to_mapping
from ..errors import LLMVCRError
from ..freshness.check import at_open
from ..lifecycle import ci_record_mode, close_session, open_session
from ..options import Options, resolve_path, with_suffix
from ..session import Session, effective_record_mode
from ..storage.files import load_cassette
from ..wording import plural

# what a header or the control API may set, and how a header's text becomes the option's value
_LISTS = ("ignore", "match_on", "filter_headers", "redact", "redact_keep", "allow_unrecognized")
_TEXTS = ("record_mode", "mode", "on_divergence", "seed", "on_unplayed", "expiry", "max_age", "layout")
_BOOLS = ("allow_playback_repeats", "prune")
_NUMBERS = ("replay_speed",)
SETTABLE = frozenset(_LISTS + _TEXTS + _BOOLS + _NUMBERS)


class CassetteRefused(LLMVCRError):
    """A cassette name the proxy will not open (outside the folder, bad options)."""


def parse_options(given: dict[str, Any], *, from_headers: bool) -> dict[str, Any]:
    """Options as ``use_cassette`` takes them; header values are text (lists comma-separated)."""
    unknown = sorted(set(given) - SETTABLE)
    if unknown:
        raise CassetteRefused(
            f"llmvcr: unknown cassette option(s) {', '.join(unknown)}; the proxy takes "
            f"{', '.join(sorted(SETTABLE))} (as x-llmvcr-<name-with-dashes> headers or control-API JSON)"
        )
    out: dict[str, Any] = {}
    for name, value in given.items():
        if not from_headers:
            out[name] = _checked(name, value)
        elif name in _LISTS:
            out[name] = tuple(v.strip() for v in str(value).split(",") if v.strip())
        elif name in _BOOLS:
            out[name] = str(value).strip().lower() in ("1", "true", "yes", "on")
        elif name in _NUMBERS:
            try:
                out[name] = float(value)
            except ValueError:
                raise CassetteRefused(f"llmvcr: option {name} needs a number, not {value!r}") from None
        else:
            out[name] = value
    return out


def _checked(name: str, value: Any) -> Any:
    """A control-API option's JSON value, when it has the option's type; ``CassetteRefused`` otherwise."""
    if name in _LISTS:
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
        wanted = "a list of strings"
        value = tuple(value) if ok else value
    elif name in _BOOLS:
        ok, wanted = isinstance(value, bool), "true or false"
    elif name in _NUMBERS:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0
        wanted = "a number, 0 or more"
    else:
        ok, wanted = isinstance(value, str) or (value is None and name == "seed"), "a string"
    if not ok:
        raise CassetteRefused(f"llmvcr: option {name} needs {wanted}, not {exactjson.dumps(value).decode()}")
    return value


@dataclass(eq=False)
class Opened:
    """One open cassette: its session and the options it was opened with."""

    name: str
    session: Session
    given: dict[str, Any] = field(default_factory=dict)
    divergences: list[str] = field(default_factory=list)  # the 424s it answered, for the summary


class Cassettes:
    """The open cassettes of one proxy, by file path; safe across threads."""

    def __init__(self, folder: str, *, record_mode: str | None = None) -> None:
        self.folder = os.path.realpath(folder)
        self.record_mode = record_mode  # --record-mode: over every cassette's own
        self._open: dict[str, Opened] = {}
        self._paths: dict[str, str] = {}  # name -> its checked path, while it is open
        self._lock = threading.Lock()

    def find(self, name: str, given: dict[str, Any]) -> Opened | None:
        """The open cassette ``name`` when it is open with ``given`` (or ``given`` is empty): the
        fast path of every call after the first, with no file system call."""
        path = self._paths.get(name)
        opened = self._open.get(path) if path is not None else None
        if opened is not None and (not given or given == opened.given):
            return opened
        return None

    def path_of(self, name: str) -> str:
        """The file a cassette name stands for, under the folder; ``CassetteRefused`` otherwise."""
        if not name or "\x00" in name or os.path.isabs(name) or name.startswith(("~", "\\")):
            raise CassetteRefused(
                f"llmvcr: refused cassette {name!r}: give a name under the cassette folder {self.folder}"
            )
        try:
            resolve_path(name)  # refuses a name shaped like a key
        except ValueError as err:
            raise CassetteRefused(f"llmvcr: {err}") from None
        base = os.path.join(self.folder, name)
        path = base if name.lower().endswith((".yaml", ".yml", ".json")) else with_suffix(base)
        real = os.path.realpath(path)
        if os.path.commonpath([real, self.folder]) != self.folder:
            raise CassetteRefused(
                f"llmvcr: refused cassette {name!r}: it resolves to {real}, outside the cassette folder "
                f"{self.folder}; name a file inside it"
            )
        return real  # one file, one key: "suite" and "./suite" are one cassette

    def open(self, name: str, given: dict[str, Any], *, in_turn: bool = False) -> Opened:
        """The open cassette ``name``, opened now with ``given`` options if it is not open yet.

        A cassette already open with other options is refused: two clients would disagree on it.
        ``in_turn``: no client opened it, so no test bounds it: a loaded entry serves again once
        every entry matching its request has served (``Cassette.claim``), for every later run.
        """
        try:
            return self._open_file(name, given, in_turn)
        except (OSError, TypeError) as err:  # a name under a file, an option of the wrong kind
            raise CassetteRefused(f"llmvcr: could not open cassette {name!r}: {err}") from None

    def _open_file(self, name: str, given: dict[str, Any], in_turn: bool) -> Opened:
        path = self.path_of(name)
        with self._lock:
            opened = self._open.get(path)
            if opened is not None:
                if given and given != opened.given:
                    raise CassetteRefused(
                        f"llmvcr: {path} is already open with options {opened.given or '{}'}; close it "
                        f"first (DELETE /_llmvcr/cassettes/{name}) to open it with {given}"
                    )
                self._paths[name] = path
                return opened
            options = dict(given)
            if "record_mode" not in options and ci_record_mode():
                options["record_mode"] = ci_record_mode()
            try:
                built = Options.build(**options)
            except ValueError as err:
                raise CassetteRefused(f"llmvcr: {path}: {err}") from None
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            record_mode = self.record_mode or at_open(path, built)
            if effective_record_mode(built, record_mode) == "all" and os.path.exists(path):
                _refuse_other_file(path)
            session = open_session(path, built, record_mode=record_mode)
            session.cassette.in_turn = in_turn
            opened = self._open[path] = Opened(name, session, dict(given))
            self._paths[name] = path
            return opened

    def close(self, name: str) -> dict[str, Any]:
        """Close ``name``: write what is pending; the unplayed entries and the summary, as JSON."""
        path = self.path_of(name)
        with self._lock:
            opened = self._open.pop(path, None)
            self._paths = {n: p for n, p in self._paths.items() if p != path}
        if opened is None:
            raise CassetteRefused(f"llmvcr: {path} is not open; open it with POST /_llmvcr/cassettes/{name}")
        return closed(opened.session, opened.divergences)

    def close_all(self) -> list[dict[str, Any]]:
        """Close every open cassette (the server is stopping); each one's summary."""
        with self._lock:
            opened, self._open, self._paths = list(self._open.values()), {}, {}
        return [closed(o.session, o.divergences) for o in opened]

    def only(self) -> Opened | None:
        """The one open cassette, which answers requests that name none (None: none, or several)."""
        with self._lock:
            return next(iter(self._open.values())) if len(self._open) == 1 else None

    def names(self) -> list[dict[str, Any]]:
        """The open cassettes, for ``GET /_llmvcr/cassettes``."""
        with self._lock:
            return [{"name": o.name, "path": o.session.path, **o.given} for o in self._open.values()]


def _refuse_other_file(path: str) -> None:
    """``record_mode: all`` rewrites a file without reading it: never one that is not a cassette."""
    try:
        load_cassette(path)
    except LLMVCRError as err:
        raise CassetteRefused(
            f"llmvcr: refused to record over {path}: it is not a cassette llmvcr can read ({err}); "
            f"llmvcr never overwrites a file that is not its own. Name another cassette"
        ) from None


def unplayed_lines(summaries: list[dict[str, Any]]) -> list[str]:
    """What the proxy says as it stops: each cassette's entries no call used."""
    lines = []
    for summary in summaries:
        unplayed = summary["unplayed"]
        if not unplayed:
            continue
        lines.append(f"llmvcr serve: {summary['path']}: {len(unplayed)} recorded entries no call used:")
        for entry in unplayed[:20]:
            request = entry.get("request", {})
            lines.append(f"  {entry.get('provider')} {request.get('method')} {request.get('path')}")
        if len(unplayed) > 20:
            lines.append(f"  ... and {len(unplayed) - 20} more")
    return lines


def closed(session: Session, divergences: list[str] | None = None) -> dict[str, Any]:
    """Close ``session`` and say what it did: the JSON ``DELETE`` answers with (the unplayed entries
    listed in it, not warned of). ``divergences`` are the messages of the calls it answered with a
    424, first first: a client's ``close()`` shows the first, the cause of the entries left unplayed."""
    close_session(session, failed=False, findings=False)
    unplayed = session.cassette.unplayed
    diverged = list(divergences or ())
    said = f"; {plural(len(diverged), 'call')} no entry answered (424)" if diverged else ""
    return {
        "path": session.path,
        "record_mode": session.record_mode,
        "calls": session.calls,
        "replayed": session.replayed,
        "recorded": session.recorded,
        "writes": session.writes,
        "entries": len(session.cassette),
        "unplayed": [entry_to_mapping(e) for e in unplayed],
        "stale": len(session.stale),
        "divergences": diverged,
        "summary": (
            f"{session.path}: {plural(session.calls, 'call')}, {session.replayed} replayed, "
            f"{session.recorded} recorded, {plural(len(unplayed), 'entry', 'entries')} unplayed{said}"
        ),
    }
