"""``python -m benchmarks suite``: a pytest suite of N small cassettes, every tool in one run.

    python -m benchmarks suite [--tests 100] [--rounds 3] [--profile] [--startup] [--baseline TREE] [--installs]

Generates the project of :mod:`benchmarks.suite_project` once per tool, records each tool's
cassettes through its own interception (loopback server), then replays: serially (per-test time
from a hook, median over tests, best of ``--rounds`` runs) and under ``-n 2`` (wall time of the
whole run). Prints Markdown tables; asserts nothing about timings.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from .installs import environments
from .suite_project import CONFTEST, test_module

# tool -> (plugins to switch off, record-mode option, extra environment). The rows up to
# COLD_ROW run as CI runs them, a fresh checkout: CI=true, pytest's cache in a new empty folder
# each run and llmvcr's state folder (parse cache, play log) new and empty too, so nothing is warm.
COLD_ROW = "llmvcr YAML, fresh checkout (CI)"
TOOLS: dict[str, tuple[tuple[str, ...], str, dict[str, str]]] = {
    "floor": (("llmvcr", "recording", "cassetter"), "", {"BENCH_COLD": "1"}),
    "pytest-recording (vcrpy)": (
        ("llmvcr", "cassetter"),
        "--record-mode",
        {"BENCH_TOOL": "vcrpy", "BENCH_COLD": "1"},
    ),
    "cassetter": (("llmvcr", "recording"), "--record-mode", {"BENCH_TOOL": "cassetter", "BENCH_COLD": "1"}),
    COLD_ROW: (
        ("recording", "cassetter"),
        "--llmvcr-record-mode",
        {"BENCH_TOOL": "llmvcr_yaml", "BENCH_COLD": "1"},
    ),
    # a laptop's second run: pytest's cache and llmvcr's parse cache kept from the run before
    "llmvcr YAML": (("recording", "cassetter"), "--llmvcr-record-mode", {"BENCH_TOOL": "llmvcr_yaml"}),
    "llmvcr JSON": (("recording", "cassetter"), "--llmvcr-record-mode", {"BENCH_TOOL": "llmvcr_json"}),
}
SHARES_CASSETTES = {COLD_ROW: "llmvcr YAML"}
BASELINE: dict[str, str] = {}  # row -> source tree of another llmvcr checkout (--baseline)
PYTHONS: dict[str, str] = {}  # row -> the python of a fresh environment with llmvcr installed (--installs)


def add_baseline(tree: str) -> None:
    """Rows for the llmvcr in ``tree`` (an older checkout), on the same cassettes, in the same rounds."""
    for tool in (COLD_ROW, "llmvcr YAML", "llmvcr JSON"):
        row = f"{tool} (baseline)"
        TOOLS[row] = TOOLS[tool]
        SHARES_CASSETTES[row] = SHARES_CASSETTES.get(tool, tool)
        BASELINE[row] = os.path.abspath(tree)


def add_installs(folder: str) -> None:
    """Put one row per install (``benchmarks.installs``) first in ``TOOLS``, each playing the YAML
    cassettes cold."""
    pythons = environments(folder, progress)
    PYTHONS.update(pythons)
    SHARES_CASSETTES.update(dict.fromkeys(pythons, "llmvcr YAML"))
    rest = dict(TOOLS)
    TOOLS.clear()
    TOOLS.update({name: rest[COLD_ROW] for name in pythons})
    TOOLS.update(rest)


def progress(text: str) -> None:
    sys.stderr.write(text)
    sys.stderr.flush()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Suite:
    def __init__(self, folder: str, n: int) -> None:
        self.folder = folder
        self.n = n
        self.base = f"http://127.0.0.1:{_free_port()}"
        self.here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

    def project(self, tool: str) -> str:
        name = SHARES_CASSETTES.get(tool, tool)
        return os.path.join(self.folder, "".join(c if c.isalnum() else "_" for c in name))

    def generate(self) -> None:
        for tool in TOOLS:
            path = self.project(tool)
            if os.path.isdir(path):
                continue
            os.makedirs(path)
            with open(os.path.join(path, "conftest.py"), "w") as f:
                f.write(CONFTEST)
            with open(os.path.join(path, "test_suite.py"), "w") as f:
                f.write(test_module(self.n))
            with open(os.path.join(path, "pytest.ini"), "w") as f:
                f.write("[pytest]\n")

    def pytest(
        self, tool: str, *, mode: str, extra: tuple[str, ...] = (), env: dict[str, str] | None = None
    ) -> float:
        """Run the tool's project; returns the wall time of the whole pytest process."""
        off, option, tool_env = TOOLS[tool]
        args = [PYTHONS.get(tool, sys.executable), "-m", "pytest", "-q", "-p", "no:randomly", *extra]
        for plugin in off:
            args += ["-p", f"no:{plugin}"]
        if option:
            args.append(f"{option}={mode}")
        full = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTHONDONTWRITEBYTECODE")}
        full.update({"BENCH_TOOL": "floor", "BENCH_BASE_URL": self.base})
        # BENCH_PYTHONPATH: folders added after the tree, e.g. cassetter installed with
        # `pip install --target DIR cassetter` (its plugin and pytest-recording's both claim --record-mode)
        full["PYTHONPATH"] = os.pathsep.join(
            filter(None, (BASELINE.get(tool, self.here), os.environ.get("BENCH_PYTHONPATH")))
        )
        if tool in PYTHONS:  # llmvcr as installed there, not this tree
            del full["PYTHONPATH"]
        full.update(tool_env)
        full.update(env or {})
        if full.pop("BENCH_COLD", None) and not full.get("BENCH_RECORD"):
            fresh = tempfile.mkdtemp(prefix="cold-", dir=self.folder)
            full["LLMVCR_STATE_DIR"] = os.path.join(fresh, "state")
            full["CI"] = "true"
            args[3:3] = ["-o", f"cache_dir={os.path.join(fresh, 'pytest-cache')}"]
        start = time.perf_counter()
        done = subprocess.run(args, cwd=self.project(tool), env=full, capture_output=True, text=True)
        wall = time.perf_counter() - start
        if done.returncode != 0:
            raise SystemExit(f"{tool} ({mode}) failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        return wall

    def record(self, tools: tuple[str, ...] | None = None) -> None:
        for tool in tools or tuple(TOOLS):
            if tool == "floor" or tool in SHARES_CASSETTES:
                continue
            progress(f"recording {tool}\n")
            mode = "all" if "llmvcr" in tool else "once"
            self.pytest(tool, mode=mode, env={"BENCH_RECORD": "1"})
            found = glob.glob(os.path.join(self.project(tool), "**", "*.y*ml"), recursive=True)
            found += glob.glob(os.path.join(self.project(tool), "**", "*.json"), recursive=True)
            cassettes = [p for p in found if ".pytest_cache" not in p]
            if len(cassettes) != self.n:
                raise SystemExit(f"{tool}: expected {self.n} cassettes, found {len(cassettes)}")

    def serial(self, tool: str) -> tuple[list[float], float]:
        out = os.path.join(self.folder, "times")
        for old in glob.glob(out + ".*"):
            os.unlink(old)
        wall = self.pytest(tool, mode="none", env={"BENCH_TIMES": out})
        times: list[float] = []
        for path in glob.glob(out + ".*"):
            with open(path) as f:
                times += json.load(f)
        return times, wall


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def run(n: int, rounds: int, keep: str | None = None, installs: bool = False) -> None:
    with tempfile.TemporaryDirectory(prefix="llmvcr-suite-") as temporary:
        folder = keep or temporary
        if installs:
            add_installs(folder)
        suite = Suite(folder, n)
        suite.generate()
        base_file = os.path.join(folder, "base-url")  # a kept folder replays at the recorded URL
        if os.path.exists(base_file):
            suite.base = _read(base_file).decode().strip()
        else:
            suite.record()
            with open(base_file, "w") as f:
                f.write(suite.base)
        medians: dict[str, list[float]] = {t: [] for t in TOOLS}
        means: dict[str, list[float]] = {t: [] for t in TOOLS}
        walls: dict[str, list[float]] = {t: [] for t in TOOLS}
        xdist: dict[str, list[float]] = {t: [] for t in TOOLS}
        for tool in ("llmvcr YAML", "llmvcr YAML (baseline)"):  # fill the parse cache, as a rerun finds it
            if tool in TOOLS:
                suite.pytest(tool, mode="none")
        for r in range(rounds):
            for tool in TOOLS:  # the tools alternate inside each round
                progress(f"round {r + 1}/{rounds}: {tool}\n")
                times, wall = suite.serial(tool)
                medians[tool].append(statistics.median(times))
                means[tool].append(statistics.fmean(times))
                walls[tool].append(wall)
                xdist[tool].append(suite.pytest(tool, mode="none", extra=("-n", "2")))
        floor = min(medians["floor"])
        floor_mean = min(means["floor"])
        floor_x = min(xdist["floor"])
        best = {t: min(medians[t]) - floor for t in TOOLS}
        fastest_peer = min(best["pytest-recording (vcrpy)"], best["cassetter"])
        print(f"\n{n} tests x 3 calls, one cassette per test; best of {rounds} runs\n")
        print(
            "| tool | per test (median) | over floor | ÷ fastest peer | mean per test over floor | serial wall | -n 2 wall | -n 2 over floor |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for tool in TOOLS:
            over = best[tool]
            ratio = "" if tool == "floor" else f"{over / fastest_peer:.2f}" if fastest_peer > 0 else ""
            print(
                f"| {tool} | {_ms(min(medians[tool]))} | {'' if tool == 'floor' else '+' + _ms(over)} | {ratio} "
                f"| {'' if tool == 'floor' else '+' + _ms(min(means[tool]) - floor_mean)} "
                f"| {min(walls[tool]):.2f} s | {min(xdist[tool]):.2f} s "
                f"| {'' if tool == 'floor' else f'+{min(xdist[tool]) - floor_x:.2f} s'} |"
            )
        print(f"\nfloor per test: {_ms(floor)}")
        peer = "pytest-recording (vcrpy)"
        for tool in TOOLS:  # -n 2 against pytest-recording, round by round (same round, same machine)
            if "llmvcr" in tool:
                pairs = [mine / theirs for mine, theirs in zip(xdist[tool], xdist[peer], strict=True)]
                print(
                    f"-n 2 wall, {tool} ÷ {peer}: {statistics.median(pairs):.3f} "
                    f"(median of {len(pairs)} rounds; {min(pairs):.3f} to {max(pairs):.3f})"
                )
        startup(suite)
        loads(suite)


_STARTUP = """
import time, os, sys
tool = sys.argv[1]
os.environ.update(BENCH_TOOL=tool, BENCH_BASE_URL={base!r})
sys.path.insert(0, {project!r})
import anthropic, openai, httpx2, pytest
import conftest
t0 = time.perf_counter()
if tool != "floor":
    import llmvcr, llmvcr.pytest_plugin
t1 = time.perf_counter()
folder = os.path.join({project!r}, "cassettes", "test_suite")
def timed(i):
    s = time.perf_counter()
    if tool == "floor":
        conftest.three_calls(i)
    else:
        with llmvcr.use_cassette(os.path.join(folder, f"test_ticket_{{i:04d}}.yaml"), record_mode="none"):
            conftest.three_calls(i)
    return time.perf_counter() - s
first = timed(0)
later = sorted(timed(i) for i in range(1, min(11, {n})))[0]
print(t1 - t0, first - later)
"""


def startup(suite: Suite, runs: int = 7) -> None:
    """``import llmvcr`` + the plugin after the SDK imports, and what the first cassette costs over
    a later one beyond what the SDKs' own first call costs over a later one (the floor's), in
    fresh processes alternating llmvcr and floor (and the ``--baseline`` tree's llmvcr, when given).
    Byte-compiled files are allowed, as for a user."""
    code = _STARTUP.format(base=suite.base, project=suite.project("llmvcr YAML"), n=suite.n)
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTHONDONTWRITEBYTECODE")}
    trees = {"llmvcr": suite.here}
    if BASELINE:
        trees["llmvcr (baseline)"] = next(iter(BASELINE.values()))

    def one(tool: str, tree: str) -> list[float]:
        out = subprocess.run(
            [sys.executable, "-c", code, tool],
            capture_output=True,
            text=True,
            cwd=suite.folder,  # not a source tree: the current folder comes first on sys.path
            env={**env, "PYTHONPATH": tree},
        )
        if out.returncode:
            raise SystemExit(out.stderr)
        return [float(x) for x in out.stdout.split()]

    for tree in trees.values():
        one("llmvcr_yaml", tree)  # writes the byte-compiled files a user's installed package has
    imports: dict[str, list[float]] = {name: [] for name in trees}
    extras: dict[str, list[float]] = {name: [] for name in trees}
    for _ in range(runs):
        for name, tree in trees.items():
            mine, floor = one("llmvcr_yaml", tree), one("floor", suite.here)
            imports[name].append(mine[0])
            extras[name].append(mine[1] - floor[1])
    for name in trees:
        print(
            f"\n{name}: `import llmvcr` + `llmvcr.pytest_plugin` after the SDK imports: "
            f"{_ms(statistics.median(imports[name]))} (median of {runs} processes; fastest {_ms(min(imports[name]))})"
        )
        print(
            f"{name}: first cassette's extra cost over a later one, beyond the SDKs' own first-call cost: "
            f"{_ms(statistics.median(extras[name]))} (median of {runs} pairs)"
        )


def loads(suite: Suite) -> None:
    """One 3-entry cassette parsed: PyYAML, rapidyaml, the parse cache, vcrpy's file, JSON."""
    import orjson
    from vcr.serializers import yamlserializer

    import llmvcr
    from llmvcr.storage.parse_cache import ParseCache, parse_yaml, parse_yaml_pyyaml

    def one(project: str, ext: str) -> str:
        found = sorted(glob.glob(os.path.join(project, "cassettes", "**", "*" + ext), recursive=True))
        return found[0]

    yaml_path = one(suite.project("llmvcr YAML"), ".yaml")
    json_path = one(suite.project("llmvcr JSON"), ".json")
    vcr_path = one(suite.project("pytest-recording (vcrpy)"), ".yaml")
    data, jdata = _read(yaml_path), _read(json_path)
    vdata = _read(vcr_path).decode("utf-8")
    cache = ParseCache(os.path.join(suite.folder, "parse-cache"))
    cache.load(data, parse_yaml)

    def best(fn: object, k: int = 200) -> float:
        times = []
        for _ in range(k):
            s = time.perf_counter()
            fn()  # type: ignore[operator]
            times.append(time.perf_counter() - s)
        return statistics.median(times)

    rows = [
        ("PyYAML C loader", best(lambda: parse_yaml_pyyaml(data)), len(data)),
        (
            "`parse_yaml`: rapidyaml behind its guard (a cold parse cache)",
            best(lambda: parse_yaml(data)),
            len(data),
        ),
        ("parse cache hit (sha256 + read + orjson)", best(lambda: cache.load(data, parse_yaml)), len(data)),
        (
            "`llmvcr.load_cassette` (YAML, warm cache)",
            best(lambda: llmvcr.load_cassette(yaml_path)),
            len(data),
        ),
        ("vcrpy's file, vcrpy's deserializer", best(lambda: yamlserializer.deserialize(vdata)), len(vdata)),
        ("JSON cassette, orjson", best(lambda: orjson.loads(jdata)), len(jdata)),
        ("`llmvcr.load_cassette` (JSON)", best(lambda: llmvcr.load_cassette(json_path)), len(jdata)),
    ]
    print("\n| YAML load, one 3-entry cassette | per cassette | file |\n|---|---|---|")
    for what, t, size in rows:
        print(f"| {what} | {_ms(t)} | {size / 1024:.1f} KB |")


def profile(n: int) -> None:
    """cProfile of the llmvcr YAML replay run (one pytest process), top functions by own time."""
    with tempfile.TemporaryDirectory(prefix="llmvcr-suite-") as folder:
        suite = Suite(folder, n)
        suite.generate()
        suite.record()
        out = os.path.join(folder, "prof")
        code = (
            "import cProfile, sys, pytest; sys.argv=['pytest'];"
            f"cProfile.run(\"pytest.main(['-q','-p','no:recording','-p','no:cassetter','--llmvcr-record-mode=none'])\", {out!r})"
        )
        env = {
            **os.environ,
            "BENCH_TOOL": "llmvcr_yaml",
            "BENCH_BASE_URL": suite.base,
            "PYTHONPATH": suite.here,
        }
        env.pop("CI", None)
        subprocess.run(
            [sys.executable, "-c", code],
            cwd=suite.project("llmvcr YAML"),
            env=env,
            check=True,
            capture_output=True,
        )
        import pstats

        stats = pstats.Stats(out)
        stats.sort_stats("tottime").print_stats(25)
        stats.sort_stats("cumulative").print_stats("llmvcr", 30)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks suite", description=__doc__.split("\n")[0])
    parser.add_argument("--tests", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--startup", action="store_true", help="only the start-up and first-cassette figures")
    parser.add_argument("--keep", help="generate and keep the projects in this folder")
    parser.add_argument("--baseline", help="also run the llmvcr of this source tree (another checkout)")
    parser.add_argument(
        "--installs", action="store_true", help="first, llmvcr as each install gets it (fresh environments)"
    )
    args = parser.parse_args(argv)
    if args.baseline:
        add_baseline(args.baseline)
    if args.profile:
        profile(args.tests)
    elif args.startup:
        with tempfile.TemporaryDirectory(prefix="llmvcr-suite-") as temporary:
            suite = Suite(args.keep or temporary, args.tests)
            suite.generate()
            suite.record(("llmvcr YAML",))  # the one tool start-up runs (no peer needs installing)
            startup(suite, runs=args.rounds)
    else:
        run(args.tests, args.rounds, args.keep, args.installs)
    return 0
