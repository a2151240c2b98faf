"""``llmvcr mcp`` for a client in another language: the TypeScript MCP SDK's client (``tests/mcp/node``)
starts ``llmvcr mcp`` as its stdio server, which records the Python server it wraps, then answers
from the cassette with the server's path pointing nowhere."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llmvcr.proxy import ProxyServer
from llmvcr.storage.files import load_cassette

NODE = Path(__file__).parent / "node"
SERVER = Path(__file__).with_name("clock_server.py")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (NODE / "node_modules" / "@modelcontextprotocol" / "sdk").exists()
        or shutil.which("node") is None,
        reason="run `npm ci` in tests/mcp/node (.ci/run does)",
    ),
]


def _client(*command: str) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    done = subprocess.run(
        ["node", str(NODE / "client.mjs"), sys.executable, "-m", "llmvcr", "mcp", *command],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_the_typescript_sdk_records_and_replays_through_llmvcr_mcp(tmp_path: Path) -> None:
    pytest.importorskip("mcp.server")  # the wrapped server is a Python one
    path = str(tmp_path / "node.yaml")
    recorded = _client("--cassette", path, "--", sys.executable, str(SERVER))
    assert recorded["add"] == "9" and "now" in recorded["tools"]  # type: ignore[operator]
    methods = [e.request.method for e in load_cassette(path).entries]
    assert methods == ["initialize", "tools/list", "tools/call", "tools/call"]
    replayed = _client("--cassette", path, "--record-mode", "none", "--", "/nonexistent/python3", str(SERVER))
    assert replayed == recorded  # the recorded time; the server was never started


def test_the_typescript_sdk_records_and_replays_through_the_proxys_mcp_route(tmp_path: Path) -> None:
    """``llmvcr serve --mcp clock=URL``: the TypeScript SDK's streamable HTTP client records the Python
    server through /mcp/clock, then replays with the server stopped."""
    pytest.importorskip("mcp.server")
    pytest.importorskip("uvicorn")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, str(SERVER), "http", str(port)], stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        with ProxyServer(tmp_path, mcp={"clock": url}) as proxy:
            recorded = _node(f"{proxy.url}/cassettes/node-http/mcp/clock")
    finally:
        server.terminate()
        server.wait(10)
    assert recorded["add"] == "9" and "now" in recorded["tools"]  # type: ignore[operator]
    methods = [e.request.method for e in load_cassette(str(tmp_path / "node-http.yaml")).entries]
    assert methods == ["initialize", "tools/list", "tools/call", "tools/call"]
    with ProxyServer(tmp_path, mcp={"clock": url}, record_mode="none") as proxy:
        replayed = _node(f"{proxy.url}/cassettes/node-http/mcp/clock")
    assert replayed == recorded  # the recorded time, from a server that is stopped


def _node(url: str) -> dict[str, object]:
    done = subprocess.run(
        ["node", str(NODE / "client.mjs"), url], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]
