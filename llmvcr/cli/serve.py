"""``llmvcr serve``: the recording proxy for SDKs of every language (``llmvcr.proxy``)."""

from __future__ import annotations

import os
import subprocess
from typing import Any, TextIO

from ..errors import CommandError
from ..options import configure
from ..proxy.routes import default_upstreams
from ..proxy.server import ProxyServer, instructions, is_loopback


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
