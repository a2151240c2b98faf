"""Never silent, in the pytest summary: HTTP requests no provider claims are counted per cassette and
host when a recording lets them through; a replay refuses them (the seams' own tests: test_session.py,
test_recognition.py and tests/frameworks/test_never_silent.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import llmvcr
from llmvcr import _active
from llmvcr.pytest_plugin import _summary

USER_TESTS = """
import os, anthropic, httpx2, pytest
URL = os.environ["LLM_URL"]

@pytest.mark.llmvcr
def test_mixed():
    client = anthropic.Anthropic(api_key="sk-ant-inner-test-key-000", base_url=URL, max_retries=0)
    reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=16,
                                   messages=[{"role": "user", "content": "hi"}])
    assert reply.content[0].text == "Echo: hi"
    httpx2.get(URL + "/metrics")
    httpx2.get(URL + "/health")

@pytest.mark.llmvcr
def test_only_unclaimed():
    httpx2.get(URL + "/health")
"""


@pytest.fixture
def inner(pytester: pytest.Pytester, server: Any, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("LLM_URL", server.url)
    monkeypatch.delenv("CI", raising=False)
    pytester.makepyfile(test_user=USER_TESTS)
    return pytester


def run(p: pytest.Pytester, *args: str) -> pytest.RunResult:
    return p.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:recording", *args, timeout=120)


@pytest.mark.slow
def test_the_pytest_summary_counts_calls_that_went_out_unrecorded(inner: pytest.Pytester) -> None:
    recorded = run(inner, "--llmvcr-no-block-network")
    recorded.assert_outcomes(passed=2)
    recorded.stdout.fnmatch_lines(
        [
            "llmvcr: 0 LLM calls replayed, 1 recorded, 1 cassette written*",
            "  3 HTTP calls no provider claims went out unrecorded, in 2 cassettes *allow_unrecognized*",
            "    cassettes/test_user/test_mixed.yaml: 2 to 127.0.0.1",
            "    cassettes/test_user/test_only_unclaimed.yaml: 1 to 127.0.0.1 (nothing recorded, no cassette written)",
        ]
    )


@pytest.mark.slow
def test_the_pytest_summary_is_quiet_when_every_call_was_claimed(inner: pytest.Pytester) -> None:
    inner.makepyfile(test_user=USER_TESTS.replace("httpx2.get(", "pass  # "))
    result = run(inner, "--llmvcr-no-block-network")
    result.assert_outcomes(passed=2)
    assert "unrecorded" not in result.stdout.str()


@pytest.mark.slow
def test_a_replay_only_run_refuses_them_so_none_is_counted(inner: pytest.Pytester, server: Any) -> None:
    run(inner, "--llmvcr-no-block-network").assert_outcomes(passed=2)
    before = server.request_count
    replay = run(inner, "--llmvcr-record-mode=none", "-k", "test_mixed")
    replay.assert_outcomes(failed=1, deselected=1)
    replay.stdout.fnmatch_lines(["*UnrecognizedRequestError*GET http://127.0.0.1:*/metrics*"])
    assert "unrecorded" not in replay.stdout.str()
    assert server.request_count == before


@pytest.mark.slow
def test_a_marked_test_that_recorded_no_call_is_named_in_the_summary(inner: pytest.Pytester) -> None:
    """A module-wide marker covers tests that make no LLM call: one summary line, not a warning each."""
    inner.makepyfile(test_user=USER_TESTS.replace("httpx2.get(", "pass  # "))
    result = run(inner, "--llmvcr-no-block-network")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "llmvcr: 0 LLM calls replayed, 1 recorded, 1 cassette written*",
            "  1 test recorded no LLM call, so no cassette was written for it. *llmvcr.register_provider*",
            "    test_user.py::test_only_unclaimed",
        ]
    )
    assert "EmptyRecordingWarning" not in result.stdout.str()
    assert not (inner.path / "cassettes" / "test_user" / "test_only_unclaimed.yaml").exists()


def test_xdist_workers_hand_their_tests_that_recorded_nothing_to_the_controller() -> None:
    worker, controller = _summary.RunSummary(), _summary.RunSummary()
    worker.nothing.add("t.py::test_b")
    controller.nothing.add("t.py::test_a")
    controller.per_test["t"] = _summary.TestCounts("t")
    controller.merge(worker.as_json())
    lines = controller.lines(verbose=False)
    assert "  2 tests recorded no LLM call, so no cassette was written for them. " in "\n".join(lines)
    assert lines[-2:] == ["    t.py::test_a", "    t.py::test_b"]


def test_xdist_workers_hand_their_unrecorded_counts_to_the_controller() -> None:
    worker, controller = _summary.RunSummary(), _summary.RunSummary()
    worker.unrecorded["/c/a.yaml"] = {"api.example.com": 2}
    worker.per_test["t"] = _summary.TestCounts("t")
    controller.unrecorded["/c/a.yaml"] = {"api.example.com": 1, "other": 1}
    controller.merge(worker.as_json())
    assert controller.unrecorded["/c/a.yaml"] == {"api.example.com": 3, "other": 1}


@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
@pytest.mark.parametrize("on_unplayed", ["warn", "ignore"])
def test_a_cassette_that_accepts_unused_entries_is_not_offered_to_prune(
    anthropic_client: Any, server: Any, request: pytest.FixtureRequest, on_unplayed: str, tmp_path: Path
) -> None:
    ask = {"model": "claude-sonnet-4-5", "max_tokens": 16}
    path = str(tmp_path / "accepts-unused.yaml")
    with llmvcr.use_cassette(path, record_mode="all", on_divergence="live"):
        for text in ("first", "second"):
            anthropic_client.messages.create(**ask, messages=[{"role": "user", "content": text}])
    calls = server.request_count
    attempts = request.getfixturevalue("no_network")
    summary = _summary.RunSummary(test="t::replay")
    _active.add_listener(summary.on_session)
    try:
        with llmvcr.use_cassette(path, record_mode="none", on_unplayed=on_unplayed):
            anthropic_client.messages.create(**ask, messages=[{"role": "user", "content": "first"}])
    finally:
        _active.remove_listener(summary.on_session)
    assert attempts == [] and server.request_count == calls
    text = "\n".join(summary.lines(verbose=True))
    assert summary.per_test["t::replay"].unplayed == 1  # still counted for the test
    if on_unplayed == "ignore":  # accepted by the cassette: nothing to drop
        assert "llmvcr prune" not in text and "accepts-unused.yaml" not in text, text
    else:
        assert "(drop them with: llmvcr prune PATH...):" in text and "accepts-unused.yaml: 1 entry" in text
