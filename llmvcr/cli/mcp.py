"""``llmvcr mcp``: a stdio MCP server wrapped for any client (Claude Desktop's config, a TypeScript
agent, an IDE), its traffic recorded into a cassette or answered from it.

    llmvcr mcp --cassette tests/cassettes/tools.yaml -- uvx mcp-server-time

The client starts ``llmvcr mcp ...`` where it started the server. Recording, llmvcr runs COMMAND
and passes every line both ways, keeping each request with its answer and what arrived between;
replaying (the cassette holds this server's traffic), COMMAND is never started and the cassette
answers. With CI set, a cassette that names no record mode replays only. ``--tool-policy TOOL=POLICY``
sets ``tool_policy``: a denied ``tools/call`` is answered here, in the server's place.
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import threading
from typing import IO, Any, TextIO

import orjson

from .. import _active
from ..api import use_cassette
from ..errors import CommandError, LLMVCRError
from ..mcp.exchange import Exchange
from ..options import RECORD_MODES, Options
from ..wire import mcp as wire
from .command import Command, arg


def _lines(stream: IO[bytes]) -> Any:
    for line in iter(stream.readline, b""):
        if line.strip():
            try:
                yield line, orjson.loads(line)
            except orjson.JSONDecodeError:
                yield line, None


def _write(out: IO[bytes], lock: threading.Lock, data: bytes) -> None:
    with lock:
        out.write(data if data.endswith(b"\n") else data + b"\n")
        out.flush()


def relay(exchange: Exchange, command: list[str], stdin: IO[bytes], stdout: IO[bytes]) -> int:
    """Carry one client's session: from the cassette, or through COMMAND while recording it."""
    lock, out_lock = threading.Lock(), threading.Lock()
    if exchange.replaying:
        for _, message in _lines(stdin):
            with lock:
                answers = exchange.from_client(message)
            for answer in answers:
                _write(stdout, out_lock, orjson.dumps(answer))
        return 0
    try:
        child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    except OSError as err:
        raise CommandError(f"llmvcr mcp: cannot start {command[0]!r}: {err}") from None
    assert child.stdin is not None and child.stdout is not None
    to_child = child.stdin

    def client_side() -> None:
        try:
            for line, message in _lines(stdin):
                with lock:
                    answers = exchange.from_client(message)
                for answer in answers:  # answered in the server's place (a denied tools/call): not sent
                    _write(stdout, out_lock, orjson.dumps(answer))
                if answers:
                    continue
                to_child.write(line)
                to_child.flush()
        except (BrokenPipeError, ValueError):
            pass
        finally:
            with contextlib.suppress(OSError):
                to_child.close()

    feeder = threading.Thread(target=client_side, daemon=True)
    feeder.start()
    for line, message in _lines(child.stdout):
        with lock:
            exchange.from_server(message)
        _write(stdout, out_lock, line)
    child.stdout.close()
    code = child.wait()
    with lock:
        exchange.close()
    return code


def cmd_mcp(args: Any, out: TextIO) -> int:
    command = [c for c in args.command if c != "--"] if args.command[:1] == ["--"] else list(args.command)
    if not command:
        raise CommandError(
            "llmvcr mcp: give the server's command after --: llmvcr mcp --cassette F -- COMMAND"
        )
    options: dict[str, Any] = {"record_mode": args.record_mode} if args.record_mode else {}
    policy = dict(item.partition("=")[::2] for item in args.tool_policy)
    if policy:
        options["tool_policy"] = policy
    try:
        Options.build(**options)
    except ValueError as err:
        raise CommandError(f"llmvcr mcp: {err}") from None
    with use_cassette(args.cassette, **options):
        session = _active.current_session()
        assert session is not None
        try:
            exchange = Exchange.open(session, wire.stdio_server(command[0], command[1:]))
        except LLMVCRError as err:
            raise CommandError(str(err)) from None
        return relay(exchange, command, sys.stdin.buffer, sys.stdout.buffer)


MCP = Command(
    "mcp",
    cmd_mcp,
    help="wrap a stdio MCP server: record its traffic, or answer from the cassette without starting it",
    description="Run COMMAND, a stdio MCP server, for the client that started llmvcr, recording every "
    "request with its answer into --cassette; when the cassette holds this server's traffic, answer "
    "from it and start nothing.",
    arguments=[
        arg("--cassette", required=True, metavar="PATH", help="the cassette file"),
        arg("--record-mode", choices=RECORD_MODES, help="the cassette's record mode"),
        arg(
            "--tool-policy",
            action="append",
            default=[],
            metavar="TOOL=POLICY",
            help="a tools/call of TOOL is replayed (the default), run live (never recorded) or denied "
            "(answered with an error, never sent); repeat for each tool",
        ),
        arg("command", nargs=argparse.REMAINDER, metavar="-- COMMAND", help="the server to run"),
    ],
)
