"""Kill and signal storms while recording: the process ends, the file loads, nothing is lost or twice.

Each run forks a recorder (tests/signal_recorder.py) that records calls through the anthropic SDK
against the loopback server, and signals it at a random moment: before the first call, mid-call,
mid-write, or while the cassette closes. The seed is in every failure message; set
``LLMVCR_SIGNAL_SEED`` to replay the same moments.
"""

from __future__ import annotations

import contextlib
import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import llmvcr

RECORDER = Path(__file__).parent.parent.joinpath("signal_recorder.py")
CALLS = 10  # per run
HANG = 30.0  # seconds a recorder may take to print its next line or to end: more is a hang
RUNS = {signal.SIGKILL: 12, signal.SIGTERM: 12, signal.SIGINT: 6}  # per format


class Recorder:
    """The forking recorder process, read line by line with a bound on every wait."""

    def __init__(self, url: str) -> None:
        env = {**os.environ, "LLM_URL": url, "PYTHONPATH": os.pathsep.join(sys.path)}
        self.proc = subprocess.Popen(
            [sys.executable, str(RECORDER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        self.label = ""  # the seed and run, named in every failure
        self.pid = 0  # the recording now running
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.seen.append(line.strip())
            self.lines.put(line.strip())
        self.lines.put("eof")

    def line(self, what: str) -> str:
        try:
            return self.lines.get(timeout=HANG)
        except queue.Empty:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGUSR1)  # its threads' stacks, on stderr
                time.sleep(1)  # they are written by then
            pytest.fail(
                f"{self.label}: the recorder printed nothing for {HANG:.0f} s while {what}: it hangs; last lines {self.seen[-12:]}"
            )

    def start(self, path: Path, slow: bool) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{path} {CALLS} {int(slow)}\n")
        self.proc.stdin.flush()
        word, pid = self.line("starting").split()
        assert word == "pid"
        self.pid = int(pid)
        return self.pid

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=HANG)


@pytest.fixture
def recorder(server: Any) -> Iterator[Recorder]:
    rec = Recorder(server.url)
    assert rec.line("importing") == "ready"
    yield rec
    if rec.proc.poll() is None:
        if rec.pid and rec.lines.empty():  # a failed run may leave its recording hung: end it
            with contextlib.suppress(ProcessLookupError):
                os.kill(rec.pid, signal.SIGKILL)
        rec.close()


def run_once(
    rec: Recorder, path: Path, sig: signal.Signals, rng: random.Random, tally: dict[str, int]
) -> str:
    """One recording signalled at a random moment; returns what happened, for failure messages."""
    # calls to see returned first: -1 is before the first call; half the runs stop just as the last
    # call returns, when the cassette is being closed (the moment entries were lost)
    stop_after = rng.choice([rng.randint(-1, CALLS), CALLS - 1])
    delay = rng.choice([0.0, rng.uniform(0.0, 0.02)])  # at once, or somewhere inside the next call
    slow = rng.random() < 0.5  # writes coalesced: entries wait in memory when the signal comes
    pid = rec.start(path, slow)
    done, waiting, closed = -1, 0, False
    while done < stop_after and not closed:
        line = rec.line(f"recording call {done + 1}")
        if line == "done":
            closed = True
            continue
        word, i, pending = line.split()
        assert word == "call" and int(i) == done + 1, f"{rec.label}: unexpected line {line!r}"
        done, waiting = int(i), int(pending)
    time.sleep(delay)
    os.kill(pid, sig)  # alive until signalled: it waits after "done", so this pid is still ours
    tally["signals"] += 1
    what = (
        f"{rec.label}: {sig.name} after call {done} ({waiting} waiting) + {delay * 1000:.1f} ms, slow={slow}"
    )
    for line in iter(lambda: rec.line(f"ending after {sig.name}"), None):
        if line.startswith("exit"):
            break
        if line.startswith("call"):
            done, waiting = int(line.split()[1]), int(line.split()[2])
        elif line == "eof":
            pytest.fail(f"{what}: the recorder itself died")
    code = int(line.split()[1])
    assert code == -sig, f"{what}: exited with {code}, not of the signal (-{int(sig)})"
    if not path.exists():
        assert sig == signal.SIGKILL or done < 0, f"{what}: no cassette although {done + 1} calls returned"
        texts: list[str] = []
    else:
        texts = [e.request.body["messages"][0]["content"] for e in llmvcr.load_cassette(path).entries]
    tally["duplicated"] += len(texts) - len(set(texts))
    assert texts == [f"n{i}" for i in range(len(texts))], f"{what}: entries out of order or twice: {texts}"
    assert len(texts) <= min(done + 2, CALLS), f"{what}: {len(texts)} entries, more than calls made"
    # SIGTERM and Ctrl-C write what waits in memory; SIGKILL cannot be caught and may lose only the
    # entries waiting for a coalesced write (README, Safety: "Nothing is lost").
    kept = done + 1 - (waiting if sig == signal.SIGKILL else 0)
    tally["lost"] += max(0, kept - len(texts))
    assert len(texts) >= kept, f"{what}: {len(texts)} entries on disk, {kept} promised"
    leftovers = list(path.parent.glob(".llmvcr-tmp-*"))
    if sig == signal.SIGKILL:
        tally["tmp_after_kill"] += len(leftovers)
        for tmp in leftovers:
            tmp.unlink()
    else:
        assert not leftovers, f"{what}: temporary files left: {leftovers}"
    return what


@pytest.mark.parametrize("fmt", ["yaml", "json"])
@pytest.mark.slow
def test_signal_storm_loses_nothing_and_never_hangs(tmp_path: Path, recorder: Recorder, fmt: str) -> None:
    seed = int(os.environ.get("LLMVCR_SIGNAL_SEED", random.randrange(2**32)))
    rng = random.Random(f"{seed}-{fmt}")
    plan = [sig for sig, n in RUNS.items() for _ in range(n)]
    rng.shuffle(plan)
    tally = dict.fromkeys(["signals", "lost", "duplicated", "tmp_after_kill"], 0)
    for run, sig in enumerate(plan):
        folder = tmp_path / f"run{run}"
        folder.mkdir()
        recorder.label = f"LLMVCR_SIGNAL_SEED={seed} {fmt} run {run}"
        run_once(recorder, folder / f"storm.{fmt}", sig, rng, tally)
    print(f"{fmt}: {tally}")
    assert tally["signals"] == len(plan) and tally["lost"] == tally["duplicated"] == 0
