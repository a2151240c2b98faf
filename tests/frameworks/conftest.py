"""Fixtures of the frameworks suite (the harness is ``roundtrip.py``)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest
from llm_server import LLMServer
from roundtrip import RESULTS, Result, Roundtrip


@pytest.fixture
def roundtrip(server: LLMServer, cassette_dir: Path) -> Roundtrip:
    return Roundtrip(server, cassette_dir)


def installed_version(distribution: str) -> str:
    try:
        return version(distribution)
    except PackageNotFoundError:
        return "not installed"


HTTP_LIBRARIES = {"httpx", "httpx2", "aiohttp"}  # a scenario of no framework: a client of its own


def framework_table(results: list[Result]) -> list[str]:
    """One row per framework, as a Markdown table: every row's scenarios recorded, replayed offline
    (sockets refused, server untouched, equal output) and left no key in any file, or the run failed."""
    rows = [
        "| framework | version | transport | recorded | replayed offline | keys clean |",
        "|---|---|---|---|---|---|",
    ]
    for framework in sorted({r.framework for r in results}, key=lambda f: (f in HTTP_LIBRARIES, f)):
        mine = [r for r in results if r.framework == framework]
        label = f"home-made {framework} client" if framework in HTTP_LIBRARIES else framework
        transports = sorted({t for r in mine for t in r.transports})
        kinds = [
            k
            for k in ("chat", "stream", "tools", "tool-result", "embeddings", "error")
            if any(k in r.kinds for r in mine)
        ]
        providers = sorted({p for r in mine for p in r.providers})
        requests = sum(r.requests for r in mine)
        rows.append(
            f"| {label} | {installed_version(framework)} | {', '.join(transports)} "
            f"| {len(mine)} scenario{'s' * (len(mine) != 1)}, {requests} request{'s' * (requests != 1)} as {', '.join(providers)}: {', '.join(kinds)} "
            f"| {len(mine)}/{len(mine)} | {len(mine)}/{len(mine)} |"
        )
    return rows


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Each scenario replayed offline: its requests, providers, transports and what it exercised;
    then the same per framework, as the table docs/frameworks.md and the issue quote."""
    if not RESULTS:
        return
    terminalreporter.section("frameworks: recorded, replayed offline, keys clean")
    for r in RESULTS:
        transports = ", ".join(f"{name} {n}" for name, n in r.transports.items())
        terminalreporter.write_line(
            f"{r.name:<34} {r.requests:>3} requests  {', '.join(r.providers):<18} {transports:<22} "
            f"{' '.join(r.kinds)}"
        )
    terminalreporter.write_line("")
    for line in framework_table(RESULTS):
        terminalreporter.write_line(line)
