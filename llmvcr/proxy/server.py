"""Running the proxy: uvicorn in the foreground (``llmvcr serve``) or in a thread (tests, the fixture).

uvicorn is a maintained ASGI server: HTTP/1.1 keep-alive, many clients at once on one event
loop, graceful shutdown on SIGTERM and SIGINT (the app then closes every cassette, writing what is
pending, before the process ends), and httptools and uvloop when they are installed. The socket
is bound before the server starts, so port 0 gives a free port whose number is known at once.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
import socket
import threading
import time
from typing import Any
from urllib.parse import quote

from .app import Proxy
from .forward import proxy_extra

LOOPBACK = "127.0.0.1"


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address or ``localhost``."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


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

    Off loopback (``host`` another interface) a token is required by the control API and by
    cassette options sent in headers; one is made when none is given.
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
        mcp: dict[str, str] | None = None,
    ) -> None:
        if token is None and not is_loopback(host):
            token = secrets.token_urlsafe(24)
        self.host, self.token = host, token
        self.app = Proxy(
            os.fspath(folder), upstreams=upstreams, token=token, record_mode=record_mode, mcp=mcp
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

    def base_url(self, cassette: str | None = None) -> str:
        """The proxy's URL, with the ``/cassettes/<name>`` prefix that picks ``cassette``."""
        return f"{self.url}/cassettes/{quote(cassette, safe='')}" if cassette else self.url

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
        )
        self._server = uvicorn.Server(config)
        return self._server

    def run(self) -> None:
        """Serve until SIGTERM or SIGINT; every cassette is closed (and written) before it returns."""
        server = self._make()
        try:
            server.run(sockets=[self.socket])
        finally:
            self.app.cassettes.close_all()  # a shutdown the lifespan did not reach

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
        self.app.cassettes.close_all()
        self.socket.close()

    def __enter__(self) -> ProxyServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def instructions(server: ProxyServer) -> str:
    """What ``llmvcr serve`` prints: its URL and exactly what to set for each SDK."""
    url = server.url
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
    if server.token:
        lines += ["", f"Control API token (header x-llmvcr-token): {server.token}"]
    return "\n".join(lines)
