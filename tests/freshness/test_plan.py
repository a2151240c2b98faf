"""The re-record planner and the record budget, through real pytest runs of a sample suite (tests/
stale_suite.py) against the loopback server: a replay-only plan grouped by cause with its cost, and a
budgeted re-record that stops at the budget without a half-written cassette."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import stale_suite

import llmvcr
from llmvcr.freshness.budget import cassette_cost
from llmvcr.freshness.plan import Plan

CASES = [f"case{i:02d}" for i in range(6)]


@pytest.fixture
def suite(pytester: pytest.Pytester, server: Any, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """Six recorded tests (two calls each), then: case00 expired, case01 diverging, case02 leaves an
    entry unplayed, case03's cassette deleted; case04 and case05 stay fresh."""
    monkeypatch.setenv("LLM_URL", server.url)
    monkeypatch.setenv("SUITE_SIZE", "6")
    monkeypatch.delenv("CI", raising=False)
    pytester.makepyfile(test_suite=stale_suite.TESTS)
    pytester.runpytest("-p", "no:recording").assert_outcomes(passed=6)
    stale_suite.stage(
        pytester.path, expired=["case00"], diverging=["case01"], unplayed=["case02"], missing=["case03"]
    )
    return pytester


def cost(root: Path, case: str) -> float:
    return cassette_cost(llmvcr.load_cassette(stale_suite.cassette(root, case))).usd


@pytest.mark.slow
def test_the_plan_replays_only_and_groups_every_stale_cassette_by_cause_with_its_cost(
    suite: pytest.Pytester, server: Any
) -> None:
    calls = server.request_count
    result = suite.runpytest("-p", "no:recording", "--llmvcr-plan", "--llmvcr-max-age=30d")
    assert server.request_count == calls  # replay only
    # the missing cassette's test runs, as under pytest-recording, and fails at its first call
    result.assert_outcomes(passed=4, failed=2)
    expired, diverging, unplayed = (f"{cost(suite.path, c):.4f}" for c in ("case00", "case01", "case02"))
    total = sum(cost(suite.path, c) for c in ("case00", "case01", "case02"))
    result.stdout.fnmatch_lines(
        [
            "llmvcr plan: 4 cassettes to re-record or clean, by cause:",
            "  missing cassettes (never recorded): 1; re-recording: cost unknown (nothing recorded to go by)",
            "    cassettes/test_suite/test_case[[]case03[]].yaml: cost unknown*",
            "    record: pytest 'test_suite.py::test_case[[]case03[]]' --llmvcr-record-mode=once",
            f"  diverging cassettes (the code sends requests no entry answers): 1; re-recording: 2 calls, "
            f"* tokens, ~${diverging}",
            "    cassettes/test_suite/test_case[[]case01[]].yaml: * [[]request.body.messages[[]0[]].content changed[]]",
            f"  expired cassettes (older than max_age): 1; re-recording: 2 calls, * tokens, ~${expired}",
            "    cassettes/test_suite/test_case[[]case00[]].yaml: * [[]recorded * 90 days ago, over max_age 30 days[]]",
            f"  cassettes with unplayed entries (the code no longer makes those calls): 1; re-recording: 2 calls, "
            f"* tokens, ~${unplayed}",
            "    or drop the unused entries for free: llmvcr prune PATH...",
            f"  total: 6 live calls, * tokens, ~${total:.4f} at list price plus 1 never recorded; "
            "cap the spend with --llmvcr-record-budget=USD",
        ]
    )


@pytest.mark.slow
def test_llmvcr_plan_is_the_same_run_from_the_command_line(suite: pytest.Pytester) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "llmvcr", "plan", "-p", "no:recording", "-k", "case02 or case04"],
        cwd=suite.path, capture_output=True, text=True, env=dict(os.environ), timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr  # both pass: an unplayed entry fails nothing
    assert "llmvcr plan: 1 cassette to re-record or clean, by cause:" in done.stdout
    assert "cassettes/test_suite/test_case[case02].yaml: 2 calls" in done.stdout


def test_a_budgeted_re_record_stops_at_the_budget_and_leaves_no_half_written_cassette(
    suite: pytest.Pytester, server: Any
) -> None:
    budget = cost(suite.path, "case04") + cost(suite.path, "case05") / 2  # room for one of the two
    skipped = stale_suite.cassette(suite.path, "case05")
    before = skipped.read_bytes()
    calls = server.request_count
    result = suite.runpytest(
        "-p", "no:recording", "-rs", "--llmvcr-record-mode=all", f"--llmvcr-record-budget={budget}",
        "-k", "case04 or case05",
    )  # fmt: skip
    result.assert_outcomes(passed=1, skipped=1)
    assert server.request_count == calls + 2  # case04's two calls, none of case05's
    assert skipped.read_bytes() == before  # not touched: recorded whole or not at all
    result.stdout.fnmatch_lines(
        [
            f"llmvcr: record budget ${budget:.4f}: spent $* recording 1 cassette; skipped 1 that would record "
            "(none half-written: the budget is checked before a cassette starts)",
            f"  skipped cassettes/test_suite/test_case[[]case05[]].yaml (test_suite.py::test_case[[]case05[]]): "
            f"2 calls, * tokens, ~${cost(suite.path, 'case05'):.4f}",
        ]
    )
    result.stdout.fnmatch_lines(["*SKIPPED*case05*record budget*has $* left*raise --llmvcr-record-budget*"])


def test_xdist_workers_hand_their_plan_to_the_controller() -> None:
    worker, controller = Plan(), Plan()
    worker.add("expired", "/c/a.yaml", "t::a", "recorded 2026-01-01")
    controller.add("unplayed", "/c/a.yaml", "t::b")
    controller.merge(worker.as_json())
    assert [[p, c, sorted(t)] for p, c, t, _ in controller.as_json()] == [
        ["/c/a.yaml", "expired", ["t::a", "t::b"]]
    ]


@pytest.mark.parametrize("budget", ["-3", "nan", "-inf"])
def test_a_budget_below_zero_is_refused_before_any_test_runs(
    pytester: pytest.Pytester, server: Any, monkeypatch: pytest.MonkeyPatch, budget: str
) -> None:
    monkeypatch.setenv("LLM_URL", server.url)
    monkeypatch.setenv("SUITE_SIZE", "2")
    pytester.makepyfile(test_suite=stale_suite.TESTS)
    calls = server.request_count
    result = pytester.runpytest("-p", "no:recording", f"--llmvcr-record-budget={budget}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # not a run that skips every cassette
    result.stderr.fnmatch_lines(
        [f"*--llmvcr-record-budget={float(budget)}: give the most list-price dollars*"]
    )
    assert server.request_count == calls
    assert not (pytester.path / "cassettes").exists()


@pytest.mark.slow
def test_a_test_that_failed_before_its_first_call_is_its_own_cause_and_never_pruned(
    pytester: pytest.Pytester, server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_URL", server.url)
    monkeypatch.setenv("SUITE_SIZE", "2")
    monkeypatch.delenv("CI", raising=False)
    pytester.makepyfile(test_suite=stale_suite.TESTS)
    pytester.runpytest("-p", "no:recording").assert_outcomes(passed=2)
    # what a replay with no key looked like: the SDK raised before any request
    pytester.makeconftest(
        """
import pytest
@pytest.fixture(autouse=True)
def no_key():
    if __import__("os").environ.get("BREAK"):
        raise TypeError('"Could not resolve authentication method. Expected one of api_key"')
"""
    )
    monkeypatch.setenv("BREAK", "1")
    result = pytester.runpytest("-p", "no:recording", "--llmvcr-plan")
    result.assert_outcomes(errors=2)
    output = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "llmvcr plan: 2 cassettes to re-record or clean, by cause:",
            "  cassettes whose test failed before using them (the test is the cause, not the cassette): 2",
            "    cassettes/test_suite/test_case[[]case00[]].yaml: test_suite.py::test_case[[]case00[]] failed "
            'with TypeError: "Could not resolve authentication method. Expected one of api_key"',
            "*",
            "    make them pass first (their cassettes may be fine; do not prune them): pytest *case00* *case01*",
        ]
    )
    plan = output[output.index("llmvcr plan:") :]
    assert "prune" not in plan.replace("do not prune them", "")
    assert "unplayed entries (the code no longer makes those calls)" not in plan
    assert "total:" not in plan  # nothing to re-record
