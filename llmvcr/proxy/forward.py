"""A call the cassette records: forwarded upstream, passed back event by event, captured as it goes.

The capture is the seams' own (``llmvcr.providers._streams.Capture``): it reads the body as sent
(the client undoes any ``content-encoding`` itself, the capture does too), keeps each event's
arrival offset from when the request left, and hands the record to ``Decision.record``, which
redacts it and writes it. The client's answer ends only once its entry is on disk, so a server
killed after a client got its answer has lost nothing. A client that hangs up mid-stream leaves
the entry marked truncated, as an SDK that stops reading does; an upstream that drops the
connection leaves its failure in the entry, and the client's connection drops too.
"""

from __future__ import annotations

import asyncio
import importlib
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..providers._streams import Capture
from ..session import Decision
from .replay import StreamCut
from .routes import error_body, error_headers

Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
# never passed back: hop-by-hop, or recomputed by the server for the body it sends
_NOT_RETURNED = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length", "trailer"})
_NEEDS = (
    "llmvcr serve needs the proxy extra: pip install -e 'path/to/llmvcr[proxy]' from a checkout, "
    "or pip install 'dist/pyllmvcr-<version>-py3-none-any.whl[proxy]' from a built wheel"
)


def proxy_extra(name: str) -> Any:
    """The module ``name`` of the ``[proxy]`` extra (httpx, uvicorn), or an ImportError that says
    which extra brings it."""
    try:
        return importlib.import_module(name)
    except ImportError as err:
        raise ImportError(f"{_NEEDS} ({err})") from None


class Upstream:
    """The HTTP client the proxy forwards recorded calls with (one pool for every client)."""

    def __init__(self) -> None:
        self._http: Any = None

    def client(self) -> Any:
        if self._http is None:
            httpx = proxy_extra("httpx")
            # no timeout of its own: the caller's SDK has one, and a long generation is not an error
            self._http = httpx.AsyncClient(timeout=None, follow_redirects=False, trust_env=False)
        return self._http

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    async def forward(
        self,
        decision: Decision,
        method: str,
        url: str,
        headers: list[tuple[bytes, bytes]],
        body: bytes,
        send: Send,
        receive: Receive,
    ) -> None:
        """Send the call upstream, pass the answer back and record it into ``decision``."""
        httpx = proxy_extra("httpx")
        client = self.client()
        request = client.build_request(
            method, url, headers=[*headers, (b"accept-encoding", b"identity")], content=body
        )
        start = time.perf_counter()
        try:
            response = await client.send(request, stream=True)
        except httpx.HTTPError as err:
            provider, shown = decision.provider, shown_url(url)
            reason = str(err).replace(url, shown)
            message = (
                f"llmvcr: the call could not reach its upstream {shown} to be recorded "
                f"({type(err).__name__}: {reason}); check --upstream {provider}=URL"
            )
            payload = error_body(provider, message, "llmvcr_upstream")
            # a 502, which an SDK may retry: the upstream itself did not answer, nothing was recorded
            await send({"type": "http.response.start", "status": 502, "headers": error_headers(payload)})
            await send({"type": "http.response.body", "body": payload})
            return
        try:
            await _pass_back(decision, response, start, send, receive, httpx)
        finally:
            await response.aclose()


def shown_url(url: str) -> str:
    """``url`` as an error may show it: no ``user:password@``, no query (a Gemini ``?key=``)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = (f"[{host}]" if ":" in host else host) + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


async def _pass_back(
    decision: Decision, response: Any, start: float, send: Send, receive: Receive, httpx: Any
) -> None:
    headers: dict[str, str] = {}
    for name, value in response.headers.multi_items():
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    sse = "text/event-stream" in headers.get("content-type", "")
    capture = Capture(decision.record, response.status_code, headers, sse)
    capture.restart_clock(start)
    capture.wire_encoded()
    decision.on_close(lambda: capture.finish(truncated=True))  # the cassette closed mid-stream
    returned = [
        (k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items() if k not in _NOT_RETURNED
    ]
    returned.append((b"x-llmvcr", b"recorded"))
    session = decision.session
    if not sse:  # the whole body first: the answer leaves once its entry is written
        chunks: list[bytes] = []
        try:
            async for chunk in response.aiter_raw():
                chunks.append(chunk)  # noqa: PERF401 - what arrived is kept when the body breaks
        except httpx.HTTPError as err:  # cut: the client gets what arrived, then the connection drops
            capture.feed(b"".join(chunks))
            capture.failed(err)
            await _written(session)
            await send({"type": "http.response.start", "status": response.status_code, "headers": returned})
            await send({"type": "http.response.body", "body": b"".join(chunks), "more_body": True})
            raise StreamCut(str(err)) from None
        raw = b"".join(chunks)
        capture.feed(raw)
        capture.finish()
        await _written(session)
        returned.append((b"content-length", str(len(raw)).encode("ascii")))
        await send({"type": "http.response.start", "status": response.status_code, "headers": returned})
        await send({"type": "http.response.body", "body": raw})
        return
    await send({"type": "http.response.start", "status": response.status_code, "headers": returned})
    hung_up = asyncio.ensure_future(receive())  # completes with http.disconnect when the client goes
    try:
        async for chunk in response.aiter_raw():
            capture.feed(chunk)
            if hung_up.done():
                capture.finish(truncated=True)
                break
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        else:
            capture.finish()
    except httpx.HTTPError as err:
        capture.failed(err)
        await _written(session)
        raise StreamCut(str(err)) from None
    finally:
        hung_up.cancel()
    await _written(session)
    await send({"type": "http.response.body", "body": b""})


async def _written(session: Any) -> None:
    """Wait until what the session recorded is on disk (its writer may have deferred it)."""
    if session is not None:
        await asyncio.to_thread(session.flush)
