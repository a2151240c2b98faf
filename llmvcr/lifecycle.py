"""Opening and closing a session: the one way ``use_cassette``, the client adapters and the proxy do it.

Opening checks the cassette for expiry (``llmvcr.freshness.check.at_open``) unless the caller
fixes the record mode, builds the session and starts it; closing writes what is pending, lets the
caller detach it (interception, the active session), tells the listeners, and gives the findings
of its close (``at_close``: the entries no call used). With ``CI`` set, a cassette that names no
record mode replays only (:func:`ci_record_mode`): recording is done locally and committed.
"""

from __future__ import annotations

from collections.abc import Callable

from . import _active
from .cassette import Cassette
from .cassette.age import on_ci
from .freshness.check import at_close, at_open
from .options import Options
from .session import Session

__all__ = ["ci_record_mode", "close_session", "open_session"]


def ci_record_mode() -> str | None:
    """The record mode of a cassette that names none: ``"none"`` on CI, else None (its own default)."""
    return "none" if on_ci() else None


def open_session(
    path: str,
    options: Options,
    *,
    record_mode: str | None = None,
    cassette: Cassette | None = None,
    persist: bool = True,
    quiet_when_empty: bool = False,
) -> Session:
    """A session on ``path`` (or on ``cassette``, kept in memory when ``persist`` is false), started.

    ``record_mode`` over every other setting; when None, the options' own after the expiry check
    (which may say ``"all"``: an expired cassette re-recorded). ``quiet_when_empty``: a test's marker
    cassette, whose recording nothing is said in the run's summary instead of a warning.
    """
    if record_mode is None:
        record_mode = at_open(path, options)
    session = Session(path, options, cassette, persist=persist, record_mode=record_mode)
    session.quiet_when_empty = quiet_when_empty
    session.start()
    return session


def close_session(
    session: Session, *, failed: bool, detach: Callable[[], None] | None = None, findings: bool = True
) -> None:
    """Finish ``session`` (``failed``: the block using it raised); ``detach()`` runs next, even when
    finishing raised, and an attached session is announced closed. ``findings``: warn of (or fail on)
    the entries no call used; the proxy answers them in its JSON instead."""
    try:
        session.finish(failed=failed)
    finally:
        if detach is not None:
            detach()
    if detach is not None:
        _active.announce_exit(session)
    if findings:
        at_close(session, failed=failed)
