"""``llmvcr serve``: the recording proxy for SDKs of every language (``llmvcr.proxy``)."""

from __future__ import annotations

import argparse
import os
import subprocess
from typing import Any, TextIO

from ..cassette.age import on_ci
from ..errors import CommandError
from ..options import RECORD_MODES, configure
from ..providers import placeholder_keys
from ..proxy.forward import proxy_extra
from ..proxy.mcp_route import servers_of
from ..proxy.routes import default_upstreams
from ..proxy.server import LOOPBACK, ProxyServer, instructions, is_loopback
from .command import Command, arg


def child_env(record_mode: str | None, variables: dict[str, str]) -> dict[str, str]:
    """The environment of ``serve -- COMMAND``'s command: the proxy's variables and, when every
    call replays (``CI`` set and no other --record-mode, or --record-mode none), a placeholder for
    each unset API key, so an SDK builds its client with no key. The proxy refuses to record a call
    that carries one (see ``llmvcr.providers.placeholder_keys``)."""
    env = {**os.environ, **variables}
    if record_mode == "none" or (record_mode is None and on_ci()):
        env.update(placeholder_keys.missing(env))
    return env


def upstreams_of(given: list[str]) -> dict[str, str]:
    """``["openai=http://127.0.0.1:9000"]`` -> ``{"openai": "http://127.0.0.1:9000"}``."""
    out, known = {}, default_upstreams()
    for item in given:
        name, sep, url = item.partition("=")
        if not sep or name not in known or not url.startswith(("http://", "https://")):
            raise CommandError(
                f"--upstream {item!r}: give PROVIDER=URL with PROVIDER one of "
                f"{', '.join(known)} and an http(s) URL"
            )
        out[name] = url
    return out


def token_of(args: Any) -> str | None:
    """The token from ``--token``, ``--token-file`` or ``$LLMVCR_TOKEN`` (None: none given); an empty
    one is refused, never taken as "no token"."""
    if args.token is not None:
        token, where = args.token, "--token"
    elif args.token_file:
        try:
            with open(args.token_file, encoding="utf-8") as f:
                token = f.readline().strip()
        except OSError as err:
            raise CommandError(f"--token-file {args.token_file}: {err.strerror or err}") from None
        where = f"--token-file {args.token_file}"
    elif "LLMVCR_TOKEN" in os.environ:
        token, where = os.environ["LLMVCR_TOKEN"], "$LLMVCR_TOKEN"
    else:
        return None
    token = str(token)
    if not token.strip():
        raise CommandError(
            f"{where} is empty: an empty token would let anyone in. Give a non-empty token (is the "
            f"variable set where the proxy runs?), or none at all to have one made up off loopback"
        )
    return token.strip()


def mcp_servers(given: list[str]) -> dict[str, str]:
    """``--mcp NAME=URL`` arguments as a mapping, or a CommandError naming the bad one."""
    try:
        return servers_of(given)
    except ValueError as err:
        raise CommandError(str(err)) from None


def cmd_serve(args: Any, out: TextIO) -> int:
    try:  # the [proxy] extra, checked before anything is printed: one line and status 2 without it
        proxy_extra("uvicorn")
        proxy_extra("httpx")
    except ImportError as err:
        raise CommandError(str(err)) from None
    if args.format:
        configure(cassette_format=args.format)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    token = token_of(args)
    if not is_loopback(args.host) and token is None:
        print("llmvcr serve: binding off loopback; a token is made up below", file=out)
    server = ProxyServer(
        args.cassette_dir,
        host=args.host,
        port=args.port,
        upstreams=upstreams_of(args.upstream),
        token=token,
        record_mode=args.record_mode,
        log_level="warning",
        allow_hosts=tuple(args.allow_host),
        max_body=args.max_body_mb * 2**20,
        report=lambda line: print(line, file=out, flush=True),
        mcp=mcp_servers(args.mcp),
    )
    if command:  # the command gets the variables itself: no "export ..." to follow by hand
        print(
            f"llmvcr serve: {server.url} (cassettes in {args.cassette_dir}) for: {' '.join(command)}",
            file=out,
        )
    else:
        print(instructions(server), file=out, flush=True)
    if args.env_file:
        with open(args.env_file, "w", encoding="utf-8") as f:
            f.writelines(f"{k}={v}\n" for k, v in server.env().items())
    os.makedirs(args.cassette_dir, exist_ok=True)
    if args.cassette:  # opened by no test: its entries serve every run, in turn
        server.app.cassettes.open(args.cassette, {}, in_turn=True)
    if not command:
        server.run()
        return 0
    server.start()
    try:
        return subprocess.run(command, env=child_env(args.record_mode, server.env())).returncode
    finally:
        server.stop()  # every cassette written before the status is returned


SERVE = Command(
    "serve",
    cmd_serve,
    help="a local HTTP proxy that records and replays any language's SDK calls into cassettes",
    description="Serve the cassettes under --cassette-dir to any SDK whose base URL points here "
    "(ANTHROPIC_BASE_URL, OPENAI_BASE_URL, google-genai's base_url). A client names its cassette "
    "with the header x-llmvcr-cassette or the base URL /cassettes/<name>; recorded calls are "
    "forwarded to each provider's upstream. Prints its URL and the variables to set. With CI set, "
    "a cassette that names no record mode replays only.",
    arguments=[
        arg(
            "--host",
            default=LOOPBACK,
            help=f"interface to bind (default {LOOPBACK}); any other needs the control-API token",
        ),
        arg("--port", type=int, default=0, help="port (default: a free one, printed)"),
        arg("--cassette-dir", default="cassettes", help="the cassette folder (default ./cassettes)"),
        arg("--format", choices=("yaml", "json"), help="format of a new cassette (default yaml)"),
        arg(
            "--upstream",
            action="append",
            default=[],
            metavar="PROVIDER=URL",
            help="where a provider's recorded calls go (repeatable; default "
            + ", ".join(f"{k}={v}" for k, v in default_upstreams().items())
            + ")",
        ),
        arg("--record-mode", choices=RECORD_MODES, help="over every cassette's own record mode"),
        arg(
            "--token",
            help="the token the control API (and, off loopback, every call) needs; better from "
            "$LLMVCR_TOKEN or --token-file, which no process list shows (default: none on loopback, "
            "made up otherwise)",
        ),
        arg("--token-file", metavar="FILE", help="read the token from FILE (its first line)"),
        arg(
            "--allow-host",
            action="append",
            default=[],
            metavar="NAME",
            help="also answer requests for Host NAME (repeatable; a container's service name; '*': any)",
        ),
        arg(
            "--mcp",
            action="append",
            default=[],
            metavar="NAME=URL",
            help="serve the streamable HTTP MCP server at URL as /mcp/NAME, recorded into the same "
            "cassettes (repeatable)",
        ),
        arg(
            "--max-body-mb",
            type=int,
            default=64,
            metavar="N",
            help="refuse request bodies over N MiB (default 64)",
        ),
        arg("--env-file", metavar="FILE", help="also write the variables to set into FILE"),
        arg(
            "--cassette",
            metavar="NAME",
            help="open this cassette at start: calls that name none go to it",
        ),
        arg(
            "command",
            nargs=argparse.REMAINDER,
            metavar="-- COMMAND",
            help="run COMMAND with the variables set, then stop (its exit status is the command's): "
            "llmvcr serve --cassette e2e -- npm test",
        ),
    ],
)
