"""Running the proxy: uvicorn in the foreground (``llmvcr serve``) or in a thread (tests, the fixture).

uvicorn is a maintained ASGI server: HTTP/1.1 keep-alive, many clients at once on one event
loop, graceful shutdown on SIGTERM and SIGINT (the app then closes every cassette, writing what is
pending, before the process ends), and httptools and uvloop when they are installed. The socket
is bound before the server starts, so port 0 gives a free port whose number is known at once.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import socket
import sys
import threading
import time
from typing import Any
from urllib.parse import quote

from .app import Proxy
from .forward import proxy_extra
from .guard import TOKEN_PREFIX, is_loopback
from .routes import MAX_BODY

LOOPBACK = "127.0.0.1"
HEADER_TIMEOUT = 10.0  # seconds a new connection has to send its request's headers
__all__ = ["LOOPBACK", "ProxyServer", "instructions", "is_loopback"]


def with_header_deadline(protocol: type[asyncio.Protocol], timeout: float) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol, closing a connection that has not sent its request headers within
    ``timeout`` seconds (uvicorn has no such setting: a socket sending nothing, or a byte at a
    time, stays open for ever). Only ``asyncio.Protocol``'s own methods are used."""

    class HeaderDeadline(protocol):  # type: ignore[valid-type,misc]
        def connection_made(self, transport: Any) -> None:
            self._llmvcr_tail = b""
            self._llmvcr_timer: Any = asyncio.get_running_loop().call_later(timeout, transport.close)
            super().connection_made(transport)

        def data_received(self, data: bytes) -> None:
            if self._llmvcr_timer is not None:
                seen = self._llmvcr_tail + data
                if b"\r\n\r\n" in seen:  # the headers are in: the deadline is met
                    self._llmvcr_timer.cancel()
                    self._llmvcr_timer = None
                self._llmvcr_tail = seen[-3:]
            super().data_received(data)

        def connection_lost(self, exc: Exception | None) -> None:
            if self._llmvcr_timer is not None:
                self._llmvcr_timer.cancel()
            super().connection_lost(exc)

    return HeaderDeadline


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.setblocking(False)
    return sock


class ProxyServer:
    """``llmvcr serve`` as an object: ``start()`` runs it in a thread, ``run()`` in the foreground.

    >>> with ProxyServer("cassettes") as proxy:
    ...     env = proxy.env()        # ANTHROPIC_BASE_URL, OPENAI_BASE_URL, GOOGLE_GEMINI_BASE_URL

    Off loopback (``host`` another interface) a token is required by the control API and by every
    call (``llmvcr.proxy.guard``); one is made (and printed) when none is given. An empty token is
    refused. ``allow_hosts``: ``Host`` names to answer besides loopback and the bound address.
    ``report``: where the unplayed entries of each cassette are told as it stops (default stderr).
    """

    def __init__(
        self,
        folder: str | os.PathLike[str] = "cassettes",
        *,
        host: str = LOOPBACK,
        port: int = 0,
        upstreams: dict[str, str] | None = None,
        token: str | None = None,
        record_mode: str | None = None,
        log_level: str = "warning",
        loop: str = "auto",
        allow_hosts: tuple[str, ...] = (),
        max_body: int = MAX_BODY,
        header_timeout: float = HEADER_TIMEOUT,
        report: Any = None,
        mcp: dict[str, str] | None = None,
    ) -> None:
        if token is not None and not token.strip():
            raise ValueError("llmvcr serve: the token is empty; give a non-empty one, or none at all")
        wide = not is_loopback(host)
        self.token_made = token is None and wide  # printed; a token the user gave never is
        if self.token_made:
            token = secrets.token_urlsafe(24)
        self.host, self.token, self.header_timeout = host, token, header_timeout
        self.app = Proxy(
            os.fspath(folder),
            upstreams=upstreams,
            token=token,
            record_mode=record_mode,
            allow_hosts=(*allow_hosts, host),  # the URL it prints names the bound address
            calls_need_token=wide,
            mcp=mcp,
            max_body=max_body,
            report=report or (lambda line: print(line, file=sys.stderr, flush=True)),
        )
        self.socket = bind(host, port)
        self.port = self.socket.getsockname()[1]
        self.log_level, self.loop = log_level, loop
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{shown}:{self.port}"

    def base_url(self, cassette: str | None = None, token: str | None = None) -> str:
        """The proxy's URL, with the ``/cassettes/<name>`` prefix that picks ``cassette``; off loopback
        it starts with ``/token/<token>`` (``token``: what to show in its place)."""
        url = self.url
        if self.app.guard.calls_need_token:
            url += TOKEN_PREFIX + (token or quote(self.token or "", safe=""))
        return f"{url}/cassettes/{quote(cassette, safe='')}" if cassette else url

    def env(self, cassette: str | None = None) -> dict[str, str]:
        """The variables that point each SDK at the proxy, into ``cassette`` when one is named."""
        base = self.base_url(cassette)
        return {
            "ANTHROPIC_BASE_URL": base,
            "OPENAI_BASE_URL": f"{base}/v1",
            "GOOGLE_GEMINI_BASE_URL": base,
            "LLMVCR_PROXY_URL": base,
        }

    def _make(self) -> Any:
        uvicorn = proxy_extra("uvicorn")
        config = uvicorn.Config(
            self.app,
            log_level=self.log_level,
            loop=self.loop,
            access_log=False,
            server_header=False,  # a replayed answer carries the recorded headers only
            date_header=False,
            lifespan="on",
            timeout_graceful_shutdown=30,
            timeout_keep_alive=5,  # an idle kept-alive connection closes (uvicorn's own setting)
        )
        config.load()
        config.http_protocol_class = with_header_deadline(config.http_protocol_class, self.header_timeout)
        self._server = uvicorn.Server(config)
        return self._server

    def run(self) -> None:
        """Serve until SIGTERM or SIGINT; every cassette is closed (and written) before it returns."""
        server = self._make()
        try:
            server.run(sockets=[self.socket])
        finally:
            self.app.told(self.app.cassettes.close_all())  # a shutdown the lifespan did not reach

    def start(self, timeout: float = 10.0) -> ProxyServer:
        """Serve in a daemon thread; returns once the server accepts connections."""
        server = self._make()
        self._thread = threading.Thread(
            target=server.run, kwargs={"sockets": [self.socket]}, name="llmvcr-serve", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"llmvcr: the proxy on {self.url} did not start")
            time.sleep(0.005)
        return self

    def stop(self) -> None:
        """Stop serving; every open cassette is closed and written first."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=60)
            self._thread = None
        self.app.told(self.app.cassettes.close_all())
        self.socket.close()

    def __enter__(self) -> ProxyServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def instructions(server: ProxyServer) -> str:
    """What ``llmvcr serve`` prints: its URL and exactly what to set for each SDK (never a token the
    user gave: ``$LLMVCR_TOKEN`` stands in its place)."""
    url = server.base_url(token=None if server.token_made else "$LLMVCR_TOKEN")
    lines = [
        f"llmvcr serve: listening on {url} (cassettes in {server.app.cassettes.folder})",
        "",
        "Point each SDK at it:",
        f"  export ANTHROPIC_BASE_URL={url}",
        f"  export OPENAI_BASE_URL={url}/v1",
        f"  export GOOGLE_GEMINI_BASE_URL={url}        # google-genai (Python) 1.x and later",
        f"  google-genai (Python): genai.Client(http_options=types.HttpOptions(base_url='{url}'))",
        f"  @google/genai (Node):  new GoogleGenAI({{apiKey, httpOptions: {{baseUrl: '{url}'}}}})",
        "",
        "Choose the cassette per client or per test:",
        "  header      x-llmvcr-cassette: <name>          (options: x-llmvcr-record-mode: none, ...)",
        f"  base URL    {url}/cassettes/<name>            (OpenAI: {url}/cassettes/<name>/v1)",
        f"  control API POST/DELETE {url}/_llmvcr/cassettes/<name>",
    ]
    if server.app.mcp.servers:
        lines += ["", "MCP servers (streamable HTTP), recorded into the same cassettes:"]
        lines += [f"  {url}/mcp/{name}  ->  {target}" for name, target in server.app.mcp.servers.items()]
    if server.token_made:
        lines += ["", f"Token (header x-llmvcr-token, or the /token/ path above): {server.token}"]
    elif server.token:
        lines += ["", "Token: the one given (header x-llmvcr-token, or the /token/ path above)"]
    return "\n".join(lines)
