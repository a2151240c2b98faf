"""How an MCP server is named in a cassette: the same from one machine to the next, with no key in it."""

from __future__ import annotations

import pytest

from llmvcr.wire.mcp import REDACTED, http_server, kind, stdio_server


@pytest.mark.parametrize(
    ("command", "args", "name"),
    [
        ("/opt/venv/bin/python3.12", ["/home/me/srv/server.py"], "stdio:python server.py"),
        (
            r"C:\Python311\python.exe",
            [r"C:\work\server.py", "--port", "0"],
            "stdio:python server.py --port 0",
        ),
        (
            "uvx",
            ["mcp-server-time", "--local-timezone", "UTC"],
            "stdio:uvx mcp-server-time --local-timezone UTC",
        ),
        (
            "/usr/bin/node",
            ["/x/node_modules/.bin/server-everything", "stdio"],
            "stdio:node server-everything stdio",
        ),
        ("npx", ["-y", "srv", "--api-key", "abc123"], f"stdio:npx -y srv --api-key {REDACTED}"),
        (
            "srv",
            ["--auth-token=abc123", "--github_token", "t"],
            f"stdio:srv --auth-token={REDACTED} --github_token {REDACTED}",
        ),
    ],
)
def test_a_stdio_server_is_named_by_what_stays_the_same(command: str, args: list[str], name: str) -> None:
    assert stdio_server(command, args) == name


def test_an_http_server_is_named_without_its_port_query_or_credentials() -> None:
    assert http_server("http://127.0.0.1:51234/mcp?session=1") == "http://127.0.0.1/mcp"
    assert http_server("https://user:pw@tools.example.com:8443/v1/mcp") == "https://tools.example.com/v1/mcp"


def test_the_four_kinds_of_message() -> None:
    assert kind({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}) == "request"
    assert kind({"jsonrpc": "2.0", "method": "notifications/initialized"}) == "notification"
    assert kind({"jsonrpc": "2.0", "id": 1, "result": {}}) == "result"
    assert kind({"jsonrpc": "2.0", "id": 1, "error": {"code": -1, "message": "x"}}) == "error"
    assert kind("not json") == "invalid"
