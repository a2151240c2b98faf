"""Where llmvcr meets the ``mcp`` SDK: the funnels every client route passes through, wrapped while
interception is in place.

Frameworks bind the transports by name as they are imported (``from mcp import stdio_client``),
so wrapping ``stdio_client`` itself would miss them. What every route calls as it runs is wrapped
instead, each declared in ``providers._internals``:

- ``mcp.stdio.spawn``: the function ``stdio_client`` starts its server process with;
- ``mcp.http.writer``: the task of a streamable HTTP transport that sends every client message
  (and the transport's constructor, public, which names the server as the connection opens);
- ``mcp.sse.source`` and ``mcp.sse.post``: the functions an SSE transport opens its event stream
  and posts each client message with.

When a release moves one of the first two, every ``ClientSession`` opened inside a cassette raises
one clear error (``ClientSession`` is public and always there), never a live call that is not
recorded. When it moves an SSE one, that is said once and SSE connections are left to the HTTP seam
as before they were intercepted: their requests are unclaimed calls (a warning when recording, an
``UnrecognizedRequestError`` in a replay-only cassette).
"""

from __future__ import annotations

import sys
import weakref
from typing import Any

from .. import _active
from ..providers import _internals
from ..providers._driver import LibraryPatches
from ..providers._patch import Patch
from ..providers.base import Seam, add_seam, installed, recorded_elsewhere, when_imported
from ..wire import mcp as wire
from . import http, sse
from .exchange import Exchange
from .stdio import RecordedProcess, ReplayedProcess

_STDIO, _HTTP, _SESSION = "mcp.client.stdio", "mcp.client.streamable_http", "mcp.client.session"
_SSE = "mcp.client.sse"
_MODULES = (_STDIO, _HTTP, _SSE, _SESSION)
_exchanges: weakref.WeakKeyDictionary[Any, Exchange] = weakref.WeakKeyDictionary()
_missing: list[str] = []  # registry keys a release moved: ClientSession refuses inside a cassette


def _open_session() -> Any:
    session = _active.current_session()
    return session if session is not None and session.open else None


async def _spawn(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    session = _open_session()
    if session is None:
        return await wrapped(*args, **kwargs)
    command = kwargs["command"] if "command" in kwargs else args[0]
    argv = kwargs["args"] if "args" in kwargs else (args[1] if len(args) > 1 else [])
    exchange = Exchange.open(session, wire.stdio_server(command, list(argv)))  # or raises: nothing started
    if exchange.replaying:
        return ReplayedProcess(exchange)
    return RecordedProcess(await wrapped(*args, **kwargs), exchange)


def _transport_init(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> None:
    wrapped(*args, **kwargs)
    session = _open_session()
    if session is not None:
        exchange = _exchanges[instance] = Exchange.open(session, http.server_of(instance))  # or raises
        if not exchange.replaying:  # its requests are this connection's entries, not unrecorded calls
            url = str(instance.url).partition("?")[0]
            recorded_elsewhere(url, 1)
            weakref.finalize(instance, recorded_elsewhere, url, -1)


async def _get_stream(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> None:
    """The GET stream a live streamable HTTP connection opens for what the server sends unasked."""
    exchange = _exchanges.get(instance)
    if exchange is None or exchange.replaying or len(args) < 2:
        return await wrapped(*args, **kwargs)  # type: ignore[no-any-return]
    client, writer, *rest = args
    return await wrapped(client, http.seen_writer(writer, exchange), *rest)  # type: ignore[no-any-return]


async def _post_writer(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> None:
    exchange = _exchanges.get(instance)
    if exchange is None:
        return await wrapped(*args, **kwargs)  # type: ignore[no-any-return]
    client, reader, writer, write_stream, *rest = args
    if exchange.replaying:
        return await http.replay_writer(exchange, reader, writer, write_stream)
    reader, writer = http.seen(reader, writer, exchange)
    return await wrapped(client, reader, writer, write_stream, *rest)  # type: ignore[no-any-return]


def _sse_source(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    session = _open_session()
    if session is None:
        return wrapped(*args, **kwargs)
    client = args[0] if args else kwargs["client"]
    url = args[1] if len(args) > 1 else kwargs["url"]
    exchange = Exchange.open(session, wire.http_server(str(url)))  # or raises: nothing sent
    return sse.source(exchange, client, url, None if exchange.replaying else wrapped(*args, **kwargs))


async def _sse_post(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    return await sse.post(wrapped, args, kwargs)


def _session_init(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> None:
    if _missing and _open_session() is not None:
        raise _internals.error(_missing[0])
    wrapped(*args, **kwargs)


def _patches(module: Any) -> list[Patch]:
    name = module.__name__
    if name == _SESSION:
        return [Patch(module.ClientSession, "__init__", _session_init)]
    if name == _SSE:  # a fallback: without either name, SSE is left to the HTTP seam (said once)
        source, post = _internals.resolve("mcp.sse.source"), _internals.resolve("mcp.sse.post")
        if source is None or post is None:
            return []
        return [Patch(source[0], source[1], _sse_source), Patch(post[0], post[1], _sse_post)]
    key, wrapper = ("mcp.stdio.spawn", _spawn) if name == _STDIO else ("mcp.http.writer", _post_writer)
    found = _internals.resolve(key)
    if found is None:
        if key not in _missing:
            _missing.append(key)
        return []
    out = [Patch(found[0], found[1], wrapper)]
    if name == _HTTP:
        out.append(Patch(found[0], "__init__", _transport_init))
        get_stream = _internals.resolve("mcp.http.get_stream")  # a fallback: warned once when missing
        if get_stream is not None:
            out.append(Patch(get_stream[0], get_stream[1], _get_stream))
    return out


_library = LibraryPatches("mcp", _MODULES, _patches)


def _install() -> None:
    for name in _MODULES:
        if name not in sys.modules:
            when_imported(name, _library.on_import, "mcp-seam")
    _library.install()


def on_import(module: Any) -> None:
    """``mcp`` was imported (the post-import hook ``providers.install`` registers)."""
    if installed():
        _install()


add_seam(Seam("mcp", _install, _library.uninstall))
