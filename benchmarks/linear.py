"""``python -m benchmarks linear``: cassette size and load time of an agent loop, full against linear.

An Anthropic agent with a 2 KB system prompt and one tool: each question is a tool call, a 4 KB
tool result and an answer, so N model calls are N/2 questions. It is recorded through the real
``anthropic`` SDK against the loopback server of the test suite (``tests/llm_server.py``, in this
process), once with ``layout="full"`` (format version 1, every request whole) and once with
``layout="linear"`` (version 2, the default). Then:

* **size** of the YAML file;
* **load** = parse the YAML (PyYAML's C loader, no parse cache), rebuild every request and build
  every entry, as the first ``load_cassette`` of a file does; median of several runs;
* **load, cached** = ``llmvcr.load_cassette`` with the parse cache warm, then every entry built;
* **record** = the wall time of the whole recorded loop, file writes included;
* **turn-3 edit**: the 40-call loop recorded again with one word of the third call's question
  changed; the changed lines of ``diff`` between the two files, and how many of them are neither
  a request hash nor an id or token count the server derives from the whole request.

    python -m benchmarks linear [--calls 10 40 100] [--rounds 7]
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import llmvcr
from llmvcr.cassette.schema import migrate
from llmvcr.storage.files import cassette_from_document, validate
from llmvcr.storage.parse_cache import parse_yaml

SYSTEM = (
    "You plan trips for a travel agency. Check the weather with the tool before you suggest anything. " * 21
)[:2048]
TOOLS = [
    {
        "name": "get_weather",
        "description": "The forecast for a city: temperature, wind and rain, hour by hour.",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }
]
FORECAST = "".join(
    f"{h:02d}:00 sunny, 21 C, wind 3 m/s from the west, humidity 40%, no rain.\n" for h in range(56)
)
REAL_CHANGE = re.compile(r"^[+-] *(request_hash|id|tool_use_id|request-id|input_tokens|body):")


def agent(client: Any, calls: int, word: str = "like") -> None:
    """``calls`` model calls: a question, the tool call, the tool result (4 KB), the answer."""
    messages: list[dict[str, Any]] = []

    def call() -> Any:
        reply = client.messages.create(
            model="claude-bench", max_tokens=512, system=SYSTEM, tools=TOOLS, messages=messages
        )
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": b.text}
                    if b.type == "text"
                    else {"type": "tool_use", "id": b.id, "name": b.name, "input": b.input}
                    for b in reply.content
                ],
            }
        )
        return reply

    for q in range(calls // 2):
        asked = word if q == 1 else "like"  # question 1 is the third call
        messages.append({"role": "user", "content": f"What is the weather {asked} for trip {q} to Paris?"})
        tool = next(b for b in call().content if b.type == "tool_use")
        result = {"type": "tool_result", "tool_use_id": tool.id, "content": f"Paris, day {q}\n{FORECAST}"}
        messages.append({"role": "user", "content": [result]})
        call()


def median_time(action: Callable[[], Any], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def cold_load(path: Path) -> None:
    data = path.read_bytes()
    cassette = cassette_from_document(migrate(parse_yaml(data), str(path)), str(path))
    validate(cassette)


def warm_load(path: Path) -> None:
    validate(llmvcr.load_cassette(path))


def record(client: Any, path: Path, calls: int, layout: str, word: str = "like") -> float:
    started = time.perf_counter()
    with llmvcr.use_cassette(path, record_mode="all", layout=layout):  # type: ignore[typeddict-item]
        agent(client, calls, word)
    return time.perf_counter() - started


def changed_lines(a: Path, b: Path) -> list[str]:
    diff = difflib.unified_diff(a.read_text().splitlines(), b.read_text().splitlines(), n=0)
    return [line for line in diff if line[:1] in "+-" and line[:3] not in ("+++", "---")]


def size(n: int) -> str:
    return f"{n / 1024:,.0f} KB" if n < 10 * 1024 * 1024 else f"{n / 1024 / 1024:,.1f} MB"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks linear", description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, nargs="+", default=[10, 40, 100])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    import anthropic
    from llm_server import LLMServer

    folder = Path(tempfile.mkdtemp(prefix="llmvcr-linear-"))
    os.environ["LLMVCR_STATE_DIR"] = str(folder / "state")  # the parse cache, away from the user's
    server = LLMServer().start()
    client = anthropic.Anthropic(api_key="sk-ant-bench", base_url=server.url, max_retries=0)
    rows = []
    try:
        for calls in args.calls:
            figures: dict[str, dict[str, float]] = {}
            for layout in ("full", "linear"):
                path = folder / f"{layout}-{calls}.yaml"
                recorded = record(client, path, calls, layout)
                warm_load(path)  # fills the parse cache
                figures[layout] = {
                    "size": path.stat().st_size,
                    "cold": median_time(partial(cold_load, path), args.rounds),
                    "warm": median_time(partial(warm_load, path), args.rounds),
                    "record": recorded,
                }
                print(f"{calls} calls, {layout}: {figures[layout]}", file=sys.stderr)
            rows.append((calls, figures))
        edit = {}
        for layout in ("full", "linear"):
            before, after = folder / f"{layout}-edit-a.yaml", folder / f"{layout}-edit-b.yaml"
            record(client, before, 40, layout)
            record(client, after, 40, layout, word="looking")
            lines = changed_lines(before, after)
            edit[layout] = (len(lines), [line for line in lines if not REAL_CHANGE.match(line)])
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)
    print(
        "| model calls | full YAML | linear YAML | smaller | load full | load linear | "
        "load cached full | load cached linear | record full | record linear |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for calls, f in rows:
        full, linear = f["full"], f["linear"]
        print(
            f"| {calls} | {size(int(full['size']))} | {size(int(linear['size']))} | "
            f"{full['size'] / linear['size']:.1f}x | {full['cold'] * 1000:.1f} ms | "
            f"{linear['cold'] * 1000:.1f} ms | {full['warm'] * 1000:.1f} ms | {linear['warm'] * 1000:.1f} ms | "
            f"{full['record']:.2f} s | {linear['record']:.2f} s |"
        )
    print()
    print("One word of the third call's question changed, 40 calls recorded again:")
    print()
    print("| layout | changed lines | of which not a hash, id or token count |")
    print("|---|---|---|")
    for layout, (count, other) in edit.items():
        print(f"| {layout} | {count} | {len(other)} |")
    for layout, (_, other) in edit.items():
        print(
            f"\n{layout}: "
            + "; ".join(line.strip() for line in other[:6])
            + (" ..." if len(other) > 6 else "")
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
