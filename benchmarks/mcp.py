"""``python -m benchmarks mcp``: a replayed MCP ``tools/call`` against the SDK's own floor.

Two ways to answer the same ``tools/call`` (``add``, on the tests' server ``tests/mcp/clock_server.py``),
each through the ``mcp`` SDK's own ``ClientSession``, timed per call inside one open session:

* **in-memory** (the floor): the server runs in this process, over the SDK's in-memory transport
  (``mcp.shared.memory``, through ``mcp.client._memory.InMemoryTransport``); nothing llmvcr does;
* **replayed**: a stdio session recorded once, then replayed by llmvcr with ``record_mode="none"``
  and the server's command a path that does not exist: no process, no socket;
* **live stdio**, for scale: the same calls to the server started as a process;

and a 20-step run over two stdio servers (both started and initialized, then 20 ``tools/call``
alternating between them), live against replayed, whole wall time.

    python -m benchmarks mcp [--calls 200] [--rounds 5]

Prints the median per call of each and the ratio of replayed to the floor (the target is 1.2x or less).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

import llmvcr

ROOT = Path(__file__).resolve().parent.parent
SERVER = ROOT / "tests" / "mcp" / "clock_server.py"


async def _calls(session: Any, calls: int) -> float:
    await session.initialize()
    await session.call_tool("add", {"a": -1, "b": 1})  # the first also fetches tools/list (output schemas)
    start = time.perf_counter()
    for i in range(calls):
        await session.call_tool("add", {"a": i, "b": 1})
    return (time.perf_counter() - start) / calls * 1e6


async def in_memory(calls: int) -> float:
    from mcp import ClientSession
    from mcp.client._memory import InMemoryTransport

    sys.path.insert(0, str(SERVER.parent))
    from clock_server import app

    async with InMemoryTransport(app) as (read, write), ClientSession(read, write) as session:
        return await _calls(session, calls)


async def over_stdio(command: str, calls: int) -> float:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=command, args=[str(SERVER)])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        return await _calls(session, calls)


async def agent_run(command: str, steps: int) -> float:
    """``steps`` tool calls alternating between two stdio servers, both started and initialized: the
    wall time of the whole run, in ms."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    start = time.perf_counter()
    first = StdioServerParameters(command=command, args=[str(SERVER), "--name", "first"])
    second = StdioServerParameters(command=command, args=[str(SERVER), "--name", "second"])
    async with (
        stdio_client(first) as (r1, w1),
        ClientSession(r1, w1) as one,
        stdio_client(second) as (r2, w2),
        ClientSession(r2, w2) as two,
    ):
        await one.initialize()
        await two.initialize()
        for i in range(steps):
            await (one if i % 2 == 0 else two).call_tool("add", {"a": i, "b": 1})
    return (time.perf_counter() - start) * 1000


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks mcp")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        cassette = str(Path(folder) / "mcp.yaml")
        with llmvcr.use_cassette(cassette, record_mode="all"):
            live = anyio.run(over_stdio, sys.executable, args.calls)
        floor = statistics.median(anyio.run(in_memory, args.calls) for _ in range(args.rounds))
        replayed = []
        for _ in range(args.rounds):
            with llmvcr.use_cassette(cassette, record_mode="none"):
                replayed.append(anyio.run(over_stdio, "/nonexistent/python", args.calls))
    rows = [
        ("in-memory transport (the floor)", floor),
        ("replayed by llmvcr (nothing started)", statistics.median(replayed)),
        ("live stdio server (one recording)", live),
    ]
    print(f"MCP tools/call, {args.calls} calls in one session, median of {args.rounds} rounds")
    for label, us in rows:
        print(f"  {label:40s} {us:9.1f} us/call  {us / floor:6.2f}x the floor")
    with tempfile.TemporaryDirectory() as folder:
        cassette = str(Path(folder) / "agent.yaml")
        with llmvcr.use_cassette(cassette, record_mode="all"):
            anyio.run(agent_run, sys.executable, 20)
        live_runs, replayed_runs = [], []
        for _ in range(args.rounds):
            live_runs.append(anyio.run(agent_run, sys.executable, 20))
            with llmvcr.use_cassette(cassette, record_mode="none"):
                replayed_runs.append(anyio.run(agent_run, "/nonexistent/python", 20))
    live_ms, replayed_ms = statistics.median(live_runs), statistics.median(replayed_runs)
    print(
        f"A 20-step run over two stdio servers (started, initialized, 20 tools/call), median of {args.rounds}"
    )
    print(f"  {'live (two server processes)':40s} {live_ms:9.1f} ms")
    print(
        f"  {'replayed by llmvcr (nothing started)':40s} {replayed_ms:9.1f} ms  {live_ms / replayed_ms:6.1f}x faster"
    )
    return 0
