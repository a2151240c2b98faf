"""The proxy as an ASGI application: the control API, and each provider call as one more seam.

A provider call comes in as HTTP; its ``Request`` record is built by ``request_from_wire`` (the
translation every seam and importer uses), the cassette's ``Session.decide`` answers it, and the
answer is served (``llmvcr.proxy.replay``) or the call forwarded upstream and captured
(``llmvcr.proxy.forward``). Nothing here knows a provider's wire format beyond asking
``llmvcr.wire``. Every llmvcr error goes back as the provider's own error JSON.

Control API (JSON)::

    POST   /_llmvcr/cassettes/<name>   open a cassette with options ({"record_mode": "none", ...})
    DELETE /_llmvcr/cassettes/<name>   close it: the unplayed entries and the run's summary
    GET    /_llmvcr/cassettes          the open cassettes
    GET    /_llmvcr/health             {"ok": true}
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import unquote

from ..cassette import exactjson
from ..errors import LLMVCRError, ReplayDivergence
from ..wire.http_request import request_from_wire
from .cassettes import CassetteRefused, Cassettes, parse_options
from .forward import Upstream
from .mcp_route import McpRoute
from .replay import StreamCut, serve_entry
from .routes import (
    CONTROL_PREFIX,
    DEFAULT_UPSTREAMS,
    ERROR_STATUS,
    MEANING_HEADERS,
    NOT_FORWARDED,
    error_body,
    error_headers,
    options_from_headers,
    sdk_version,
    target,
    upstream_url,
)

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class Caller:
    """The SDK a call came from, as the session names it in ``recorded_with``."""

    __slots__ = ("name", "version")

    def __init__(self, name: str, version: str | None) -> None:
        self.name, self.version = name, version

    def sdk_version(self) -> str | None:
        return self.version


class Proxy:
    """The ASGI app of ``llmvcr serve``.

    ``folder`` holds the cassettes; ``upstreams`` maps a provider name to the base URL its calls are
    forwarded to when recording (the real APIs by default); ``token``, when set, is required by the
    control API and by every request that opens a cassette (``authorization: Bearer`` or
    ``x-llmvcr-token``).
    """

    def __init__(
        self,
        folder: str,
        *,
        upstreams: dict[str, str] | None = None,
        token: str | None = None,
        record_mode: str | None = None,
        mcp: dict[str, str] | None = None,
    ) -> None:
        self.cassettes = Cassettes(folder, record_mode=record_mode)
        self.mcp = McpRoute(mcp or {})  # --mcp NAME=URL: /mcp/NAME
        self.upstreams = {**DEFAULT_UPSTREAMS, **(upstreams or {})}
        self.token = token
        self.upstream = Upstream()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        path = scope["path"]
        if path.startswith(CONTROL_PREFIX):
            await self._control(scope, receive, send, headers)
            return
        if await self.mcp.handle(self.cassettes, self.upstream, scope, receive, send, headers):
            return
        await self._call(scope, receive, send, headers)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def aclose(self) -> None:
        """Close every cassette (writing what is pending) and the upstream connections."""
        self.mcp.close_all()
        await asyncio.to_thread(self.cassettes.close_all)
        await self.upstream.aclose()

    # -- provider calls ------------------------------------------------------------------------------
    async def _call(self, scope: Scope, receive: Receive, send: Send, headers: dict[str, str]) -> None:
        body = await _read_body(receive)
        raw_path = scope.get("raw_path") or scope["path"].encode()  # undecoded: a %2F stays in its segment
        where = target(raw_path.decode("latin-1"), headers)
        if where.provider is None:
            message = (
                f"llmvcr: {scope['method']} {where.path} is not a call of a provider llmvcr knows "
                f"(anthropic, openai, google); the proxy forwards only those, and only into a cassette"
            )
            await _error(send, None, message, "llmvcr_unknown_call")
            return
        only = self.cassettes.only() if where.cassette is None else None
        name = where.cassette or (only.name if only is not None else None)
        if name is None:
            message = (
                f"llmvcr: {scope['method']} {where.path} names no cassette, so it was not sent "
                f"({len(self.cassettes.names())} open). Name one with the header 'x-llmvcr-cassette: "
                f"<name>' or a base URL ending in /cassettes/<name>, or open just one with "
                f"POST /_llmvcr/cassettes/<name>"
            )
            await _error(send, where.provider, message, "llmvcr_no_cassette")
            return
        query = scope.get("query_string", b"").decode("latin-1")
        base = self.upstreams.get(where.provider, "")
        url = upstream_url(base, where.path, query)
        try:
            given = parse_options(options_from_headers(headers), from_headers=True)
            if given and not self._allowed(headers):
                raise CassetteRefused("llmvcr: cassette options in headers need the server's token")
            opened = self.cassettes.find(name, given)
            if opened is None:  # the first call into it: the file is read off the event loop
                opened = await asyncio.to_thread(self.cassettes.open, name, given)
            record = request_from_wire(
                scope["method"],
                url,
                headers.items(),
                body,
                meaning_headers=MEANING_HEADERS.get(where.provider, ()),
            )
            decision = opened.session.decide(Caller(where.provider, sdk_version(headers)), record)
        except LLMVCRError as err:
            await _error(send, where.provider, _hinted(err, name), _kind(err))
            return
        if decision.entry is not None:
            with contextlib.suppress(StreamCut):  # a stream recorded cut: the connection drops there
                await serve_entry(send, receive, decision.entry.response, decision.replay_speed)
            return
        if decision.fault is not None:  # an injected fault: the connection drops, as the SDK would see it
            raise ConnectionAbortedError(decision.fault.message)
        if not decision.recording:
            await _error(send, where.provider, "llmvcr: the cassette closed during the call", "llmvcr_closed")
            return
        forwarded = [(k, v) for k, v in scope["headers"] if not _skip(k)]
        started = False

        async def tracked(message: MutableMapping[str, Any]) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.upstream.forward(decision, scope["method"], url, forwarded, body, tracked, receive)
        except StreamCut:
            return  # the answer stops where the upstream's did; uvicorn closes the connection
        except LLMVCRError as err:  # an answer llmvcr cannot record (an encoding it cannot read)
            if not started:
                await _error(send, where.provider, str(err), "llmvcr_error")

    # -- control API ---------------------------------------------------------------------------------
    def _allowed(self, headers: dict[str, str]) -> bool:
        if self.token is None:
            return True
        given = headers.get("x-llmvcr-token") or headers.get("authorization", "").removeprefix("Bearer ")
        return hmac.compare_digest(given.encode(), self.token.encode())

    async def _control(self, scope: Scope, receive: Receive, send: Send, headers: dict[str, str]) -> None:
        body = await _read_body(receive)
        method, rest = scope["method"], scope["path"][len(CONTROL_PREFIX) :]
        if rest == "health":
            await _json(send, 200, {"ok": True})
            return
        if not self._allowed(headers):
            await _json(send, 401, {"error": "llmvcr: the control API needs the server's token"})
            return
        if rest in ("cassettes", "cassettes/") and method == "GET":
            await _json(send, 200, {"open": self.cassettes.names()})
            return
        if not rest.startswith("cassettes/") or method not in ("POST", "DELETE"):
            await _json(send, 404, {"error": f"llmvcr: no control endpoint {method} {scope['path']}"})
            return
        name = unquote(rest[len("cassettes/") :])
        try:
            if method == "DELETE":
                await _json(send, 200, await asyncio.to_thread(self.cassettes.close, name))
                return
            given = exactjson.loads(body) if body.strip() else {}
            if not isinstance(given, dict):
                raise CassetteRefused("llmvcr: the options must be a JSON object")
            opened = await asyncio.to_thread(
                self.cassettes.open, name, parse_options(given, from_headers=False)
            )
        except (LLMVCRError, ValueError) as err:
            await _json(send, 400, {"error": str(err)})
            return
        session = opened.session
        await _json(
            send,
            200,
            {
                "name": name,
                "path": session.path,
                "record_mode": session.record_mode,
                "entries": len(session.cassette),
            },
        )


def _skip(name: bytes) -> bool:
    lower = name.lower()
    return lower in _NOT_FORWARDED or lower.startswith(b"x-llmvcr-")


_NOT_FORWARDED = frozenset(n.encode() for n in NOT_FORWARDED)


def _kind(err: LLMVCRError) -> str:
    return "llmvcr_replay_divergence" if isinstance(err, ReplayDivergence) else "llmvcr_error"


def _hinted(err: LLMVCRError, name: str) -> str:
    """The error's own sentence, and how to re-record through the proxy."""
    message = str(err)
    if isinstance(err, ReplayDivergence):
        message += (
            f"\nThrough llmvcr serve: send the header 'x-llmvcr-record-mode: all' (or open it with "
            f'POST /_llmvcr/cassettes/{name} {{"record_mode": "all"}}) to re-record.'
        )
    return message


async def _read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


async def _error(send: Send, provider: str | None, message: str, kind: str) -> None:
    body = error_body(provider, message, kind)
    await send({"type": "http.response.start", "status": ERROR_STATUS, "headers": error_headers(body)})
    await send({"type": "http.response.body", "body": body})


async def _json(send: Send, status: int, payload: Any) -> None:
    body = exactjson.dumps(payload)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
