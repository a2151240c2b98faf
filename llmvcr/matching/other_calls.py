"""The calls a foreign cassette recorded that are no LLM call (the ``HEAD`` of an image URL a tool
checks, say): kept as entries of the provider ``http`` and answered from the file, as vcrpy did.

Such an entry's request ``path`` is the URL without its query (``https://host/a.png``), its ``query``
the sorted pairs; it is matched on method and URL, as vcrpy matched it by default.
"""

from __future__ import annotations

import os
import warnings
from typing import Protocol
from urllib.parse import parse_qsl, urlsplit

from ..cassette import Cassette, Entry
from ..errors import EmptyRecordingWarning, UnrecognizedRequestError, UnrecordedCallWarning

OTHER = "http"  # the provider name of a recorded non-LLM call


def url_key(url: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """``(scheme://host[:port]/path, sorted query pairs)``: what a recorded call is found by."""
    parts = urlsplit(url)
    query = tuple(sorted(parse_qsl(parts.query, keep_blank_values=True)))
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}{parts.path or '/'}", query


def positions(cassette: Cassette, method: str, url: str) -> list[int]:
    """The positions of the recorded non-LLM calls with this method and URL, in recording order."""
    path, query = url_key(url)
    found = []
    for i in range(len(cassette)):
        if cassette.stored_provider(i) != OTHER:  # no entry of an LLM's is read, nor a linear one unpacked
            continue
        request = cassette.entry(i).request
        if request.method == method.upper() and request.path == path and tuple(request.query) == query:
            found.append(i)
    return found


def hosts(cassette: Cassette) -> set[str]:
    """The hosts of the non-LLM calls a cassette recorded."""
    out = set()
    for i in range(len(cassette)):
        if cassette.stored_provider(i) == OTHER:
            out.add(urlsplit(cassette.entry(i).request.path).hostname or "")
    return out


class _Options(Protocol):
    @property
    def allow_unrecognized(self) -> tuple[str, ...]: ...

    @property
    def allow_playback_repeats(self) -> bool: ...

    @property
    def on_divergence(self) -> str: ...


class _Session(Protocol):
    path: str
    cassette: Cassette
    record_mode: str
    persist: bool
    recorded: int
    replayed: int
    calls: int
    unrecorded: dict[str, int]
    quiet_when_empty: bool

    @property
    def options(self) -> _Options: ...

    @property
    def can_record(self) -> bool: ...


def allowed(hosts: tuple[str, ...], host: str) -> bool:
    """The cassette's ``allow_unrecognized`` lets requests to ``host`` through."""
    return "*" in hosts or host in hosts


def answer(session: _Session, method: str, url: str, host: str, *, can_serve: bool) -> Entry | None:
    """The recorded entry that answers a request no provider claims, or None to let it through;
    ``UnrecognizedRequestError`` when it may not go out (a replay-only cassette), or when the file
    answers it but the seam (``can_serve`` false) cannot build the response: never sent live then."""
    __tracebackhide__ = True
    recorded = positions(session.cassette, method, url)
    position = session.cassette.claim(recorded, allow_repeats=session.options.allow_playback_repeats)
    if position is not None and can_serve:
        return session.cassette.entry(position)
    if position is not None:
        raise UnrecognizedRequestError(
            f"llmvcr: {method} {url} inside {session.path} is recorded in the file, but llmvcr answers "
            f"non-LLM calls only through httpx; keep this test on pytest-recording (@pytest.mark.vcr)."
        )
    if allowed(session.options.allow_unrecognized, host):
        return None
    if not session.can_record and session.options.on_divergence != "live":
        raise UnrecognizedRequestError(unrecognized_message(session, method, url, host, bool(recorded)))
    return None


def unrecognized_message(session: _Session, method: str, url: str, host: str, played: bool) -> str:
    """Why a request no provider claims is refused in a replay-only cassette, and what to do; never
    advice that sends a call the file recorded to the network."""
    where = f"llmvcr: {method} {url} inside {session.path} (record_mode={session.record_mode!r})"
    if played:
        return (
            f"{where} was recorded in the file, and its recorded answers were all used by earlier calls "
            f"of this test; allow_playback_repeats=True answers it again, or re-record the cassette."
        )
    known = hosts(session.cassette)
    if host in known:
        return (
            f"{where} is not recorded in the file, which holds other calls to {host}: the request changed "
            f"since it was recorded. Re-record the cassette (or keep the test on pytest-recording)."
        )
    return (
        f"{where} is not a call of any registered provider, and replay must not reach the network. If "
        f"it is an LLM call, register its SDK (llmvcr.register_provider); if it is not, add "
        f"allow_unrecognized=[{host!r}] to the cassette's options."
    )


def report_at_close(session: _Session, failed: bool) -> bool:
    """Warn of the calls a recording let through unrecorded, and of a cassette that could record but
    saw no LLM call at all, so no file exists. Returns the latter: a test's marker cassette
    (``quiet_when_empty``) is named in the run's summary instead, as a module-wide marker covers
    tests that make no call."""
    if session.unrecorded:
        nothing = not session.recorded and not session.replayed
        message = unrecorded_message(session.path, session.unrecorded, nothing)
        warnings.warn(message, UnrecordedCallWarning, stacklevel=3)
    empty = (
        session.persist
        and bool(session.path)
        and not (failed or session.calls or session.unrecorded)
        and not os.path.exists(session.path)
    )
    if empty and not session.quiet_when_empty:
        warnings.warn(empty_message(session.path), EmptyRecordingWarning, stacklevel=3)
    return empty


def empty_message(path: str) -> str:
    """What a cassette that could record says at exit when no call was recorded and no file exists."""
    return (
        f"{path}: no LLM call was recorded, so no cassette was written. If the code inside calls an "
        f"LLM, the call did not reach an SDK llmvcr intercepts: register a provider for it "
        f"(llmvcr.register_provider), and make the call inside the block, not on a thread or task "
        f"that outlives it. If the code makes no LLM call, it needs no cassette."
    )


def unrecorded_message(path: str, unrecorded: dict[str, int], nothing: bool) -> str:
    """What a recording cassette says at exit of the calls no provider claimed (host -> count)."""
    calls = ", ".join(f"{n} to {host}" for host, n in sorted(unrecorded.items()))
    empty = " (the cassette recorded nothing)" if nothing else ""
    return (
        f"{path or 'cassette'}: HTTP calls no provider claims were not recorded{empty}: {calls}. "
        f"Register a provider for their SDK (llmvcr.register_provider), or list the hosts in "
        f"allow_unrecognized= to say they are not LLM calls."
    )
