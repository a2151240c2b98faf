"""The SSE seam: the event stream and the posts of an SSE connection (``mcp.sse.source`` and
``mcp.sse.post`` in ``providers._internals``).

``sse_client`` opens one event stream (a ``GET`` whose first event names the endpoint to post to,
and whose other events carry the server's messages) and sends each client message as a ``POST``
to that endpoint, through two functions of its module looked up as it runs. Both take the
connection's HTTP client, which ties a post to its stream. While a cassette is open:

- replaying, the event stream is a stand-in: its first event names an endpoint, and each post is
  answered from the cassette onto the stream; nothing is sent and no socket is opened;
- recording, the real stream and posts run, every message both ways seen on its way (a message the
  exchange answers itself, a denied ``tools/call``, is answered on the stream and never posted).
"""

from __future__ import annotations

import math
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import orjson

from ..errors import SDKChangedError
from ..providers.base import package_version, recorded_elsewhere
from .exchange import Exchange

REPLAYED_ENDPOINT = "messages/?session_id=replayed"  # where a replayed stream says to post


class Event:
    """One server-sent event, as ``sse_client`` reads it."""

    __slots__ = ("data", "event", "id", "retry")

    def __init__(self, event: str, data: str) -> None:
        self.event, self.data, self.id, self.retry = event, data, "", None


class Answered:
    """The HTTP response to a post that was never sent (the server accepts a post with ``202``)."""

    status_code = 202

    def raise_for_status(self) -> Answered:
        return self


class Connection:
    """One SSE connection's event stream as its client reads it (the SDK's 2.x line iterates it,
    the 1.x line calls ``aiter_sse()``), fed by the cassette or by the real stream."""

    def __init__(self, exchange: Exchange, response: Any) -> None:
        self.exchange, self.response = exchange, response
        self._send, self._receive = anyio.create_memory_object_stream[Any](math.inf)
        self._marked: set[str] = set()  # URLs the HTTP seam leaves to this connection

    def __aiter__(self) -> Connection:
        return self

    def aiter_sse(self) -> Connection:
        return self

    async def __anext__(self) -> Any:
        try:
            item = await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None
        if isinstance(item, BaseException):  # the real stream failed: its reader sees it as before
            raise item
        return item

    def announce(self, endpoint: str) -> None:
        """The stream's first event: where the client is to post."""
        self._send.send_nowait(Event("endpoint", endpoint))

    def give(self, messages: list[Any]) -> None:
        """Messages the client is to receive, as events of the stream."""
        for message in messages:
            self._send.send_nowait(Event("message", orjson.dumps(message).decode()))

    def mark(self, url: Any) -> None:
        """Requests to ``url`` are this connection's (recording): not unrecorded calls."""
        plain = str(url).partition("?")[0]
        if plain not in self._marked:
            self._marked.add(plain)
            recorded_elsewhere(plain, 1)

    async def pump(self, source: Any) -> None:
        """Recording: the real stream's events, each server message seen, passed on in order."""
        events = source.aiter_sse() if hasattr(source, "aiter_sse") else source
        try:
            async for event in events:
                if event.event == "message" and event.data:
                    try:
                        message = orjson.loads(event.data)
                    except orjson.JSONDecodeError:
                        message = None  # the SDK's reader says so as it parses it
                    if message is not None:
                        self.exchange.from_server(message)
                self._send.send_nowait(event)
        except Exception as err:  # a broken stream: raised to the SDK's reader, as itself
            self._send.send_nowait(err)
        finally:
            self._send.close()

    def close(self) -> None:
        for url in self._marked:
            recorded_elsewhere(url, -1)
        self._marked.clear()
        self._send.close()
        self._receive.close()
        self.exchange.close()


_connections: weakref.WeakKeyDictionary[Any, Connection] = weakref.WeakKeyDictionary()


@asynccontextmanager
async def source(exchange: Exchange, client: Any, url: Any, real: Any) -> AsyncIterator[Connection]:
    """The event stream of the connection opening now: a stand-in when replaying (``real`` is None),
    else the real one (``real``, the SDK's own context manager, not yet entered), seen."""
    if real is None:
        connection = _connections[client] = Connection(exchange, Answered())
        connection.announce(REPLAYED_ENDPOINT)
        try:
            yield connection
        finally:
            _connections.pop(client, None)
            connection.close()
        return
    connection = _connections[client] = Connection(exchange, None)
    connection.mark(url)  # before the stream's GET is sent
    thrown: list[BaseException] = []
    try:
        async with real as stream:
            connection.response = stream.response
            async with anyio.create_task_group() as group:
                group.start_soon(connection.pump, stream)
                try:
                    yield connection
                except BaseException as err:
                    thrown.append(err)
                    raise
                finally:
                    group.cancel_scope.cancel()
    except BaseException as err:
        if thrown and list(getattr(err, "exceptions", ())) == thrown:  # as the caller raised it, unwrapped
            raise thrown[0] from None
        raise
    finally:
        _connections.pop(client, None)
        connection.close()


async def post(wrapped: Any, args: Any, kwargs: Any) -> Any:
    """A client message posted to the endpoint: answered from the cassette when replaying, else seen
    and sent (or answered in the server's place, and not sent)."""
    client, url = args[0], args[2] if len(args) > 2 else kwargs.get("url")
    connection = _connections.get(client)
    if connection is None:
        return await wrapped(*args, **kwargs)
    message = kwargs.get("json")
    if message is None:  # never sent unseen: a release that posts its messages another way says so
        version = package_version("mcp") or "(version unknown)"
        raise SDKChangedError(
            f"llmvcr: mcp {version} posts an SSE message without a json= body (llmvcr knows it in mcp "
            f"1.30.0, 2.3.0); the MCP server {connection.exchange.shown} cannot be recorded or replayed, "
            f"and nothing was sent. Pin mcp<{version} or upgrade llmvcr"
        )
    answers = connection.exchange.from_client(message)
    if connection.exchange.replaying or answers:
        connection.give(answers)
        return Answered()
    connection.mark(url)
    return await wrapped(*args, **kwargs)
