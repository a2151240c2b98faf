"""``llmvcr serve --mcp NAME=URL``: a streamable HTTP MCP server served as /mcp/NAME, recorded into the
proxy's cassettes while forwarding, then replayed with the server stopped and every socket but the
proxy's refused. The client is the ``mcp`` SDK's own."""

from __future__ import annotations

import http.server
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp.client.streamable_http")
pytest.importorskip("uvicorn")

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from llmvcr.cli.serve import mcp_servers
from llmvcr.errors import CommandError
from llmvcr.proxy import ProxyServer, instructions
from llmvcr.proxy.mcp_route import mcp_target
from llmvcr.storage.files import load_cassette

SERVER = Path(__file__).resolve().parent.parent / "mcp" / "clock_server.py"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def clock() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, str(SERVER), "http", str(port)], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}/mcp", proc
    finally:
        proc.terminate()
        proc.wait(10)


async def _session(url: str) -> dict[str, Any]:
    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            now = await session.call_tool("now", {})
            added = await session.call_tool("add", {"a": 20, "b": 22})
    return {
        "tools": sorted(t.name for t in tools.tools),
        "now": now.content[0].text,  # type: ignore[union-attr]
        "add": added.content[0].text,  # type: ignore[union-attr]
    }


@pytest.mark.slow
def test_an_mcp_server_through_the_proxy_records_then_replays_with_the_server_stopped(
    tmp_path: Path, clock: tuple[str, subprocess.Popen[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, proc = clock
    with ProxyServer(tmp_path, mcp={"clock": url}, loop="asyncio") as proxy:
        assert f"{proxy.url}/mcp/clock  ->  {url}" in instructions(proxy)
        recorded = anyio.run(_session, f"{proxy.url}/cassettes/agent/mcp/clock")
    proc.terminate()
    proc.wait(10)
    path = tmp_path / "agent.yaml"
    entries = load_cassette(str(path)).entries
    assert [e.request.method for e in entries] == ["initialize", "tools/list", "tools/call", "tools/call"]
    assert {(e.provider, e.request.path) for e in entries} == {("mcp", "http://127.0.0.1/mcp")}
    assert recorded["add"] == "42" and "now" in recorded["tools"]

    with ProxyServer(tmp_path, mcp={"clock": url}, loop="asyncio", record_mode="none") as proxy:
        attempts: list[Any] = []
        real_connect = socket.socket.connect

        def only_the_proxy(self: socket.socket, address: Any) -> None:
            if isinstance(address, tuple) and address[1] == proxy.port:
                return real_connect(self, address)
            attempts.append(address)
            raise OSError(f"network blocked: connect to {address!r}")

        monkeypatch.setattr(socket.socket, "connect", only_the_proxy)
        replayed = anyio.run(_session, f"{proxy.url}/cassettes/agent/mcp/clock")
        closed = proxy.app.cassettes.close("agent")
    assert replayed == recorded  # the recorded time, from a server that is not running
    assert attempts == []
    assert closed["replayed"] == 4 and closed["unplayed"] == []


@pytest.mark.slow
def test_a_replay_only_cassette_without_the_server_says_so_at_initialize(tmp_path: Path) -> None:
    (tmp_path / "empty.yaml").write_text("version: 1\nentries: []\n")
    dead = f"http://127.0.0.1:{_free_port()}/mcp"
    with ProxyServer(tmp_path, mcp={"clock": dead}, loop="asyncio", record_mode="none") as proxy:
        with pytest.raises(BaseException) as caught:
            anyio.run(_session, f"{proxy.url}/cassettes/empty/mcp/clock")
    text = repr(caught.value)
    errors: list[BaseException] = [caught.value]
    while getattr(errors[-1], "exceptions", None):
        errors.append(errors[-1].exceptions[0])  # type: ignore[attr-defined]
    text += " ".join(str(e) for e in errors)
    assert "holds no MCP traffic for the server http://127.0.0.1/mcp" in text


def test_the_route_names_its_cassette_and_server() -> None:
    assert mcp_target("/mcp/time", {}) == (None, "time")
    assert mcp_target("/cassettes/a%2Fb/mcp/time", {}) == ("a/b", "time")
    assert mcp_target("/mcp/time", {"x-llmvcr-cassette": "c"}) == ("c", "time")
    assert mcp_target("/v1/messages", {}) is None
    assert mcp_servers(["time=http://127.0.0.1:9/mcp"]) == {"time": "http://127.0.0.1:9/mcp"}
    with pytest.raises(CommandError, match="NAME=URL"):
        mcp_servers(["time"])


class _Upstream:
    """An MCP server stand-in that keeps the headers of each request it gets and answers initialize."""

    def __init__(self) -> None:

        seen = self.seen = []  # type: list[dict[str, str]]

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                seen.append({k.lower(): v for k, v in self.headers.items()})
                self.rfile.read(int(self.headers.get("content-length") or 0))
                body = b'{"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-06-18"}}'
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/mcp"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


INITIALIZE = (
    b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}}'
)


def _post(url: str, body: bytes, **headers: str) -> tuple[int, bytes]:

    sent = {"content-type": "application/json", "accept": "application/json, text/event-stream", **headers}
    request = urllib.request.Request(url, data=body, headers=sent, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def test_the_proxys_token_never_reaches_an_mcp_server(tmp_path: Path) -> None:
    upstream = _Upstream()
    token = "proxy-token-0123456789abcdef"
    try:
        with ProxyServer(tmp_path, mcp={"clock": upstream.url}, loop="asyncio", token=token) as proxy:
            status, _ = _post(
                f"{proxy.url}/cassettes/agent/mcp/clock",
                INITIALIZE,
                authorization=f"Bearer {token}",
                **{"x-llmvcr-token": token, "x-api-key": "the-server-s-own-key"},
            )
    finally:
        upstream.server.shutdown()
    assert status == 200
    assert len(upstream.seen) == 1
    assert "authorization" not in upstream.seen[0] and "x-llmvcr-token" not in upstream.seen[0]
    assert upstream.seen[0]["x-api-key"] == "the-server-s-own-key"  # the caller's own headers go on


def test_an_mcp_body_over_the_limit_is_refused_before_it_is_forwarded(tmp_path: Path) -> None:
    upstream = _Upstream()
    try:
        with ProxyServer(tmp_path, mcp={"clock": upstream.url}, loop="asyncio", max_body=64) as proxy:
            status, body = _post(f"{proxy.url}/cassettes/agent/mcp/clock", INITIALIZE)
    finally:
        upstream.server.shutdown()
    assert status == 413 and b"--max-body-mb" in body
    assert upstream.seen == []
