"""``use_cassette`` and ``recording``: open a session around a block, a function or a test.

>>> @llmvcr.use_cassette("bug-427")
... def test_summary(): ...
>>> with llmvcr.recording("bug-427", seed="bug-repro-#427") as cassette: ...

Opening a cassette puts the providers' interception in place (reference-counted across
cassettes) and makes the session the one this thread or task's calls go to; closing it writes
what is pending and, with the last cassette, leaves every SDK exactly as it was.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from . import _active, providers
from .cassette import Cassette
from .freshness.check import at_close, at_open
from .options import Options, resolve_path
from .session import Session
from .storage.files import load_cassette as load_cassette  # llmvcr.load_cassette (reads vcrpy files in place)

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .options import CassetteOptions

F = TypeVar("F", bound=Callable[..., Any])


class CassetteContext:
    """What ``use_cassette`` and ``recording`` return: a context manager (sync and async) and a decorator."""

    def __init__(self, name_or_path: str | os.PathLike[str], options: Options) -> None:
        resolved = resolve_path(name_or_path)  # a bad name is refused at decoration, not at the first call
        self._name = name_or_path
        # a path is its own answer; a bare name follows configure(cassette_dir=...) made later
        self._fixed = resolved if resolved == os.fspath(name_or_path) else None
        self.options = options
        self.quiet_when_empty = False  # a test's marker cassette: recording nothing is said in the summary
        self._open: list[tuple[Session, contextvars.Token[Session | None]]] = []

    @property
    def path(self) -> str:
        return self._fixed if self._fixed is not None else resolve_path(self._name)

    def session(self) -> Session:
        """A new, not yet started session on this cassette's file (checked for expiry first)."""
        path = self.path
        session = Session(path, self.options, record_mode=at_open(path, self.options))
        session.quiet_when_empty = self.quiet_when_empty
        return session

    def __enter__(self) -> Cassette:
        session = self.session()
        providers.install()
        session.start()
        self._open.append((session, _active.activate(session)))
        return session.cassette

    def __exit__(self, *exc: object) -> None:
        self.close(failed=exc[0] is not None)

    def close(self, *, failed: bool) -> None:
        """Leave the innermost open block; ``failed`` when it raised (or the test using it failed)."""
        session, token = self._open.pop()
        try:
            session.finish(failed=failed)
        finally:
            _active.deactivate(session, token)
            providers.uninstall()
        _active.announce_exit(session)
        at_close(session, failed=failed)  # entries no call used: warn or fail

    async def __aenter__(self) -> Cassette:
        return self.__enter__()

    async def __aexit__(self, *exc: object) -> None:
        self.__exit__(*exc)

    def __call__(self, fn: F) -> F:
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                __tracebackhide__ = True  # pytest shows the user's frame and the message
                with self:
                    return await fn(*args, **kwargs)

            return async_wrapper  # type: ignore[return-value]

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True  # pytest shows the user's frame and the message
            with self:
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


def use_cassette(name_or_path: str | os.PathLike[str], **options: Unpack[CassetteOptions]) -> CassetteContext:
    """Record or replay every LLM call made inside; a decorator (sync or async) or a context manager.

    ``name_or_path`` is a file path (``tests/cassettes/x.json``) or a bare name under the cassette
    directory (``"bug-427"`` -> ``cassettes/bug-427.yaml``). Options: ``record_mode``, ``mode``,
    ``match_on``, ``ignore``, ``placeholders``, ``on_divergence``, ``seed``,
    ``allow_playback_repeats``, ``before_record``, ``filter_headers``, ``redact``,
    ``replay_speed``, ``prune``, ``on_unplayed``, ``max_age``, ``expiry`` (``llmvcr.freshness.check``).
    Bad options raise ``ValueError`` here, not at the first call.
    """
    return CassetteContext(name_or_path, Options.build(**options))


def recording(name_or_path: str | os.PathLike[str], **options: Unpack[CassetteOptions]) -> CassetteContext:
    """The context-manager form of :func:`use_cassette`; ``with ... as cassette`` yields the ``Cassette``."""
    return use_cassette(name_or_path, **options)
