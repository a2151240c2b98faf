"""MCP servers through the proxy: ``llmvcr serve --mcp NAME=URL`` serves the streamable HTTP MCP
server at URL as ``/mcp/NAME``, into the same cassettes the provider calls go to.

A client (any language's MCP SDK) connects to ``http://127.0.0.1:PORT/mcp/NAME``, choosing its
cassette as a provider call does: the header ``x-llmvcr-cassette``, a URL prefix
``/cassettes/<cassette>/mcp/NAME``, or the one cassette open. Each connection is one
``llmvcr.mcp.exchange.Exchange``, decided once as it opens (its ``initialize``):

- recording, every message is forwarded to URL and its answer (JSON, or an SSE stream) passed back,
  both seen by the exchange; the server's own stream (``GET``) is forwarded too;
- replaying, URL is never contacted: the proxy answers each message from the cassette, under a
  session id of its own, and refuses the ``GET`` stream (405, which clients take as "none").

The server is named by URL (``llmvcr.wire.mcp.http_server``), so a cassette recorded in-process
against the same server replays through the proxy, and the other way round.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import orjson

from ..errors import LLMVCRError
from ..mcp.exchange import Exchange
from ..wire import mcp as wire
from .cassettes import CassetteRefused, Cassettes, parse_options
from .routes import CASSETTE_HEADER, PATH_PREFIX, options_from_headers

Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
JSON = dict[str, Any]
MCP_PREFIX = "/mcp/"
SESSION_HEADER = "mcp-session-id"
_FORWARDED_BACK = ("content-type", SESSION_HEADER, "mcp-protocol-version")


def servers_of(given: list[str]) -> dict[str, str]:
    """``["time=http://127.0.0.1:8000/mcp"]`` -> ``{"time": "http://127.0.0.1:8000/mcp"}``."""
    out = {}
    for item in given:
        name, sep, url = item.partition("=")
        if not sep or not name or "/" in name or not url.startswith(("http://", "https://")):
            raise ValueError(
                f"--mcp {item!r}: give NAME=URL, a name without '/' and the server's http(s) URL"
            )
        out[name] = url
    return out


def mcp_target(raw_path: str, headers: dict[str, str]) -> tuple[str | None, str] | None:
    """The cassette (None: none named) and the server name of a request to ``/mcp/NAME``, or None."""
    cassette = headers.get(CASSETTE_HEADER) or None
    path = raw_path.partition("?")[0]
    if path.startswith(PATH_PREFIX):
        name, _, rest = path[len(PATH_PREFIX) :].partition("/")
        if name:
            cassette, path = unquote(name), "/" + rest
    if not path.startswith(MCP_PREFIX):
        return None
    return cassette, unquote(path[len(MCP_PREFIX) :].strip("/"))


@dataclass(eq=False)
class _Connection:
    """One client connection through the proxy to one MCP server, in one cassette."""

    exchange: Exchange
    session_id: str | None
    waiting: asyncio.Queue[JSON] = field(default_factory=asyncio.Queue)  # replay: released late


class McpRoute:
    """The ``/mcp/NAME`` routes of one proxy."""

    def __init__(self, servers: dict[str, str]) -> None:
        self.servers = dict(servers)
        self._connections: dict[tuple[str, str, str | None], _Connection] = {}

    async def handle(
        self,
        cassettes: Cassettes,
        upstream: Any,
        scope: MutableMapping[str, Any],
        send: Send,
        headers: dict[str, str],
        found: tuple[str | None, str],
        body: bytes,
        forwarded: list[tuple[bytes, bytes]],
    ) -> None:
        """Serve a request for ``/mcp/NAME`` (``found``: :func:`mcp_target`'s answer). The proxy has
        read ``body`` within its limit and chosen the ``forwarded`` headers (never its token)."""
        cassette, name = found
        url = self.servers.get(name)
        if url is None:
            known = ", ".join(sorted(self.servers)) or "none"
            await _text(
                send,
                404,
                f"llmvcr: no MCP server {name!r} (served: {known}); start llmvcr serve with --mcp {name}=URL",
            )
            return
        try:
            opened = _open(cassettes, cassette, headers)
        except LLMVCRError as err:
            await _rpc_error(send, body, str(err))
            return
        key = (opened.name, name, headers.get(SESSION_HEADER))
        method = scope["method"]
        connection = self._connections.get(key)
        if connection is None and method == "POST" and _opens(body, headers):
            try:
                exchange = Exchange.open(opened.session, wire.http_server(url))
            except LLMVCRError as err:  # a replay-only cassette with nothing for this server
                await _rpc_error(send, body, str(err))
                return
            own = "llmvcr-" + secrets.token_hex(8) if exchange.replaying else None
            connection = _Connection(exchange, own)
        if connection is None:
            await _text(
                send,
                404 if headers.get(SESSION_HEADER) else 400,
                f"llmvcr: {method} /mcp/{name}: no open MCP connection with this session; "
                f"a connection starts with initialize",
            )
            return
        if connection.exchange.replaying:
            await self._replay(connection, key, method, body, send)
        else:
            await self._record(connection, key, upstream, scope, url, body, forwarded, send)

    # -- replay: answered from the cassette, nothing sent ----------------------------------------
    async def _replay(
        self, connection: _Connection, key: tuple[str, str, str | None], method: str, body: bytes, send: Send
    ) -> None:
        exchange = connection.exchange
        if method == "GET":  # no server stream: the cassette is the server
            await _text(send, 405, "llmvcr: a replayed MCP server sends nothing unasked")
            return
        if method == "DELETE":
            self._connections.pop(key, None)
            await _text(send, 200, "")
            return
        messages = _messages(body)
        asked = [m.get("id") for m in messages if wire.kind(m) == "request"]
        answers: list[JSON] = []
        for message in messages:
            answers.extend(exchange.from_client(message))
        if key[2] is None:  # the initialize: from now on it is known by the id it is given
            self._connections[(key[0], key[1], connection.session_id)] = connection
        extra = [(SESSION_HEADER.encode(), str(connection.session_id).encode())]
        if not asked:  # notifications and answers to the server's requests: what they release
            for answer in answers:
                connection.waiting.put_nowait(answer)
            await _respond(send, 202, b"", extra)
            return
        done = {m.get("id") for m in answers if wire.kind(m) in ("result", "error")}
        if len(answers) == 1 and set(asked) <= done:
            await _respond(
                send, 200, orjson.dumps(answers[0]), [*extra, (b"content-type", b"application/json")]
            )
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [*extra, (b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")],
            }
        )
        pending = list(answers)
        while True:
            for answer in pending:
                await send({"type": "http.response.body", "body": _event(answer), "more_body": True})
                if wire.kind(answer) in ("result", "error"):
                    done.add(answer.get("id"))
            if set(asked) <= done:
                break
            pending = [await connection.waiting.get()]  # the client answers a server request first
        await send({"type": "http.response.body", "body": b""})

    # -- recording: forwarded, both ways seen ----------------------------------------------------
    async def _record(
        self,
        connection: _Connection,
        key: tuple[str, str, str | None],
        upstream: Any,
        scope: MutableMapping[str, Any],
        url: str,
        body: bytes,
        forwarded: list[tuple[bytes, bytes]],
        send: Send,
    ) -> None:
        exchange, method = connection.exchange, scope["method"]
        if method == "POST":
            for message in _messages(body):
                exchange.from_client(message)
        client = upstream.client()
        request = client.build_request(method, url, headers=forwarded, content=body)
        try:
            response = await client.send(request, stream=True)
        except Exception as err:  # the server is not there: say so, as the SDK's own error
            await _rpc_error(
                send,
                body,
                f"llmvcr: the MCP server {url} could not be reached to record it "
                f"({type(err).__name__}: {err})",
            )
            return
        try:
            given = response.headers.get(SESSION_HEADER)
            if key[2] is None:
                self._connections[(key[0], key[1], given)] = connection
            back = [
                (k.encode(), response.headers[k].encode()) for k in _FORWARDED_BACK if k in response.headers
            ]
            await send({"type": "http.response.start", "status": response.status_code, "headers": back})
            events = _Events()
            async for chunk in response.aiter_raw():
                for message in events.feed(chunk, "event-stream" in response.headers.get("content-type", "")):
                    exchange.from_server(message)
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            for message in events.rest():
                exchange.from_server(message)
        finally:
            await response.aclose()
        if method == "DELETE":
            exchange.close()
            self._connections.pop(key, None)
        await asyncio.to_thread(exchange.session.flush)
        with contextlib.suppress(Exception):
            await send({"type": "http.response.body", "body": b""})

    def close_all(self) -> None:
        """The proxy stops: every recording connection says what it left unanswered."""
        for connection in self._connections.values():
            connection.exchange.close()
        self._connections.clear()


class _Events:
    """The JSON-RPC messages of an answer: one JSON body, or the ``data`` of each SSE event."""

    def __init__(self) -> None:
        self._buffer = b""
        self._sse = False

    def feed(self, chunk: bytes, sse: bool) -> list[Any]:
        self._sse = sse
        self._buffer += chunk
        if not sse:
            return []
        out: list[Any] = []
        text = self._buffer.replace(b"\r\n", b"\n")
        *events, self._buffer = text.split(b"\n\n")
        for event in events:
            out.extend(_data_of(event))
        return out

    def rest(self) -> list[Any]:
        if not self._buffer.strip():
            return []
        if self._sse:
            return _data_of(self._buffer)
        try:
            parsed = orjson.loads(self._buffer)
        except orjson.JSONDecodeError:
            return []
        return parsed if isinstance(parsed, list) else [parsed]


def _data_of(event: bytes) -> list[Any]:
    data = b"\n".join(line[5:].lstrip(b" ") for line in event.split(b"\n") if line.startswith(b"data:"))
    if not data.strip():
        return []
    try:
        return [orjson.loads(data)]
    except orjson.JSONDecodeError:
        return []


def _open(cassettes: Cassettes, name: str | None, headers: dict[str, str]) -> Any:
    only = cassettes.only() if name is None else None
    name = name or (only.name if only is not None else None)
    if name is None:
        raise CassetteRefused(
            f"llmvcr: this MCP connection names no cassette ({len(cassettes.names())} open), so nothing was "
            f"sent. Name one with the header '{CASSETTE_HEADER}: <name>' or the URL "
            f"/cassettes/<name>/mcp/<server>, or open just one with POST /_llmvcr/cassettes/<name>"
        )
    given = parse_options(options_from_headers(headers), from_headers=True)
    return cassettes.find(name, given) or cassettes.open(name, given)


def _opens(body: bytes, headers: dict[str, str]) -> bool:
    """A request that starts a connection: an ``initialize``, or any request when no session is named
    (a server that keeps none)."""
    messages = _messages(body)
    return any(m.get("method") == "initialize" for m in messages) or (
        SESSION_HEADER not in headers and any(wire.kind(m) == "request" for m in messages)
    )


def _messages(body: bytes) -> list[JSON]:
    try:
        parsed = orjson.loads(body) if body.strip() else []
    except orjson.JSONDecodeError:
        return []
    items = parsed if isinstance(parsed, list) else [parsed]
    return [m for m in items if isinstance(m, dict)]


def _event(message: JSON) -> bytes:
    return b"event: message\ndata: " + orjson.dumps(message) + b"\n\n"


async def _respond(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _text(send: Send, status: int, text: str) -> None:
    await _respond(send, status, text.encode(), [(b"content-type", b"text/plain; charset=utf-8")])


async def _rpc_error(send: Send, body: bytes, message: str) -> None:
    """An llmvcr error as the JSON-RPC error answer of the request it stopped (the SDK raises it)."""
    ids = [m.get("id") for m in _messages(body) if wire.kind(m) == "request"]
    if not ids:
        await _text(send, 424, message)
        return
    answer = wire.error_answer(ids[0], message)
    await _respond(send, 200, orjson.dumps(answer), [(b"content-type", b"application/json")])
