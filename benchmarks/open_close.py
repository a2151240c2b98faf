"""Opening and closing a small replay-only cassette, in one process, paired against another tree.

``python -m benchmarks.open_close [--baseline TREE] [--after TREE] [--pairs 7] [--cycles 2000]``

Each run writes a one-entry YAML cassette (an anthropic call with a 2 KB system prompt), imports
the anthropic and openai SDKs (so interception has classes to wrap, as in a real suite) and
times ``with use_cassette(path, record_mode="none"): pass`` many times; it prints the median
microseconds per cycle. With ``--baseline`` the same run alternates between that source tree and
this one, one process each, and reports the median of each side and of the paired differences:
the machine is noisy, so one run alone says little.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def one_run(cycles: int) -> float:
    """Median microseconds of one open/close, over ``cycles`` cycles timed in batches of 50."""
    import anthropic  # noqa: F401  (imported so that interception wraps it)
    import openai  # noqa: F401

    import llmvcr
    from llmvcr.cassette import Cassette, Entry, Request, Response
    from llmvcr.matching.rules import default_request_hash
    from llmvcr.storage.writer import save_cassette

    folder = tempfile.mkdtemp(prefix="llmvcr-openclose-")
    path = os.path.join(folder, "one.yaml")
    body = {
        "model": "claude-x",
        "max_tokens": 64,
        "system": "You are terse. " * 140,
        "messages": [{"role": "user", "content": "hello"}],
    }
    request = Request("POST", "/v1/messages", body, (), {})
    response = Response(200, {}, body={"content": [{"type": "text", "text": "hi"}], "usage": {}})
    cassette = Cassette(path)
    cassette.append(Entry("anthropic", request, response, default_request_hash(request.normalised())))
    save_cassette(path, cassette)

    def cycle() -> None:
        with llmvcr.use_cassette(path, record_mode="none"):
            pass

    print(llmvcr.__file__, file=sys.stderr)
    for _ in range(200):  # warm: parse cache, imports, first install
        cycle()
    batch = 50
    times = []
    for _ in range(max(1, cycles // batch)):
        start = time.perf_counter()
        for _ in range(batch):
            cycle()
        times.append((time.perf_counter() - start) / batch * 1e6)
    return statistics.median(times)


def _run_in(tree: str, cycles: int) -> float:
    # run in ``tree`` (``-c`` puts the working folder first on the path), this file by its path
    env = {**os.environ, "PYTHONPATH": tree}
    code = f"import runpy; print(runpy.run_path({os.path.abspath(__file__)!r})['one_run']({cycles}))"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tree, env=env, check=True, capture_output=True, text=True
    )
    return float(out.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.open_close", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--baseline", help="another source tree of llmvcr to pair against")
    parser.add_argument("--after", default=HERE, help="the source tree measured against the baseline")
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--cycles", type=int, default=2000)
    args = parser.parse_args(argv)
    if not args.baseline:
        print(f"{_run_in(args.after, args.cycles):.1f} µs per open/close")
        return 0
    before: list[float] = []
    after: list[float] = []
    for i in range(args.pairs):
        order = [(args.baseline, before), (args.after, after)]
        for tree, into in order if i % 2 == 0 else order[::-1]:  # alternate which side goes first
            into.append(_run_in(tree, args.cycles))
        print(f"pair {i + 1}: before {before[-1]:.1f} µs, after {after[-1]:.1f} µs", flush=True)
    diffs = [b - a for b, a in zip(before, after, strict=True)]
    print(
        f"median of {args.pairs} pairs: before {statistics.median(before):.1f} µs, "
        f"after {statistics.median(after):.1f} µs, saved {statistics.median(diffs):.1f} µs per open/close"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
