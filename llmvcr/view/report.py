"""``pytest --llmvcr-report=report.html``: a page for the replays of a run that failed with
``ReplayDivergence``, each live request beside the nearest recorded one.

The page is written again at each divergence, so it exists (and the error message can name it)
while the run goes on. A pytest-xdist worker writes its own file (``report-gw0.html``). The plugin
reaches this module only when the option is given, so a run without it never imports the page code.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from typing import Any

import pytest

from ..convert import JSON
from ..errors import LLMVCRError, ReplayDivergence
from .cassettes import cassette_data, load
from .compare import divergence_data
from .pages import write_divergences


@dataclass
class Report:
    """The divergences of this run so far, and the cassettes they happened in (each once)."""

    path: str
    divergences: list[JSON] = field(default_factory=list)
    cassettes: dict[str, JSON] = field(default_factory=dict)


_REPORT = pytest.StashKey[Report]()


def report_path(config: pytest.Config, option: str) -> str:
    """The file to write: ``option`` from where pytest was started; a worker's own name under xdist."""
    path = os.path.join(str(config.invocation_params.dir), option)
    worker = getattr(config, "workerinput", {}).get("workerid")
    if worker:
        stem, suffix = os.path.splitext(path)
        path = f"{stem}-{worker}{suffix or '.html'}"
    return path


def on_divergence(config: pytest.Config, err: ReplayDivergence, test: str, option: str) -> str | None:
    """Add ``err`` to the run's page and write it; returns the page's path, or None (with a warning)
    when it could not be written (the test fails for its divergence all the same)."""
    report = config.stash.get(_REPORT, None)
    if report is None:
        report = config.stash[_REPORT] = Report(report_path(config, option))
    cassette = None
    try:
        if err.cassette_path and os.path.isfile(err.cassette_path):
            cassette, fmt = load(err.cassette_path)
            if err.cassette_path not in report.cassettes:
                report.cassettes[err.cassette_path] = cassette_data(cassette, fmt)
        shown = divergence_data(err, test, cassette)
        report.divergences.append(shown)
        this_run(report.cassettes.get(err.cassette_path), test, shown["entry"])
        return write_divergences(report.divergences, list(report.cassettes.values()), report.path)
    except (LLMVCRError, OSError) as problem:
        warnings.warn(f"llmvcr: --llmvcr-report: {report.path} not written: {problem}", stacklevel=2)
        return None


def this_run(data: JSON | None, test: str, entry: int | None) -> None:
    """The cassette as this run left it, not as an earlier run's record says: the entry nearest the
    request that diverged was not played, whatever the last finished run played."""
    if data is None:
        return
    before = data.get("played") or {}
    ours = before if before.get("this_run") else {}  # an earlier divergence of this run, in this cassette
    missed = sorted({*ours.get("unplayed", []), *([entry] if entry is not None else [])})
    tests = sorted({*ours.get("failed_tests", []), test})
    data["played"] = {
        "this_run": True,
        "run": "",
        "finished": "this run",
        "failed_tests": tests,
        "fits": True,
        "unplayed": missed,
    }
    for call in data.get("calls", []):
        call["unplayed"] = call["i"] in missed
    data["stale"] = True


def name_the_page(err: Any, path: str) -> None:
    """The divergence message, ending with where its page is."""
    if err.args and isinstance(err.args[0], str) and path not in err.args[0]:
        err.args = (f"{err.args[0]}\nSide by side in {path}", *err.args[1:])
