"""Fixtures of the frameworks suite (the harness is ``roundtrip.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from llm_server import LLMServer
from roundtrip import RESULTS, Roundtrip


@pytest.fixture
def roundtrip(server: LLMServer, cassette_dir: Path) -> Roundtrip:
    return Roundtrip(server, cassette_dir)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Each scenario replayed offline: how many requests it recorded, and as which providers."""
    if RESULTS:
        terminalreporter.section("frameworks: recorded, replayed offline, keys clean")
        for name, entries, providers in RESULTS:
            terminalreporter.write_line(f"{name:<32} {entries:>3} requests  {', '.join(providers)}")
