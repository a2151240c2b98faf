"""``llmvcr serve``: the recording proxy for SDKs of every language (``llmvcr.proxy``)."""

from __future__ import annotations

import argparse
import os
import subprocess
from typing import Any, TextIO

from ..errors import CommandError
from ..options import RECORD_MODES, configure
from ..proxy.mcp_route import servers_of
from ..proxy.routes import DEFAULT_UPSTREAMS
from ..proxy.server import LOOPBACK, ProxyServer, instructions, is_loopback


def add_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """The ``serve`` command's arguments."""
    serve = commands.add_parser(
        "serve",
        help="a local HTTP proxy that records and replays any language's SDK calls into cassettes",
        description="Serve the cassettes under --cassette-dir to any SDK whose base URL points here "
        "(ANTHROPIC_BASE_URL, OPENAI_BASE_URL, google-genai's base_url). A client names its cassette "
        "with the header x-llmvcr-cassette or the base URL /cassettes/<name>; recorded calls are "
        "forwarded to each provider's upstream. Prints its URL and the variables to set. With CI set, "
        "a cassette that names no record mode replays only.",
    )
    serve.add_argument(
        "--host",
        default=LOOPBACK,
        help=f"interface to bind (default {LOOPBACK}); any other needs the control-API token",
    )
    serve.add_argument("--port", type=int, default=0, help="port (default: a free one, printed)")
    serve.add_argument(
        "--cassette-dir", default="cassettes", help="the cassette folder (default ./cassettes)"
    )
    serve.add_argument("--format", choices=("yaml", "json"), help="format of a new cassette (default yaml)")
    serve.add_argument(
        "--upstream",
        action="append",
        default=[],
        metavar="PROVIDER=URL",
        help="where a provider's recorded calls go (repeatable; default "
        + ", ".join(f"{k}={v}" for k, v in DEFAULT_UPSTREAMS.items())
        + ")",
    )
    serve.add_argument(
        "--mcp",
        action="append",
        default=[],
        metavar="NAME=URL",
        help="serve the streamable HTTP MCP server at URL as /mcp/NAME, recorded into the same cassettes "
        "(repeatable)",
    )
    serve.add_argument("--record-mode", choices=RECORD_MODES, help="over every cassette's own record mode")
    serve.add_argument("--token", help="control-API token (default: none on loopback, made up otherwise)")
    serve.add_argument("--env-file", metavar="FILE", help="also write the variables to set into FILE")
    serve.add_argument(
        "--cassette", metavar="NAME", help="open this cassette at start: calls that name none go to it"
    )
    serve.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        metavar="-- COMMAND",
        help="run COMMAND with the variables set, then stop (its exit status is the command's): "
        "llmvcr serve --cassette e2e -- npm test",
    )
    serve.set_defaults(run=cmd_serve)


def upstreams_of(given: list[str]) -> dict[str, str]:
    """``["openai=http://127.0.0.1:9000"]`` -> ``{"openai": "http://127.0.0.1:9000"}``."""
    out = {}
    for item in given:
        name, sep, url = item.partition("=")
        if not sep or name not in DEFAULT_UPSTREAMS or not url.startswith(("http://", "https://")):
            raise CommandError(
                f"--upstream {item!r}: give PROVIDER=URL with PROVIDER one of "
                f"{', '.join(DEFAULT_UPSTREAMS)} and an http(s) URL"
            )
        out[name] = url
    return out


def mcp_servers(given: list[str]) -> dict[str, str]:
    """``--mcp NAME=URL`` arguments as a mapping, or a CommandError naming the bad one."""
    try:
        return servers_of(given)
    except ValueError as err:
        raise CommandError(str(err)) from None


def cmd_serve(args: Any, out: TextIO) -> int:
    if args.format:
        configure(cassette_format=args.format)
    if not is_loopback(args.host) and not args.token:
        print("llmvcr serve: binding off loopback; a control-API token is made up below", file=out)
    server = ProxyServer(
        args.cassette_dir,
        host=args.host,
        port=args.port,
        upstreams=upstreams_of(args.upstream),
        token=args.token,
        record_mode=args.record_mode,
        log_level="warning",
        mcp=mcp_servers(args.mcp),
    )
    print(instructions(server), file=out, flush=True)
    if args.env_file:
        with open(args.env_file, "w", encoding="utf-8") as f:
            f.writelines(f"{k}={v}\n" for k, v in server.env().items())
    os.makedirs(args.cassette_dir, exist_ok=True)
    if args.cassette:
        server.app.cassettes.open(args.cassette, {})
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        server.run()
        return 0
    server.start()
    try:
        return subprocess.run(command, env={**os.environ, **server.env()}).returncode
    finally:
        server.stop()  # every cassette written before the status is returned
