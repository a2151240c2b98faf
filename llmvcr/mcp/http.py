"""The streamable HTTP seam: the task that carries every client message of a streamable HTTP
connection to its server (``mcp.http.writer`` in ``providers._internals``).

``streamable_http_client`` opens no connection until a message is sent, and sends every message
from one task, its transport's ``post_writer``, which reads the client's messages from one
in-memory stream and hands the server's to another. While a cassette is open:

- replaying, that task is replaced: each client message is answered from the cassette onto the
  client's stream, and no request is ever sent (the transport never learns a session id, so it
  sends no ``DELETE`` at the end either);
- recording, the real task runs with both streams seen on their way.
"""

from __future__ import annotations

import importlib
from typing import Any

from ..wire import mcp as wire
from .exchange import Exchange


def dump(message: Any) -> Any:
    """An SDK message object as its JSON object (as the transport would send it)."""
    inner = getattr(message, "message", message)  # a SessionMessage carries the JSON-RPC message
    if hasattr(inner, "model_dump"):
        return inner.model_dump(by_alias=True, mode="json", exclude_unset=True)
    return None


def _parser() -> tuple[Any, Any]:
    """The SDK's ``SessionMessage`` and a JSON object -> JSON-RPC message parser (both public)."""
    session_message = importlib.import_module("mcp.shared.message").SessionMessage  # loaded by now
    types = importlib.import_module("mcp.types")
    adapter = getattr(types, "jsonrpc_message_adapter", None)  # the 1.x line has the model only
    parse = (
        (lambda m: adapter.validate_python(m, by_name=False))
        if adapter
        else types.JSONRPCMessage.model_validate
    )
    return session_message, parse


class _SeenReader:
    """The client's outgoing stream, every message shown to the exchange as the transport reads it;
    a message the exchange answers itself (a denied ``tools/call``) is answered on the client's
    incoming stream and never reaches the transport."""

    def __init__(self, inner: Any, exchange: Exchange, client: Any) -> None:
        self._inner, self._exchange, self._to_client = inner, exchange, client

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def __aenter__(self) -> _SeenReader:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._inner.__aexit__(*exc)

    def __aiter__(self) -> _SeenReader:
        return self

    async def __anext__(self) -> Any:
        while True:
            item = await self._inner.__anext__()
            message = dump(item)
            answers = self._exchange.from_client(message) if message is not None else []
            if not answers:
                return item
            session_message, parse = _parser()
            for answer in answers:
                await self._to_client.send(session_message(parse(answer)))


class _SeenWriter:
    """The client's incoming stream, every server message shown to the exchange as it is delivered."""

    def __init__(self, inner: Any, exchange: Exchange) -> None:
        self._inner, self._exchange = inner, exchange

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def __aenter__(self) -> _SeenWriter:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        self._exchange.close()
        return await self._inner.__aexit__(*exc)

    async def send(self, item: Any) -> None:
        message = dump(item)
        if message is not None:
            self._exchange.from_server(message)
        await self._inner.send(item)


async def replay_writer(exchange: Exchange, reader: Any, writer: Any, write_stream: Any) -> None:
    """The transport's writer task, answered from the cassette: nothing is sent."""
    session_message, parse = _parser()
    async with reader, writer, write_stream:
        async for item in reader:
            message = dump(item)
            for answer in exchange.from_client(message):
                await writer.send(session_message(parse(answer)))


def server_of(transport: Any) -> str:
    return wire.http_server(getattr(transport, "url", ""))


def seen(reader: Any, writer: Any, exchange: Exchange) -> tuple[Any, Any]:
    """The transport's two streams, seen by a recording exchange."""
    return _SeenReader(reader, exchange, writer), _SeenWriter(writer, exchange)


def seen_writer(writer: Any, exchange: Exchange) -> Any:
    """The client's incoming stream of a GET stream, seen by a recording exchange (never closes it)."""
    return _SeenGet(writer, exchange)


class _SeenGet(_SeenWriter):
    async def __aexit__(self, *exc: Any) -> Any:  # the GET stream does not own the connection's end
        return await self._inner.__aexit__(*exc)
