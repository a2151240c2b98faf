"""The end-of-run line counts ``@llmvcr.tool`` calls apart from LLM calls, and the marker takes
``tool_policy`` as ``use_cassette`` does."""

from __future__ import annotations

from pathlib import Path

import pytest

import llmvcr
from llmvcr import _active
from llmvcr.pytest_plugin._summary import RunSummary


@llmvcr.tool
def lookup(city: str) -> str:
    return f"sunny in {city}"


def test_the_summary_counts_tool_calls_replayed_and_recorded(cassette_dir: Path) -> None:
    summary = RunSummary(test="test_x")
    _active.add_listener(summary.on_session)
    try:
        with llmvcr.use_cassette("weather"):
            lookup("Oslo")
            lookup("Lima")
        with llmvcr.use_cassette("weather", record_mode="new_episodes"):
            lookup("Oslo")
            lookup("Lima")
            lookup("Pune")
    finally:
        _active.remove_listener(summary.on_session)
    line = summary.lines(verbose=False)[0]
    assert line.startswith("llmvcr: 0 LLM calls replayed, 0 recorded, 1 cassette written")
    assert line.endswith("; 2 tool calls replayed, 3 recorded")


USER_TESTS = """
import pytest, llmvcr

RUNS = []

@llmvcr.tool
def send_email(to: str) -> str:
    RUNS.append(to)
    return "sent to " + to

@llmvcr.tool
def drop_table(name: str) -> None:
    RUNS.append(name)

@pytest.mark.llmvcr(tool_policy={"drop_table": "deny"})
def test_agent():
    assert send_email("ada") == "sent to ada"
    with pytest.raises(llmvcr.errors.ToolDeniedError, match="test_agent"):
        drop_table("users")
    assert RUNS == (["ada"] if RECORDING else [])
"""


@pytest.mark.slow
def test_the_marker_takes_tool_policy_and_the_summary_counts_tools(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    for recording in (True, False):
        pytester.makepyfile(test_user=f"RECORDING = {recording}\n" + USER_TESTS)
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:recording", timeout=120)
        result.assert_outcomes(passed=1)
        replayed, recorded = (0, 1) if recording else (1, 0)
        result.stdout.fnmatch_lines(
            [
                f"llmvcr: 0 LLM calls replayed, 0 recorded, *; {replayed} tool call* replayed, {recorded} recorded"
            ]
        )
