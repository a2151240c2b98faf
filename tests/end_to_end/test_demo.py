"""The README's first command: the demo replays the shipped cassettes offline."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.mark.slow
def test_demo_replays_shipped_cassettes_offline() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "llmvcr.demo"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert "The tool said: 18C and sunny" in run.stdout
    assert "Echo: Say hello to llmvcr" in run.stdout
    assert "network access attempted" not in run.stdout + run.stderr


def test_shipped_cassettes_say_where_they_were_recorded() -> None:
    import llmvcr

    for path in sorted((ROOT / "cassettes").glob("*.yaml")):
        cassette = llmvcr.load_cassette(path)
        assert "loopback" in cassette.metadata["recorded_against"]
        assert cassette.seed and len(cassette) >= 1
