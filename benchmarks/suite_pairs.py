"""The suite benchmark's llmvcr YAML row only, paired against another source tree, run after run.

``python -m benchmarks.suite_pairs --baseline TREE [--tests 100] [--pairs 5] [--in-process [--cpu]]``

It generates the suite of :mod:`benchmarks.suite` (one small YAML cassette per test), records it
once, then alternates the floor, the baseline tree and this tree, one pytest process each, and
prints each pair's median per-test time over that pair's floor, and the median of the pairs. It
needs neither vcrpy nor cassetter, so it runs where the full comparison cannot.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from . import suite

_TIMED = """
import json, os, sys, time
os.environ.update(BENCH_TOOL="floor", BENCH_BASE_URL={base!r})
sys.path.insert(0, {project!r})
import anthropic, openai, pytest
import conftest
import llmvcr
folder = os.path.join({project!r}, "cassettes", "test_suite")
clock = time.thread_time if {cpu!r} else time.perf_counter
def timed(i):
    s = clock()
    if {floor!r}:
        conftest.three_calls(i)
    else:
        with llmvcr.use_cassette(os.path.join(folder, f"test_ticket_{{i:04d}}.yaml"), record_mode="none"):
            conftest.three_calls(i)
    return clock() - s
for i in range({n}):  # warm
    timed(i)
print(json.dumps([timed(i % {n}) for i in range(3 * {n})]))
"""


def _in_process(bench: suite.Suite, tool: str, cpu: bool = False) -> list[float]:
    """Per-test seconds of ``tool``, its cassettes opened by ``use_cassette`` in one process
    (``cpu``: the thread's CPU time, which a preemption by another process does not inflate)."""
    project = bench.project("llmvcr YAML")
    code = _TIMED.format(base=bench.base, project=project, floor=tool == "floor", n=bench.n, cpu=cpu)
    tree = suite.BASELINE.get(tool, bench.here)
    env = {**os.environ, "PYTHONPATH": tree}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tree, env=env, check=True, capture_output=True, text=True
    )
    times: list[float] = json.loads(out.stdout.strip().splitlines()[-1])
    return times


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.suite_pairs", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--baseline", required=True, help="another source tree of llmvcr")
    parser.add_argument("--tests", type=int, default=100)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="time each test's cassette and calls in one process, not pytest",
    )
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="with --in-process: time each test by the thread's CPU time, not the wall clock",
    )
    args = parser.parse_args(argv)
    for tool in list(suite.TOOLS):
        if tool not in ("floor", "llmvcr YAML"):
            del suite.TOOLS[tool]
    suite.TOOLS["llmvcr YAML (baseline)"] = suite.TOOLS["llmvcr YAML"]
    suite.SHARES_CASSETTES["llmvcr YAML (baseline)"] = "llmvcr YAML"
    suite.BASELINE["llmvcr YAML (baseline)"] = os.path.abspath(args.baseline)
    before: list[float] = []
    after: list[float] = []
    with tempfile.TemporaryDirectory(prefix="llmvcr-pairs-") as folder:
        bench = suite.Suite(folder, args.tests)
        bench.generate()
        bench.record()
        for tool in ("llmvcr YAML", "llmvcr YAML (baseline)"):  # fill the parse cache, as a rerun finds it
            bench.pytest(tool, mode="none")
        for i in range(args.pairs):
            order = ["llmvcr YAML (baseline)", "llmvcr YAML"]
            time_of = (
                (lambda t: _in_process(bench, t, args.cpu))
                if args.in_process
                else (lambda t: bench.serial(t)[0])
            )
            medians = {"floor": statistics.median(time_of("floor"))}
            for tool in order if i % 2 == 0 else order[::-1]:
                medians[tool] = statistics.median(time_of(tool))
            before.append((medians["llmvcr YAML (baseline)"] - medians["floor"]) * 1e3)
            after.append((medians["llmvcr YAML"] - medians["floor"]) * 1e3)
            print(
                f"pair {i + 1}: floor {medians['floor'] * 1e3:.2f} ms, over it: "
                f"before +{before[-1]:.2f} ms, after +{after[-1]:.2f} ms per test",
                flush=True,
            )
    diffs = [b - a for b, a in zip(before, after, strict=True)]
    print(
        f"median of {args.pairs} pairs, per test over the floor: before +{statistics.median(before):.2f} ms, "
        f"after +{statistics.median(after):.2f} ms, saved {statistics.median(diffs):.3f} ms"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
