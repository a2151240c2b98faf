"""Explicit adapters: record or replay one SDK client instance, with no context manager.

The agentskit way of working, for code that holds a client rather than a test function::

    client, cassette = llmvcr.create_recording_adapter(anthropic.Anthropic(), seed="bug-repro-#427")
    client.messages.create(...)                          # reaches the API; recorded into cassette
    llmvcr.save_cassette("cassettes/bug-427.yaml", cassette)

    client = llmvcr.create_replay_adapter(llmvcr.load_cassette("cassettes/bug-427.yaml"))
    client.messages.create(...)                          # served from the cassette, no key, no network

Only the given client instance is affected: other clients, and any cassette opened with
``use_cassette``, go on as before. The interception stays in place while the client lives.
"""

from __future__ import annotations

import os
import weakref
from typing import Any, TypeVar, overload

from . import _active
from .cassette import Cassette
from .cassette.schema import recorded_with
from .lifecycle import open_session
from .options import Options, resolve_path
from .providers import install, registered, uninstall
from .session import Session
from .storage.files import load_cassette

C = TypeVar("C")


def _refuse_record_mode(options: dict[str, Any], function: str) -> None:
    if "record_mode" in options:
        raise ValueError(
            f"{function}() takes no record_mode: a recording adapter always records and a replay adapter "
            f"never does (use on_divergence='live' to record what the cassette cannot answer)"
        )


def _attach(client: Any, session: Session) -> None:
    for bound in _calls_of(client):
        _active.bind(bound, session)  # refuses what cannot be weakly referenced
    install()  # also catches up with an SDK imported after another cassette opened
    weakref.finalize(client, uninstall)


def _calls_of(client: Any) -> tuple[Any, ...]:
    """What makes ``client``'s calls, as the SDK's interception sees it; a client no provider knows is
    refused, never adapted in name only (its calls would reach the network unseen)."""
    for provider in registered():
        adapted = getattr(provider, "adapted", None)
        found = adapted(client) if adapted is not None else None
        if found:
            return tuple(found)
    known = ", ".join(sorted({p.name for p in registered() if getattr(p, "adapted", None) is not None}))
    raise ValueError(
        f"{type(client).__module__}.{type(client).__qualname__} is no client of an SDK llmvcr adapts "
        f"({known}): pass the SDK client itself (a framework's model object holds one), or open "
        f"llmvcr.use_cassette(...) around the calls instead"
    )


def create_recording_adapter(client: C, *, seed: str | None = None, **options: Any) -> tuple[C, Cassette]:
    """Record every call ``client`` makes into a new in-memory cassette; returns ``(client, cassette)``.

    ``options`` are those of ``use_cassette`` (``before_record``, ``redact``, ``filter_headers``,
    ``match_on``...) but ``record_mode``. Write the result with ``llmvcr.save_cassette``.
    """
    _refuse_record_mode(options, "create_recording_adapter")
    built = Options.build(seed=seed, **options)
    cassette = Cassette("", seed=seed, recorded_with=recorded_with())
    # explicit recording, whatever a process-wide record mode says
    session = open_session("", built, record_mode="all", cassette=cassette, persist=False)
    _attach(client, session)
    return client, cassette


@overload
def create_replay_adapter(
    cassette: Cassette | str | os.PathLike[str],
    client: C,
    *,
    mode: str = ...,
    on_divergence: str = ...,
    asynchronous: bool = ...,
    **options: Any,
) -> C: ...


@overload
def create_replay_adapter(
    cassette: Cassette | str | os.PathLike[str],
    client: None = None,
    *,
    mode: str = ...,
    on_divergence: str = ...,
    asynchronous: bool = ...,
    **options: Any,
) -> Any: ...


def create_replay_adapter(
    cassette: Cassette | str | os.PathLike[str],
    client: Any = None,
    *,
    mode: str = "strict",
    on_divergence: str = "raise",
    asynchronous: bool = False,
    **options: Any,
) -> Any:
    """A client whose calls are served from ``cassette`` (a ``Cassette``, a path or a cassette name).

    With no ``client``, one of the cassette's SDK is built (``asynchronous=True`` for its async
    client) with a placeholder key: nothing is sent anywhere. A request the cassette cannot answer
    raises ``ReplayDivergence`` (``on_divergence="warn"`` serves the next unused entry; ``"live"``
    calls the API and appends to the in-memory cassette).
    """
    _refuse_record_mode(options, "create_replay_adapter")
    built = Options.build(mode=mode, on_divergence=on_divergence, **options)
    if not isinstance(cassette, Cassette):
        cassette = load_cassette(resolve_path(cassette))
    if client is None:
        client = _client_for(cassette, asynchronous)
    session = open_session(cassette.path, built, record_mode="none", cassette=cassette, persist=False)
    _attach(client, session)
    return client


def _client_for(cassette: Cassette, asynchronous: bool) -> Any:
    names = sorted({cassette.entry(i).provider for i in range(len(cassette))})
    where = cassette.path or "the cassette"
    if len(names) != 1:
        found = ", ".join(names) or "no entries"
        raise ValueError(
            f"{where} holds {found}: pass the client to serve, create_replay_adapter(cassette, client)"
        )
    for provider in registered():
        if provider.name == names[0]:
            build = getattr(provider, "replay_client", None)
            if build is None:
                break
            return build(asynchronous=asynchronous)
    raise ValueError(
        f"{where} was recorded through {names[0]!r}, which cannot build a client: pass one as client="
    )
