"""The suite's per-test cost in CPU instructions (callgrind), for the floor, llmvcr YAML and a baseline tree.

``python -m benchmarks.suite_instructions [--baseline TREE] [--tests 100] [--cassetter] [--json] [--fallback]``

Wall and CPU times on a shared machine move by tens of percent from run to run; instruction
counts repeat to a fraction of a percent. Each side runs in its own process under
``valgrind --tool=callgrind --instr-atstart=no``: the process imports the SDKs, replays the N
tests once (parse cache, first-call work), then instrumentation is switched on
(``callgrind_control -i on``) for a second pass over the same N tests, and the instructions
collected, divided by N, are the per-test figure. Instructions are not time (a cache miss costs
more than an add), so the result is read as a ratio next to the timed benchmarks, not instead of
them. The cold side (``CI=true``, an empty state folder) first runs the SDKs' first calls through
the floor and one cassette copied elsewhere, so its counted pass is every cassette parsed, checked
and stored as in a fresh checkout, with the process otherwise warm. ``--keep FOLDER`` reuses the
projects and cassettes a run before left there; ``--fallback`` adds a cold side on PyYAML (``LLMVCR_YAML=pyyaml``, what a platform without a
rapidyaml wheel gets); ``--cassetter`` adds cassetter's side (its own
cassettes of the same tests, the suite's ``vcr_config``; it keeps no cache, so one warm pass first). Needs valgrind; prints Markdown.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

from . import suite

_RUN = """
import os, shutil, sys, time
os.environ.update(BENCH_TOOL="floor", BENCH_BASE_URL={base!r})
sys.path.insert(0, {project!r})
import anthropic, openai
import conftest
import llmvcr
folder = os.path.join({project!r}, "cassettes", "test_suite")
def one(i, where=folder, mode={mode!r}):
    if mode == "floor":
        conftest.three_calls(i)
    elif mode == "cassetter":  # the suite's vcr_config; cassetter keeps no cache, so warm is cold for it
        import cassetter
        with cassetter.use_cassette(
            os.path.join(where, f"test_ticket_{{i:04d}}{ext}"),
            record_mode="none",
            match_on=["method", "uri", "body"],
            filter_headers=["authorization", "x-api-key"],
        ):
            conftest.three_calls(i)
    else:
        with llmvcr.use_cassette(os.path.join(where, f"test_ticket_{{i:04d}}{ext}"), record_mode="none"):
            conftest.three_calls(i)
if {mode!r} == "cold":
    # the SDKs' first calls and llmvcr's lazy imports (rapidyaml, the guard's patterns) happen here, on a
    # copy of one cassette in another folder with its own state folder; the counted pass then finds
    # an empty parse cache for every cassette, as a fresh checkout does
    os.environ["LLMVCR_STATE_DIR"] = os.path.join({flag!r} + "-state", "warm")
    spare = {flag!r} + "-spare"
    os.makedirs(spare)
    shutil.copy(os.path.join(folder, "test_ticket_0000{ext}"), spare)
    one(0, spare)
    for i in range({n}):
        conftest.three_calls(i)
    os.environ["LLMVCR_STATE_DIR"] = os.path.join({flag!r} + "-state", "cold")
else:
    for i in range({n}):  # warm, not counted
        one(i)
open({flag!r} + ".ready", "w").close()
while not os.path.exists({flag!r} + ".go"):
    time.sleep(0.05)
for i in range({n}):
    one(i)
"""


def instructions(
    bench: suite.Suite,
    tree: str,
    mode: str,
    folder: str,
    tool: str = "llmvcr YAML",
    extra: dict[str, str] | None = None,
) -> float:
    """Instructions per test of one counted pass over the suite, in ``tree``'s llmvcr; ``mode``:
    ``floor``, ``warm`` (the parse cache filled by a pass before) or ``cold`` (as on CI: ``CI=true``,
    every cassette parsed and checked, its parse-cache entry written); ``tool``: the llmvcr project
    whose cassettes are played (``llmvcr YAML`` or ``llmvcr JSON``)."""
    flag = os.path.join(folder, f"flag-{time.monotonic_ns()}")
    project = bench.project("cassetter" if mode == "cassetter" else tool)
    ext = ".json" if tool == "llmvcr JSON" else ".yaml"
    code = _RUN.format(base=bench.base, project=project, mode=mode, n=bench.n, flag=flag, ext=ext)
    path = os.pathsep.join(filter(None, (tree, os.environ.get("BENCH_PYTHONPATH"))))
    env = {**os.environ, "PYTHONPATH": path, "PYTHONHASHSEED": "0"}  # the same dict and set layouts each run
    env.pop("CI", None)
    env.pop("LLMVCR_YAML", None)
    env.update(extra or {})
    if mode == "cold":
        env["CI"] = "true"
    args = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={flag}.out"]
    proc = subprocess.Popen(
        [*args, sys.executable, "-c", code], cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    while not os.path.exists(flag + ".ready"):
        if proc.poll() is not None:
            raise SystemExit(proc.communicate()[1].decode()[-3000:])
        time.sleep(0.2)
    subprocess.run(["callgrind_control", "-i", "on", str(proc.pid)], check=True, capture_output=True)
    open(flag + ".go", "w").close()
    _, err = proc.communicate()
    found = re.search(rb"Collected : (\d+)", err)
    if proc.returncode != 0 or found is None:
        raise SystemExit(err.decode()[-3000:])
    return int(found.group(1)) / bench.n


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.suite_instructions", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--baseline", help="another source tree of llmvcr")
    parser.add_argument("--tests", type=int, default=100)
    parser.add_argument("--keep", help="generate (once) and keep the projects in this folder")
    parser.add_argument(
        "--cassetter", action="store_true", help="count cassetter too (installed, or in BENCH_PYTHONPATH)"
    )
    parser.add_argument(
        "--json", action="store_true", help="count llmvcr's JSON cassettes too, cold and warm"
    )
    parser.add_argument(
        "--fallback",
        action="store_true",
        help="count the YAML fallback too (LLMVCR_YAML=pyyaml: a platform with no rapidyaml wheel), cold",
    )
    args = parser.parse_args(argv)
    keep = ["floor", "llmvcr YAML"] + ["cassetter"] * args.cassetter + ["llmvcr JSON"] * args.json
    for tool in list(suite.TOOLS):
        if tool not in keep:
            del suite.TOOLS[tool]
    with tempfile.TemporaryDirectory(prefix="llmvcr-instr-") as temporary:
        folder = args.keep or temporary
        bench = suite.Suite(folder, args.tests)
        base_file = os.path.join(folder, "base-url")  # cassetter matches the recorded URL, port included
        recorded = all(
            os.path.isdir(os.path.join(bench.project(t), "cassettes")) for t in suite.TOOLS if t != "floor"
        )
        bench.generate()
        if recorded and os.path.exists(base_file):
            with open(base_file) as f:
                bench.base = f.read().strip()
        else:
            bench.record()
            with open(base_file, "w") as f:
                f.write(bench.base)
        bench.pytest("llmvcr YAML", mode="none")  # fill the parse cache, as a rerun finds it
        if args.json:
            bench.pytest("llmvcr JSON", mode="none")
        rows = [("floor", instructions(bench, bench.here, "floor", folder))]
        if args.cassetter:
            rows.append(("cassetter", instructions(bench, bench.here, "cassetter", folder)))
        trees = [("", bench.here)]
        if args.baseline:
            trees.insert(0, (" (baseline)", os.path.abspath(args.baseline)))
        sides = [("llmvcr YAML", "YAML")] + [("llmvcr JSON", "JSON")] * args.json
        for tool, kind in sides:
            for mode, what in (
                ("cold", f"llmvcr {kind}, fresh checkout (CI)"),
                ("warm", f"llmvcr {kind}, warm parse cache"),
            ):
                for suffix, tree in trees:
                    rows.append((what + suffix, instructions(bench, tree, mode, folder, tool)))
        if args.fallback:
            what = "llmvcr YAML, fresh checkout (CI), PyYAML fallback"
            rows.append(
                (what, instructions(bench, bench.here, "cold", folder, extra={"LLMVCR_YAML": "pyyaml"}))
            )
    floor = rows[0][1]
    print("| side | instructions per test | over the floor | ÷ floor |")
    print("|---|---|---|---|")
    for name, count in rows:
        over = "" if name == "floor" else f"+{(count - floor) / 1e6:.2f} M"
        print(f"| {name} | {count / 1e6:.2f} M | {over} | {count / floor:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
