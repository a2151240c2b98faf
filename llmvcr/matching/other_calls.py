"""The calls a foreign cassette recorded that are no LLM call (the ``HEAD`` of an image URL a tool
checks, say): kept as entries of the provider ``http`` and answered from the file, as vcrpy did.

Such an entry's request ``path`` is the URL without its query (``https://host/a.png``), its ``query``
the sorted pairs; it is matched on method and URL, as vcrpy matched it by default.
"""

from __future__ import annotations

import os
import threading
import warnings
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


class Unclaimed:
    """One session's calls no provider claims: answered from its file, refused, or let through and
    counted by host (``counted``) for the warning at close."""

    def __init__(self, cassette: Cassette, allow_unrecognized: tuple[str, ...], allow_repeats: bool) -> None:
        self.cassette = cassette
        self.allow_unrecognized = allow_unrecognized
        self.allow_repeats = allow_repeats
        self.counted: dict[str, int] = {}  # host -> requests let through unrecorded
        self._lock = threading.Lock()

    def answer(
        self, method: str, url: str, host: str, *, can_serve: bool, may_go_out: bool, record_mode: str
    ) -> Entry | None:
        """See :func:`answer`; a request let through to a host not allowed is counted."""
        __tracebackhide__ = True
        recorded = answer(
            self.cassette,
            method,
            url,
            host,
            can_serve=can_serve,
            allow_repeats=self.allow_repeats,
            allow_unrecognized=self.allow_unrecognized,
            may_go_out=may_go_out,
            record_mode=record_mode,
        )
        if recorded is None and not allowed(self.allow_unrecognized, host):
            with self._lock:
                self.counted[host] = self.counted.get(host, 0) + 1
        return recorded


def allowed(hosts: tuple[str, ...], host: str) -> bool:
    """The cassette's ``allow_unrecognized`` lets requests to ``host`` through."""
    return "*" in hosts or host in hosts


def answer(
    cassette: Cassette,
    method: str,
    url: str,
    host: str,
    *,
    can_serve: bool,
    allow_repeats: bool,
    allow_unrecognized: tuple[str, ...],
    may_go_out: bool,
    record_mode: str,
) -> Entry | None:
    """The recorded entry that answers a request no provider claims, or None to let it through;
    ``UnrecognizedRequestError`` when it may not go out (``may_go_out`` false: a replay-only
    cassette), or when the file answers it but the seam (``can_serve`` false) cannot build the
    response: never sent live then."""
    __tracebackhide__ = True
    recorded = positions(cassette, method, url)
    position = cassette.claim(recorded, allow_repeats=allow_repeats)
    if position is not None and can_serve:
        return cassette.entry(position)
    if position is not None:
        raise UnrecognizedRequestError(
            f"llmvcr: {method} {url} inside {cassette.path} is recorded in the file, but llmvcr answers "
            f"non-LLM calls only through httpx; keep this test on pytest-recording (@pytest.mark.vcr)."
        )
    if allowed(allow_unrecognized, host):
        return None
    if not may_go_out:
        raise UnrecognizedRequestError(
            unrecognized_message(cassette, record_mode, method, url, host, bool(recorded))
        )
    return None


def unrecognized_message(
    cassette: Cassette, record_mode: str, method: str, url: str, host: str, played: bool
) -> str:
    """Why a request no provider claims is refused in a replay-only cassette, and what to do; never
    advice that sends a call the file recorded to the network."""
    where = f"llmvcr: {method} {url} inside {cassette.path} (record_mode={record_mode!r})"
    if played:
        return (
            f"{where} was recorded in the file, and its recorded answers were all used by earlier calls "
            f"of this test; allow_playback_repeats=True answers it again, or re-record the cassette."
        )
    known = hosts(cassette)
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


def report_at_close(
    path: str,
    unrecorded: dict[str, int],
    *,
    answered: int,
    calls: int,
    keeps_file: bool,
    quiet: bool,
    failed: bool,
) -> bool:
    """Warn of the calls a recording let through unrecorded (host -> count), and of a cassette that
    could record (``keeps_file``) but saw no LLM call at all, so no file exists. Returns the latter: a
    test's marker cassette (``quiet``) is named in the run's summary instead, as a module-wide marker
    covers tests that make no call. ``answered``: the calls recorded or replayed."""
    if unrecorded:
        message = unrecorded_message(path, unrecorded, not answered)
        warnings.warn(message, UnrecordedCallWarning, stacklevel=3)
    empty = keeps_file and bool(path) and not (failed or calls or unrecorded) and not os.path.exists(path)
    if empty and not quiet:
        warnings.warn(empty_message(path), EmptyRecordingWarning, stacklevel=3)
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
