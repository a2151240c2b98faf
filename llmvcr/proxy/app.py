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
import os
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import unquote

from .. import wire
from ..cassette import exactjson
from ..errors import LLMVCRError, ReplayDivergence
from ..providers.placeholder_keys import carries_placeholder, refuse_recording
from ..wire.http_request import request_from_wire
from .cassettes import CassetteRefused, Cassettes, Opened, parse_options, unplayed_lines
from .forward import Upstream
from .guard import TOKEN_HEADER, Guard, is_json, split_token
from .mcp_route import McpRoute, mcp_target
from .replay import StreamCut, serve_entry
from .routes import (
    CONTROL_PREFIX,
    ERROR_STATUS,
    MAX_BODY,
    NOT_FORWARDED,
    default_upstreams,
    error_body,
    error_headers,
    meaning_headers,
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
    control API and by cassette options sent in headers, and with ``calls_need_token`` (off loopback)
    by every provider call (``llmvcr.proxy.guard``). ``allow_hosts``: ``Host`` names answered
    besides loopback and the bound address. A request body over ``max_body`` bytes is refused (413).
    ``report`` is told, as the proxy stops, each cassette's entries no call used.
    """

    def __init__(
        self,
        folder: str,
        *,
        upstreams: dict[str, str] | None = None,
        token: str | None = None,
        record_mode: str | None = None,
        allow_hosts: tuple[str, ...] = (),
        calls_need_token: bool = False,
        max_body: int = MAX_BODY,
        report: Callable[[str], None] | None = None,
        mcp: dict[str, str] | None = None,
    ) -> None:
        self.guard = Guard(token, allow_hosts=allow_hosts, calls_need_token=calls_need_token)
        self.cassettes = Cassettes(folder, record_mode=record_mode)
        self.mcp = McpRoute(mcp or {})  # --mcp NAME=URL: /mcp/NAME
        self.upstreams = {**default_upstreams(), **(upstreams or {})}
        self.token = token
        self.max_body = max_body
        self.report = report
        self.upstream = Upstream()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        raw_path = (scope.get("raw_path") or scope["path"].encode()).decode("latin-1")
        token, raw_path = split_token(raw_path)  # undecoded: a %2F stays in its segment
        path = unquote(raw_path)
        refused = self.guard.refusal(headers, scope.get("server"))
        control = path.startswith(CONTROL_PREFIX)
        if refused is not None:
            if control:
                await _json(send, 403, {"error": refused})
            else:
                provider = target(raw_path, headers).provider
                await _error(send, provider, refused, "llmvcr_refused", status=403)
            return
        if token is not None:  # the path's token counts as the header for every check
            headers[TOKEN_HEADER] = token
        if control:
            await self._control(scope, receive, send, headers, path)
            return
        found = mcp_target(raw_path, headers)
        if found is not None:
            await self._mcp(scope, receive, send, headers, token, found)
            return
        await self._call(scope, receive, send, headers, raw_path, token)

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
        """Close every cassette (writing what is pending) and the upstream connections; tell
        ``report`` each one's unplayed entries."""
        self.mcp.close_all()
        self.told(await asyncio.to_thread(self.cassettes.close_all))
        await self.upstream.aclose()

    def told(self, summaries: list[dict[str, Any]]) -> None:
        """Tell ``report`` the unplayed entries of each closed cassette."""
        if self.report is not None:
            for line in unplayed_lines(summaries):
                self.report(line)

    # -- provider calls ------------------------------------------------------------------------------
    async def _mcp(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        headers: dict[str, str],
        token: str | None,
        found: tuple[str | None, str],
    ) -> None:
        """A request for ``/mcp/NAME``: the same token, body limit and forwarded headers as a call."""
        if not self.guard.call_ok(headers, token, options=False):
            await _json(
                send, 401, {"error": "llmvcr: this proxy is bound off loopback: MCP calls need its token"}
            )
            return
        body = await _read_body(receive, headers, self.max_body)
        if body is None:
            await _json(send, 413, {"error": _too_large(self.max_body)})
            return
        forwarded = [(k, v) for k, v in scope["headers"] if not _skip(k) and self.guard.forwarded(k, v)]
        await self.mcp.handle(self.cassettes, self.upstream, scope, send, headers, found, body, forwarded)

    async def _call(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        headers: dict[str, str],
        raw_path: str,
        token: str | None,
    ) -> None:
        where = target(raw_path, headers)
        if not self.guard.call_ok(headers, token, options=False):
            message = (
                "llmvcr: this proxy is bound off loopback, so every call needs its token: the header "
                f"'{TOKEN_HEADER}: <token>' or a base URL starting with /token/<token>"
            )
            await _error(send, where.provider, message, "llmvcr_refused", status=401)
            return
        body = await _read_body(receive, headers, self.max_body)
        if body is None:
            await _error(send, where.provider, _too_large(self.max_body), "llmvcr_too_large", status=413)
            return
        if where.provider is None:
            message = (
                f"llmvcr: {scope['method']} {where.path} is not a call of a provider llmvcr knows "
                f"({', '.join(f.name for f in wire.formats())}); the proxy forwards only those, and only "
                f"into a cassette"
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
        opened: Opened | None = None
        try:
            given = parse_options(options_from_headers(headers), from_headers=True)
            if given and not self.guard.call_ok(headers, token, options=True):
                raise CassetteRefused("llmvcr: cassette options in headers need the server's token")
            opened = self.cassettes.find(name, given)
            if opened is None:  # the first call into it: the file is read off the event loop
                # no client opened it with the control API: no test bounds it, so its entries serve
                # every run (llmvcr.proxy.cassettes: "in turn")
                opened = await asyncio.to_thread(self.cassettes.open, name, given, in_turn=True)
            record = request_from_wire(
                scope["method"],
                url,
                headers.items(),
                body,
                meaning_headers=meaning_headers(where.provider),
            )
            decision = opened.session.decide(Caller(where.provider, sdk_version(headers)), record)
        except LLMVCRError as err:
            message = _hinted(err, name, self.cassettes.folder)
            if opened is not None and isinstance(err, ReplayDivergence):
                opened.divergences.append(message)  # the DELETE summary carries it
            await _error(send, where.provider, message, _kind(err))
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
        if carries_placeholder(scope["headers"], query):  # never sent upstream with a fake key
            message = str(refuse_recording(where.provider, f"{scope['method']} {where.path}"))
            await _error(send, where.provider, message, "llmvcr_no_key")
            return
        forwarded = [(k, v) for k, v in scope["headers"] if not _skip(k) and self.guard.forwarded(k, v)]
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
    async def _control(
        self, scope: Scope, receive: Receive, send: Send, headers: dict[str, str], path: str
    ) -> None:
        method, rest = scope["method"], path[len(CONTROL_PREFIX) :]
        if rest == "health":
            await _json(send, 200, {"ok": True})
            return
        if not self.guard.control_ok(headers):
            await _json(send, 401, {"error": "llmvcr: the control API needs the server's token"})
            return
        body = await _read_body(receive, headers, self.max_body)
        if body is None:
            await _json(send, 413, {"error": _too_large(self.max_body)})
            return
        if (method == "POST" or body) and not is_json(headers):
            message = "llmvcr: the control API takes JSON only: send 'content-type: application/json'"
            await _json(send, 415, {"error": message})
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
        except (LLMVCRError, ValueError, TypeError) as err:
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


def _hinted(err: LLMVCRError, name: str, folder: str) -> str:
    """The error's own sentence, with the re-record command of a proxy user, not pytest's."""
    message = str(err)
    if isinstance(err, ReplayDivergence):
        rerecord = f"llmvcr serve --record-mode all --cassette-dir {_shown(folder)} -- npm test"
        message = message.replace("pytest: -k <test> --llmvcr-record-mode=all", rerecord)
        message += (
            f"\nThrough llmvcr serve: run your tests under `{rerecord}`, open this one cassette with "
            f'cassette(name, {{ record_mode: "all" }}) (POST /_llmvcr/cassettes/{name} {{"record_mode": '
            f"\"all\"}}), or send the header 'x-llmvcr-record-mode: all'."
        )
    return message


def _shown(folder: str) -> str:
    """The cassette folder as a command line gives it: relative to here when it is under here."""
    here = os.getcwd()
    try:
        return os.path.relpath(folder, here) if os.path.commonpath([here, folder]) == here else folder
    except ValueError:  # another drive (Windows)
        return folder


async def _read_body(receive: Receive, headers: dict[str, str], limit: int) -> bytes | None:
    """The request body; None when it is over ``limit`` bytes. The rest of a body over it is read
    and dropped (memory stays flat), so the client, still sending, reads the 413 instead of a reset."""
    declared = headers.get("content-length", "")
    chunks: list[bytes] | None = None if declared.isdigit() and int(declared) > limit else []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        if chunks is not None:
            chunk = message.get("body", b"")
            size += len(chunk)
            chunks = chunks if size <= limit else None
            if chunks is not None:
                chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return None if chunks is None else b"".join(chunks)


def _too_large(limit: int) -> str:
    return (
        f"llmvcr: the request body is over the proxy's limit of {limit // 2**20} MiB; start llmvcr "
        f"serve with --max-body-mb N to take larger ones"
    )


async def _error(
    send: Send, provider: str | None, message: str, kind: str, status: int = ERROR_STATUS
) -> None:
    body = error_body(provider, message, kind, status)
    await send({"type": "http.response.start", "status": status, "headers": error_headers(body)})
    await send({"type": "http.response.body", "body": body})


async def _json(send: Send, status: int, payload: Any) -> None:
    body = exactjson.dumps(payload)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
