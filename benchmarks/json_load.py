"""``python -m benchmarks.json_load``: a 1,000-entry JSON cassette loaded by llmvcr against ``orjson``.

    python -m benchmarks.json_load [--rounds 15]

Two cassettes of 1,000 entries, both JSON:

* **full** (format 1): the per-call workload of ``python -m benchmarks`` (distinct anthropic and
  openai calls, recorded by llmvcr through the floor); no request repeats another's values, so the
  writer keeps format 1 even in the default linear layout.
* **linear** (format 2): the agent loop of ``python -m benchmarks linear`` (2 KB system prompt, one
  tool, 4 KB tool results), 20 model calls recorded through the loopback server, the 20 entries
  repeated 50 times with their references moved along: every request after the first of a loop
  refers back (``system``/``tools``: ``same_as``, ``messages``: ``extends``).

Each round times ``orjson.loads`` of the file's bytes (read included) and ``llmvcr.load_cassette``
with the parse cache filled by a load before (what a second run on a laptop pays), alternating;
the ratio is taken pair by pair and its median printed, so a drift of the machine's speed cancels.
The first load of new bytes (parsing, checking every entry, storing) is printed beside it.
Asserts nothing; prints Markdown.
"""

from __future__ import annotations

import argparse
import copy
import gc
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

import llmvcr
from llmvcr.storage.files import dump_document

from . import contenders as c
from . import workload as w


def _full(path: str) -> None:
    floor = c.Floor()
    clients = floor.clients()
    calls = w.calls(1_000)
    floor.learn(clients, calls)
    c.record_llmvcr(floor, calls, path)


def _shifted(value: Any, by: int) -> Any:
    if isinstance(value, dict) and value.keys() == {"same_as"}:
        return {"same_as": value["same_as"] + by}
    if isinstance(value, dict) and value.keys() == {"extends", "append"}:
        return {"extends": value["extends"] + by, "append": value["append"]}
    return value


def _linear(path: str, folder: str) -> None:
    from . import linear

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    import anthropic
    from llm_server import LLMServer

    loop = os.path.join(folder, "loop.json")
    server = LLMServer().start()
    try:
        client = anthropic.Anthropic(api_key="sk-ant-bench", base_url=server.url, max_retries=0)
        linear.record(client, Path(loop), 20, "linear")
    finally:
        server.stop()
    with open(loop, "rb") as f:
        document = orjson.loads(f.read())
    one = document["entries"]
    entries = []
    for k in range(1_000 // len(one)):
        for raw in one:
            raw = copy.deepcopy(raw)
            body = raw["request"]["body"]
            for name, value in body.items():
                body[name] = _shifted(value, k * len(one))
            entries.append(raw)
    document["entries"] = entries
    with open(path, "wb") as f:
        f.write(dump_document(document, "json"))


def _clock(fn: Callable[[], object]) -> float:
    gc.collect()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _raw(path: str) -> Any:
    with open(path, "rb") as f:
        return orjson.loads(f.read())


def measure(path: str, rounds: int) -> dict[str, float]:
    llmvcr.load_cassette(path)  # fills the parse cache
    raw, mine, ratios = [], [], []
    for _ in range(rounds):
        a = _clock(lambda: _raw(path))
        b = _clock(lambda: llmvcr.load_cassette(path))
        raw.append(a)
        mine.append(b)
        ratios.append(b / a)
    with open(path, "rb") as f:
        data = f.read()
    first = []
    for i in range(max(3, rounds // 3)):
        with open(path, "wb") as f:  # new bytes each time: the parse cache cannot answer
            f.write(data.rstrip() + b" " * (i + 1) + b"\n")
        first.append(_clock(lambda: llmvcr.load_cassette(path)))
    with open(path, "wb") as f:
        f.write(data)
    return {
        "orjson": statistics.median(raw),
        "llmvcr": statistics.median(mine),
        "ratio": statistics.median(ratios),
        "low": min(ratios),
        "high": max(ratios),
        "first": statistics.median(first),
        "size": len(data),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.json_load", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="llmvcr-json-load-") as folder:
        os.environ["LLMVCR_STATE_DIR"] = os.path.join(folder, "state")  # away from the user's cache
        os.environ.pop("CI", None)  # the parse cache is written, as on a laptop
        rows = []
        for name, build in (("full (format 1)", _full), ("linear (format 2)", None)):
            path = os.path.join(folder, f"{name.split()[0]}.json")
            if build is None:
                _linear(path, folder)
            else:
                build(path)
            sys.stderr.write(f"{name}: measuring\n")
            rows.append((name, measure(path, args.rounds)))
    print(
        "| 1,000-entry JSON cassette | size | `orjson.loads` | `llmvcr.load_cassette` (parse cache warm) "
        "| ratio, median of pairs (min to max) | target | first load of new bytes |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, r in rows:
        print(
            f"| {name} | {r['size'] / 1e6:.1f} MB | {r['orjson'] * 1e3:.2f} ms | {r['llmvcr'] * 1e3:.2f} ms "
            f"| {r['ratio']:.3f} ({r['low']:.2f} to {r['high']:.2f}) | ≤ 1.3 | {r['first'] * 1e3:.1f} ms |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
