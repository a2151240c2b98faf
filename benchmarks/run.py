"""Replay cost of llmvcr against the SDK's own floor and against vcrpy; one run, one table.

    python -m benchmarks            # the full run (a few minutes on two cores)
    python -m benchmarks --quick    # N = 100 and 1,000 only, fewer rounds
    python -m benchmarks --profile  # cProfile of llmvcr replaying 1,000 calls, then exit

Every figure is a median over rounds; the contenders alternate inside each round so a slow
stretch of a noisy machine hits all of them. The ratios are the result; absolute times are
only context.
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from . import contenders as c
from . import workload as w

SIZES = (100, 1_000, 10_000)


@dataclass(frozen=True)
class Plan:
    """How many rounds each measurement gets, and how many calls vcrpy is timed on."""

    sizes: tuple[int, ...] = SIZES
    rounds: dict[int, int] = field(default_factory=lambda: {100: 15, 1_000: 7, 10_000: 3})
    vcrpy_sample: dict[int, int] = field(default_factory=lambda: {100: 100, 1_000: 100, 10_000: 20})
    vcrpy_rounds: dict[int, int] = field(default_factory=lambda: {100: 3, 1_000: 2, 10_000: 2})
    stream_rounds: int = 15
    yaml_load_rounds: int = 3
    json_load_rounds: int = 9
    record_calls: int = 200
    record_rounds: int = 5
    import_runs: int = 9


QUICK = Plan(
    sizes=(100, 1_000),
    rounds={100: 7, 1_000: 3},
    vcrpy_sample={100: 100, 1_000: 40},
    vcrpy_rounds={100: 2, 1_000: 1},
    stream_rounds=7,
    yaml_load_rounds=2,
    json_load_rounds=5,
    record_calls=100,
    record_rounds=3,
    import_runs=5,
)


# -- the table --------------------------------------------------------------------------------------
@dataclass
class Row:
    what: str
    baseline: str = ""
    llmvcr: str = ""
    vcrpy: str = ""
    ratio: str = ""
    target: str = ""
    met: str = ""


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)

    def add(self, row: Row) -> None:
        self.rows.append(row)
        progress(f"  {row.what}: {row.ratio} {row.met}")

    def markdown(self) -> str:
        head = ("measurement", "baseline", "llmvcr", "vcrpy", "ratio", "target", "met")
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in self.rows:
            cells = (r.what, r.baseline, r.llmvcr, r.vcrpy, r.ratio, r.target, r.met)
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines)


def fmt(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.0f} µs"


def verdict(ok: bool) -> str:
    return "yes" if ok else "**no**"


def median(values: list[float]) -> float:
    return statistics.median(values)


def alternate(rounds: int, contenders: dict[str, Callable[[], list[float]]]) -> dict[str, float]:
    """The median of every sample each contender gave over ``rounds``; the order rotates each round."""
    names = list(contenders)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            samples[name] += contenders[name]()
    return {name: median(values) for name, values in samples.items()}


_STARTED = time.perf_counter()


def progress(message: str) -> None:
    print(f"[{time.perf_counter() - _STARTED:4.0f} s] {message}", file=sys.stderr, flush=True)


# -- the run ------------------------------------------------------------------------------------------
class Bench:
    """Builds the cassettes once in a temporary folder, then measures each item of the brief."""

    def __init__(self, folder: str, plan: Plan) -> None:
        self.folder = folder
        self.plan = plan
        largest = max(plan.sizes)
        self.calls = w.calls(largest)
        self.streams = [w.anthropic_stream(), w.openai_stream()]
        self.floor = c.Floor()
        self.clients = self.floor.clients()
        self.report = Report()

    def path(self, name: str) -> str:
        return os.path.join(self.folder, name)

    def prepare(self) -> None:
        import llmvcr

        largest = max(self.plan.sizes)
        progress(f"preparing: {largest:,} calls and 2 streams through the floor, recorded by llmvcr")
        self.floor.learn(self.clients, self.calls + self.streams)
        recorded = self.path(f"llmvcr-{largest}.json")
        c.record_llmvcr(self.floor, self.calls, recorded)
        whole = llmvcr.load_cassette(recorded)
        for n in self.plan.sizes:
            if n != largest:
                c.save_subset(whole, self.path(f"llmvcr-{n}.json"), n)
        progress(f"preparing: the {largest:,}-entry cassette as YAML, and the stream cassettes")
        c.save_subset(whole, self.path(f"llmvcr-{largest}.yaml"), largest)
        for i, stream in enumerate(self.streams):
            c.record_llmvcr(self.floor, [stream], self.path(f"llmvcr-stream-{i}.yaml"))
        progress("preparing: vcrpy cassettes of the same interactions")
        by_call = {id(cap.call): cap for cap in self.floor.captured}
        for n in self.plan.sizes:
            c.write_vcrpy([by_call[id(call)] for call in self.calls[:n]], self.path(f"vcrpy-{n}.yaml"))
        for i, stream in enumerate(self.streams):
            c.write_vcrpy([by_call[id(stream)]], self.path(f"vcrpy-stream-{i}.yaml"))

    def replay(self) -> None:
        per_call: dict[int, float] = {}
        floor_per_call: dict[int, float] = {}
        for n in self.plan.sizes:
            calls = self.calls[:n]
            progress(f"replay N={n:,}: floor and llmvcr, {self.plan.rounds[n]} rounds")
            cassette = self.path(f"llmvcr-{n}.json")  # the format changes loading only, measured below
            got = alternate(
                self.plan.rounds[n],
                {
                    "floor": partial(c.timed, self.clients, calls),
                    "llmvcr": partial(c.replay_llmvcr, self.clients, cassette, calls),
                },
            )
            sample = calls[:: max(1, n // self.plan.vcrpy_sample[n])]
            progress(f"replay N={n:,}: vcrpy on {len(sample)} calls spread over the cassette")
            vcrpy = median(
                c.replay_vcrpy(self.clients, self.path(f"vcrpy-{n}.yaml"), sample, self.plan.vcrpy_rounds[n])
            )
            per_call[n], floor_per_call[n] = got["llmvcr"], got["floor"]
            ratio = got["llmvcr"] / got["floor"]
            self.report.add(
                Row(
                    f"replay, N={n:,}, per call: llmvcr ÷ floor",
                    fmt(got["floor"]),
                    fmt(got["llmvcr"]),
                    fmt(vcrpy),
                    f"{ratio:.3f}",
                    "≤ 1.15",
                    verdict(ratio <= 1.15),
                )
            )
            speedup = vcrpy / got["llmvcr"]
            target = "≥ 20" if n == 1_000 else "grows with N" if n > 1_000 else ""
            met = verdict(speedup >= 20) if n == 1_000 else ""
            self.report.add(
                Row(f"replay, N={n:,}, per call: vcrpy ÷ llmvcr", "", "", "", f"{speedup:.1f}", target, met)
            )
        small, large = min(self.plan.sizes), max(self.plan.sizes)
        if small != large:
            flat = per_call[large] / per_call[small]
            self.report.add(
                Row(
                    f"llmvcr per call, N={large:,} ÷ N={small:,}",
                    fmt(per_call[small]),
                    fmt(per_call[large]),
                    "",
                    f"{flat:.3f}",
                    "≤ 1.10",
                    verdict(flat <= 1.10),
                )
            )
            floor_flat = floor_per_call[large] / floor_per_call[small]
            self.report.add(
                Row(
                    f"floor per call, N={large:,} ÷ N={small:,} (reference)",
                    fmt(floor_per_call[small]),
                    fmt(floor_per_call[large]),
                    "",
                    f"{floor_flat:.3f}",
                    "",
                    "",
                )
            )

    def streaming(self) -> None:
        for i, stream in enumerate(self.streams):
            name = "anthropic messages.stream()" if stream.sdk == "anthropic" else "openai chat stream"
            progress(f"stream: {name}, {w.STREAM_EVENTS} events, {self.plan.stream_rounds} rounds")
            cassette = self.path(f"llmvcr-stream-{i}.yaml")
            got = alternate(
                self.plan.stream_rounds,
                {
                    "floor": partial(c.timed, self.clients, [stream]),
                    "llmvcr": partial(c.replay_llmvcr, self.clients, cassette, [stream]),
                },
            )
            vcrpy = median(
                c.replay_vcrpy(
                    self.clients, self.path(f"vcrpy-stream-{i}.yaml"), [stream], self.plan.stream_rounds
                )
            )
            ratio = got["llmvcr"] / got["floor"]
            self.report.add(
                Row(
                    f"stream, {name}, {w.STREAM_EVENTS} events: llmvcr ÷ floor",
                    fmt(got["floor"]),
                    fmt(got["llmvcr"]),
                    fmt(vcrpy),
                    f"{ratio:.3f}",
                    "≤ 1.15",
                    verdict(ratio <= 1.15),
                )
            )

    def loading(self) -> None:
        import orjson
        import yaml

        import llmvcr

        largest = max(self.plan.sizes)
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

        def read(path: str) -> bytes:
            with open(path, "rb") as f:
                return f.read()

        def clock(fn: Callable[[], object]) -> list[float]:
            gc.collect()
            start = time.perf_counter()
            fn()
            return [time.perf_counter() - start]

        fresh = iter(range(1_000_000))

        def cold(path: str) -> list[float]:
            # a comment no earlier round wrote: new bytes, so the parse cache cannot answer and the
            # row times the first load of a file (parse, checks, cache store), as the raw parser's
            with open(path, "ab") as f:
                f.write(f"# round {next(fresh)}\n".encode())
            return clock(partial(llmvcr.load_cassette, path))

        for fmt_name, rounds, raw in (
            ("json", self.plan.json_load_rounds, lambda p: orjson.loads(read(p))),
            ("yaml", self.plan.yaml_load_rounds, lambda p: yaml.load(read(p), Loader=loader)),
        ):
            path = self.path(f"llmvcr-{largest}.{fmt_name}")
            parser = "orjson.loads" if fmt_name == "json" else f"yaml.load({loader.__name__})"
            progress(f"load: {largest:,}-entry {fmt_name.upper()} cassette, {rounds} rounds")
            got = alternate(
                rounds,
                {
                    "raw": partial(clock, partial(raw, path)),
                    "llmvcr": partial(cold, path)
                    if fmt_name == "yaml"
                    else partial(clock, partial(llmvcr.load_cassette, path)),
                },
            )
            ratio = got["llmvcr"] / got["raw"]
            size = os.path.getsize(path) / 1e6
            self.report.add(
                Row(
                    f"load {largest:,}-entry {fmt_name.upper()} ({size:.0f} MB): llmvcr ÷ {parser}",
                    fmt(got["raw"]),
                    fmt(got["llmvcr"]),
                    "",
                    f"{ratio:.3f}",
                    "≤ 1.3",
                    verdict(ratio <= 1.3),
                )
            )

    def recording(self) -> None:
        import llmvcr

        from .loopback import Loopback

        n = self.plan.record_calls
        progress(f"recording: {n} calls to a loopback server, {self.plan.record_rounds} rounds")
        server = Loopback()
        try:
            clients = w.make_clients(base_url=server.url)
            calls = self.calls[:n]
            clients.run(calls[:20])  # open the connection, warm both SDKs
            counter = iter(range(10**6))

            def live() -> list[float]:
                gc.collect()
                start = time.perf_counter()
                clients.run(calls)
                return [(time.perf_counter() - start) / n]

            def recorded() -> list[float]:
                path = self.path(f"recorded-{next(counter)}.yaml")
                gc.collect()
                start = time.perf_counter()
                with llmvcr.recording(path, record_mode="all"):  # the file writes are included
                    clients.run(calls)
                return [(time.perf_counter() - start) / n]

            got = alternate(self.plan.record_rounds, {"live": live, "recorded": recorded})
            clients.close()
        finally:
            server.close()
        ratio = got["recorded"] / got["live"]
        extra = got["recorded"] - got["live"]
        self.report.add(
            Row(
                f"recording a loopback call: recorded ÷ unrecorded (+{fmt(extra)} per call)",
                fmt(got["live"]),
                fmt(got["recorded"]),
                "",
                f"{ratio:.3f}",
                "(context)",
                "",
            )
        )

    def import_cost(self) -> None:
        progress(f"import: python -X importtime -c 'import llmvcr', {self.plan.import_runs} runs")
        costs = []
        for _ in range(self.plan.import_runs):
            run = subprocess.run(
                [sys.executable, "-X", "importtime", "-c", "import llmvcr"],
                capture_output=True,
                text=True,
                check=True,
            )
            match = re.search(r"^import time:\s+\d+ \|\s+(\d+) \| llmvcr$", run.stderr, re.MULTILINE)
            assert match, run.stderr[-500:]
            costs.append(int(match.group(1)) / 1e6)
        probe = (
            "import sys, llmvcr; llmvcr.use_cassette('probe'); "
            "print(','.join(m for m in ('anthropic', 'openai', 'httpx', 'httpx2', 'groq') if m in sys.modules))"
        )
        sdks = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, check=True
        ).stdout.strip()
        cost = median(costs)
        self.report.add(
            Row(
                "`import llmvcr` (cumulative, -X importtime)",
                "",
                fmt(cost),
                "",
                "",
                "≤ 15 ms",
                verdict(cost <= 0.015),
            )
        )
        self.report.add(
            Row(
                "SDK modules imported by `import llmvcr` and `use_cassette()`",
                "",
                sdks or "none",
                "",
                "",
                "none",
                verdict(not sdks),
            )
        )

    def warm_up(self) -> None:
        """One untimed pass of each contender, so first-call imports and caches count nowhere."""
        n = min(self.plan.sizes)
        self.clients.run(self.calls[:n])
        c.replay_llmvcr(self.clients, self.path(f"llmvcr-{n}.json"), self.calls[:n])
        c.replay_vcrpy(self.clients, self.path(f"vcrpy-{n}.yaml"), self.calls[:10], 1)


def profile(folder: str, n: int = 1_000) -> None:
    """cProfile of llmvcr replaying ``n`` calls, sorted by own time, llmvcr's functions first."""
    import cProfile
    import pstats

    import llmvcr

    calls = w.calls(n)
    floor = c.Floor()
    clients = floor.clients()
    floor.learn(clients, calls)
    path = os.path.join(folder, "profile.yaml")
    c.record_llmvcr(floor, calls, path)
    c.replay_llmvcr(clients, path, calls)  # warm
    profiler = cProfile.Profile()
    with llmvcr.use_cassette(path, record_mode="none"):
        profiler.enable()
        clients.run(calls)
        profiler.disable()
    stats = pstats.Stats(profiler, stream=sys.stdout)
    stats.sort_stats("cumulative").print_stats(r"llmvcr[/\\]", 30)
    stats.sort_stats("tottime").print_stats(25)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="N = 100 and 1,000 only, fewer rounds")
    parser.add_argument(
        "--profile", action="store_true", help="profile llmvcr replaying 1,000 calls and exit"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="llmvcr-bench-") as folder:
        if args.profile:
            profile(folder)
            return 0
        bench = Bench(folder, QUICK if args.quick else Plan())
        bench.prepare()
        bench.warm_up()
        bench.replay()
        bench.streaming()
        bench.loading()
        bench.recording()
        bench.import_cost()
        progress("done\n")
        print(bench.report.markdown())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
