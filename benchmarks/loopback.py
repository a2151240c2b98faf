"""A loopback server in its own process, for the cost of recording next to a real HTTP call.

It answers every ``/v1/messages`` and ``/v1/chat/completions`` POST with the same canned
response (recording overhead does not depend on what the answer says), keeps connections alive
like the real APIs, and prints its port on the first line of its output.

    python -m benchmarks.loopback
"""

from __future__ import annotations

import subprocess
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .workload import anthropic_call, openai_call

_ANSWERS = {"/v1/messages": anthropic_call(0), "/v1/chat/completions": openai_call(1)}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDK's connection pool expects
    disable_nagle_algorithm = True  # headers and body leave at once, as from a real server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        call = _ANSWERS.get(self.path)
        if call is None:
            self.send_error(404)
            return
        self.send_response(200)
        for name, value in call.headers.items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(call.body)))
        self.end_headers()
        self.wfile.write(call.body)


class Loopback:
    """Starts the server process; ``url`` is its base URL; ``close`` stops it."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.loopback"], stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        self.url = f"http://127.0.0.1:{int(self.process.stdout.readline())}"

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def serve() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    serve()
