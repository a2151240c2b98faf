"""``python -m benchmarks view``: the pages ``llmvcr view`` writes, their size and how fast a browser
draws them.

Cassettes of N calls (N = 10, 100, 1,000 by default) are recorded through the real ``anthropic`` and
``openai`` SDKs against the loopback server of the test suite (``tests/llm_server.py``, in this
process): alternating Anthropic and OpenAI calls with a short system prompt, every fifth one streamed.
A 40-call Anthropic agent session (a question, a tool call, a 2 KB tool result, an answer; linear
layout) is recorded too. For each:

* **cassette** and **page**: the sizes of the YAML file and of the HTML page;
* **write**: the wall time of ``llmvcr.view.write_view`` (reading the cassette included), median;
* **first paint**, **first contentful paint** and **drawn** (every call on the page, the mark the
  page sets when it is done): milliseconds from navigation, as the page's own Performance API
  reports them in headless Chromium (``tests/browser.py``), median of ``--rounds`` fresh loads.

The last lines are the targets' figures, each with its ratio or difference: the 1,000-call page
written within 0.2 s of the 10-call one (in process, and as a whole ``python -m llmvcr view``
process); a folder's index of ``--index`` cassettes of 10 calls each in at most 1 s (whole process);
the 1,000-call page's first paint under 0.5 s and its drawing done within 0.4 s of the 10-call page's
(browser start excluded: one browser opens every page); the page's size per call, flat from 100 to
1,000 calls.

With ``--screenshots FOLDER``, a PNG of each page kind is saved there as well: a cassette, a folder's
index, an agent session, a vcrpy file, a failed replay's report and ``llmvcr diff --html``.

    python -m benchmarks view [--sizes 10 100 1000] [--rounds 5] [--index 100] [--screenshots docs/images]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import llmvcr

ROOT = Path(__file__).resolve().parent.parent
SYSTEM = "You review support tickets for a software company; answer in plain sentences."


def record(path: Path, anthropic_client: Any, openai_client: Any, n: int) -> Path:
    """``n`` calls alternating the two SDKs, every fifth one streamed."""
    with llmvcr.use_cassette(path, record_mode="all"):
        for i in range(n):
            text = f"Ticket #{i:05d}: the export button does nothing on page {i % 7}. What should we check?"
            stream = i % 5 == 4
            if i % 2 == 0:
                kwargs = {"model": "claude-sonnet-4-5", "max_tokens": 300, "system": SYSTEM}
                messages = [{"role": "user", "content": text}]
                if stream:
                    with anthropic_client.messages.stream(messages=messages, **kwargs) as s:
                        s.get_final_message()
                else:
                    anthropic_client.messages.create(messages=messages, **kwargs)
            else:
                messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": text}]
                reply = openai_client.chat.completions.create(
                    model="gpt-4o-mini", messages=messages, stream=stream
                )
                if stream:
                    list(reply)
    return path


def median_ms(run: Any, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def process_ms(args: list[str], rounds: int) -> float:
    """Median wall time of ``python -m llmvcr view ARGS`` as a process of its own (start included)."""
    command = [sys.executable, "-m", "llmvcr", "view", *args]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    return median_ms(lambda: subprocess.run(command, check=True, capture_output=True, env=env), rounds)


def targets(rows: list[Any], work: Path, index: Path | None, rounds: int) -> list[str]:
    """The issue's figures: each with the target it is held against."""
    by_calls = {label: row for label, *row in rows}
    small, large = by_calls.get("10 calls"), by_calls.get("1,000 calls")
    lines = []
    if small and large:
        lines.append(
            f"write, 1,000 calls - 10 calls, in process: {large[2] - small[2]:+,.0f} ms (target <= +200 ms)"
        )
        whole = [
            process_ms([str(work / f"calls-{n}.yaml"), "-o", str(work / f"p{n}.html")], rounds)
            for n in (10, 1000)
        ]
        lines.append(
            f"write, 1,000 calls - 10 calls, whole process: {whole[1]:,.0f} - {whole[0]:,.0f} = "
            f"{whole[1] - whole[0]:+,.0f} ms (target <= +200 ms)"
        )
        paint, drawn = large[3].get("first-contentful-paint", 0), large[3].get("drawn", 0)
        lines.append(f"first paint, 1,000 calls: {paint:,.0f} ms (target < 500 ms)")
        lines.append(
            f"drawn, 1,000 calls - 10 calls: {drawn - small[3].get('drawn', 0):+,.0f} ms (target <= +400 ms)"
        )
    hundred = by_calls.get("100 calls")
    if hundred and large:
        per = [hundred[1] / 100, large[1] / 1000]
        lines.append(
            f"page bytes per call, 100 -> 1,000 calls: {per[0]:,.0f} -> {per[1]:,.0f} B ({per[1] / per[0]:.3f}x, flat)"
        )
    if index is not None:
        n = len(list(index.iterdir()))
        took = process_ms([str(index), "-o", str(work / "index.html")], rounds)
        lines.append(
            f"folder index, {n} cassettes of 10 calls, whole process: {took:,.0f} ms (target <= 1,000 ms)"
        )
    return lines


def paints(driver: Any, page: Path, rounds: int) -> dict[str, float]:
    from browser import open_page, paint_times

    seen: dict[str, list[float]] = {}
    for _ in range(rounds):
        driver.get("about:blank")
        open_page(driver, page)
        for name, value in paint_times(driver).items():
            seen.setdefault(name, []).append(value)
    return {name: statistics.median(values) for name, values in seen.items()}


def screenshots(folder: Path, driver: Any, work: Path, clients: tuple[Any, Any]) -> None:
    """A PNG of each page kind, made in a folder laid out as a project (the pages name files by the
    paths given, relative here), from the demo cassettes, the suite's real vcrpy files and new
    recordings against the loopback server."""
    from browser import open_page

    from llmvcr.cli import main as cli
    from llmvcr.errors import ReplayDivergence
    from llmvcr.freshness.playlog import PlayLog
    from llmvcr.view import write_divergences, write_view
    from llmvcr.view.cassettes import cassette_data, load
    from llmvcr.view.compare import divergence_data

    folder = folder.resolve()
    folder.mkdir(parents=True, exist_ok=True)
    project = work / "project"
    real = ROOT / "tests" / "data" / "vcrpy_real"
    shutil.copytree(ROOT / "cassettes", project / "cassettes")
    for name in ("otel-contrib", "llm-anthropic", "pydantic-ai"):
        shutil.copytree(real / name, project / "tests" / "cassettes" / name)
    shutil.copy(work / "agent-40.yaml", project / "tests" / "cassettes" / "test_trip_planner.yaml")
    here = os.getcwd()
    os.chdir(project)
    try:
        trip, other = (
            Path("tests/cassettes/test_plan_lisbon.yaml"),
            Path("tests/cassettes/test_plan_lisbon-june.yaml"),
        )
        ask = "Plan a short trip to Lisbon in May: three days, trains only, and a budget of 600 euros."
        for path, text in ((trip, ask), (other, ask.replace("May", "June"))):
            with llmvcr.use_cassette(path, record_mode="all", seed="trip-planner-v3"):
                clients[0].messages.create(
                    model="claude-sonnet-4-5", max_tokens=200, messages=[{"role": "user", "content": text}]
                )
        changed = ask.replace("short", "long").replace("600", "900")
        try:
            with llmvcr.use_cassette(trip, record_mode="none"):
                clients[0].messages.create(
                    model="claude-sonnet-4-5", max_tokens=200, messages=[{"role": "user", "content": changed}]
                )
            raise AssertionError("the changed prompt was answered from the cassette")
        except ReplayDivergence as err:
            cassette, fmt = load(str(trip))
            divergence = divergence_data(err, "tests/test_trips.py::test_plan_lisbon", cassette)
            write_divergences([divergence], [cassette_data(cassette, fmt)], "report.html")
        cli(["diff", str(trip), str(other), "--html", "diff.html"])
        weather = Path("tests/cassettes/test_weather.yaml")  # a run that used one of its two entries
        asks = ["Is it raining in Oslo?", "Is it raining in Bergen?"]
        with llmvcr.use_cassette(weather, record_mode="all"):
            for text in asks:
                clients[1].chat.completions.create(
                    model="gpt-4o-mini", messages=[{"role": "user", "content": text}]
                )
        with PlayLog(), llmvcr.use_cassette(weather, record_mode="none", on_unplayed="ignore"):
            clients[1].chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": asks[1]}]
            )
        pages = {
            "view-cassette.png": write_view(["cassettes/demo-anthropic.yaml"], "demo.html"),
            "view-index.png": write_view(["cassettes", "tests/cassettes"], "index.html"),
            "view-agent.png": write_view(["tests/cassettes/test_trip_planner.yaml"], "agent.html"),
            "view-vcrpy.png": write_view(
                ["tests/cassettes/otel-contrib/test_chat_completion_tool_calls_with_content.yaml"],
                "vcrpy.html",
            ),
            "view-divergence.png": "report.html",
            "view-diff.png": "diff.html",
        }
        driver.set_window_size(1200, 820)
        for name, page in pages.items():
            driver.get("about:blank")
            open_page(driver, page)
            driver.save_screenshot(str(folder / name))
            print(f"saved {folder / name} ({(folder / name).stat().st_size / 1024:.0f} KB)", file=sys.stderr)
    finally:
        os.chdir(here)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks view", description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--index", type=int, default=100, help="cassettes of 10 calls in the folder index")
    parser.add_argument("--screenshots", metavar="FOLDER", help="also save a PNG of each page kind there")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT / "tests"))
    import anthropic
    import openai
    from browser import start
    from llm_server import LLMServer
    from weather_agent import agent

    from llmvcr.view import write_view

    work = Path(tempfile.mkdtemp(prefix="llmvcr-view-"))
    os.environ["LLMVCR_STATE_DIR"] = str(work / "state")  # the parse cache, away from the user's
    server = LLMServer().start()
    a = anthropic.Anthropic(api_key="sk-ant-bench", base_url=server.url, max_retries=0)
    o = openai.OpenAI(api_key="sk-bench", base_url=server.url + "/v1", max_retries=0)
    driver = start(str(work / "chromium"))
    rows = []
    try:
        cassettes = [(f"{n:,} calls", record(work / f"calls-{n}.yaml", a, o, n)) for n in args.sizes]
        session = work / "agent-40.yaml"
        with llmvcr.use_cassette(session, record_mode="all"):
            agent(a, 20)
        cassettes.append(("agent session, 40 calls", session))
        index = work / "folder" if args.index else None
        (work / "folder").mkdir()
        for i in range(args.index):
            record(work / "folder" / f"test_{i:03d}.yaml", a, o, 10)
        for label, cassette in cassettes:
            page = work / f"{cassette.stem}.html"
            written = median_ms(lambda c=cassette, p=page: write_view([str(c)], str(p)), args.rounds)
            timing = paints(driver, page, args.rounds)
            rows.append((label, cassette.stat().st_size, page.stat().st_size, written, timing))
            print(f"{label}: {rows[-1]}", file=sys.stderr)
        lines = targets(rows, work, index, args.rounds)
        if args.screenshots:
            screenshots(Path(args.screenshots), driver, work, (a, o))
    finally:
        driver.quit()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    print("| cassette | YAML | page | write | first paint | first contentful paint | drawn |")
    print("|---|---|---|---|---|---|---|")
    for label, yaml_size, page_size, written, timing in rows:
        print(
            f"| {label} | {yaml_size / 1024:,.0f} KB | {page_size / 1024:,.0f} KB | {written:,.0f} ms | "
            f"{timing.get('first-paint', 0):,.0f} ms | {timing.get('first-contentful-paint', 0):,.0f} ms | "
            f"{timing.get('drawn', 0):,.0f} ms |"
        )
    print()
    for line in lines:
        print(f"- {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
