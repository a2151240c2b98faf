"""Cassettes that may no longer tell the truth (llmvcr.freshness.check), through real pytest runs against the
loopback server: entries a passing test left unused (on_unplayed), and cassettes older than max_age
(expiry warn / fail / re-record, never re-recorded on CI)."""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

import llmvcr
from llmvcr.cassette.age import age_text, parse_age, recorded_at
from llmvcr.errors import ExpiredCassetteError, UnplayedEntriesError, UnplayedEntriesWarning
from llmvcr.options import Options

USER_TESTS = """
import os, anthropic, pytest, llmvcr
URL = os.environ["LLM_URL"]

def ask(text):
    client = anthropic.Anthropic(api_key="sk-ant-inner-test-key-000", base_url=URL, max_retries=0)
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=16,
                                  messages=[{"role": "user", "content": text}])

@pytest.mark.llmvcr(**eval(os.environ.get("MARKER", "{}")))
def test_two():
    if os.environ.get("NONE"):
        return
    assert ask("one").content[0].text == "Echo: one"
    if os.environ.get("BOTH", "1") == "1":
        ask("two")
"""

CASSETTE = "cassettes/test_user/test_two.yaml"


@pytest.fixture
def inner(pytester: pytest.Pytester, server: Any, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("LLM_URL", server.url)
    monkeypatch.delenv("CI", raising=False)
    pytester.makepyfile(test_user=USER_TESTS)
    return pytester


def run(p: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, *args: str, **env: str) -> pytest.RunResult:
    for name in ("BOTH", "MARKER", "CI", "NONE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return p.runpytest("-p", "no:recording", "-W", "default", *args)


def backdate(path: Path, days: float) -> None:
    """Move the cassette's recording date ``days`` into the past."""
    text = path.read_text()
    when = (datetime.now(timezone.utc) - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")
    changed = re.sub(r"(?m)^  at: '[^']*'$", f"  at: '{when}'", text)
    assert changed != text
    path.write_text(changed)


# -- unplayed entries --------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_passing_test_that_left_entries_unused_is_warned_with_their_ids_and_the_commands(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(inner, monkeypatch).assert_outcomes(passed=1)
    replay = run(inner, monkeypatch, BOTH="0")
    replay.assert_outcomes(passed=1)  # warn is the default: nothing that passed starts failing
    out = replay.stdout.str()
    assert "UnplayedEntriesWarning" in out
    assert "1 of 2 recorded entries were not used: #1 POST /v1/messages claude-sonnet-4-5 sha256:" in out
    assert f"llmvcr prune {CASSETTE}" in out
    assert "pytest 'test_user.py::test_two' --llmvcr-record-mode=all" in out
    # the run's summary names the same entries, once per cassette
    replay.stdout.fnmatch_lines([f"    {CASSETTE}: 1 entry (#1)"])
    # the marker chooses, the flag overrides every cassette
    run(inner, monkeypatch, BOTH="0", MARKER="{'on_unplayed': 'fail'}").assert_outcomes(passed=1, errors=1)
    flag = run(inner, monkeypatch, "--llmvcr-on-unplayed=ignore", BOTH="0", MARKER="{'on_unplayed': 'fail'}")
    flag.assert_outcomes(passed=1)
    assert "UnplayedEntriesWarning" not in flag.stdout.str()


@pytest.mark.slow
def test_on_unplayed_fail_fails_the_passing_test_and_prune_still_accepts_its_run(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(inner, monkeypatch).assert_outcomes(passed=1)
    failed = run(inner, monkeypatch, "--llmvcr-on-unplayed=fail", BOTH="0")
    failed.assert_outcomes(passed=1, errors=1)
    failed.stdout.fnmatch_lines(["*UnplayedEntriesError*1 of 2 recorded entries were not used: #1 POST*"])
    # the test failed only for the entry it left unused: the command it names works
    pruned = subprocess.run(
        [sys.executable, "-m", "llmvcr", "prune", CASSETTE], cwd=inner.path, capture_output=True, text=True
    )
    assert pruned.returncode == 0, pruned.stderr
    assert len(llmvcr.load_cassette(inner.path / CASSETTE)) == 1
    run(inner, monkeypatch, "--llmvcr-on-unplayed=fail", BOTH="0").assert_outcomes(passed=1)


def test_use_cassette_and_recording_take_on_unplayed(anthropic_client: Any, cassette_dir: Path) -> None:
    def ask(text: str) -> None:
        anthropic_client.messages.create(
            model="claude-sonnet-4-5", max_tokens=8, messages=[{"role": "user", "content": text}]
        )

    with llmvcr.recording("two"):
        ask("one")
        ask("two")
    with pytest.raises(UnplayedEntriesError, match=r"two\.yaml: 1 of 2 recorded entries .* #1 POST"):
        with llmvcr.recording("two", on_unplayed="fail"):
            ask("one")
    with pytest.warns(UnplayedEntriesWarning, match="#0 POST /v1/messages claude-sonnet-4-5"):
        with llmvcr.use_cassette("two"):
            ask("two")
    with pytest.raises(ZeroDivisionError):  # a block that raised: its calls stopped early, no finding
        with llmvcr.recording("two", on_unplayed="fail"):
            ask("one")
            raise ZeroDivisionError
    with pytest.raises(ValueError, match="unknown on_unplayed 'never'; valid: warn, fail, ignore"):
        Options.build(on_unplayed="never")


# -- expiry ------------------------------------------------------------------------------------------
def test_a_new_cassette_stores_when_it_was_recorded(anthropic_client: Any, cassette_dir: Path) -> None:
    before = datetime.now(timezone.utc).replace(microsecond=0)
    with llmvcr.recording("dated"):
        anthropic_client.messages.create(
            model="claude-sonnet-4-5", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
        )
    when = recorded_at(llmvcr.load_cassette(cassette_dir / "dated.yaml").recorded_with)
    assert when is not None and before <= when <= datetime.now(timezone.utc)


def test_an_expired_cassette_warns_and_the_summary_lists_it(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, server: Any
) -> None:
    run(inner, monkeypatch).assert_outcomes(passed=1)
    backdate(inner.path / CASSETTE, 45)
    calls = server.request_count
    old = run(inner, monkeypatch, "--llmvcr-max-age=30d")
    old.assert_outcomes(passed=1)
    old.stdout.fnmatch_lines(
        [
            "*ExpiredCassetteWarning*test_two.yaml: expired: recorded * UTC, 45 days ago, over max_age 30 days*",
            "  1 expired cassette (older than max_age):",
            f"    {CASSETTE}: recorded * 45 days ago, over max_age 30 days; warned",
        ]
    )
    assert server.request_count == calls  # warn replays


def test_expiry_fail_fails_before_the_test_runs_and_an_undated_cassette_is_named(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(inner, monkeypatch).assert_outcomes(passed=1)
    backdate(inner.path / CASSETTE, 3)
    result = run(inner, monkeypatch, MARKER="{'max_age': '2d', 'expiry': 'fail'}")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*ExpiredCassetteError*3 days ago, over max_age 2 days*--llmvcr-record-mode=all*"]
    )
    run(inner, monkeypatch, MARKER="{'max_age': '4d', 'expiry': 'fail'}").assert_outcomes(passed=1)
    # a cassette that names no date cannot expire, and the summary says so
    path = inner.path / CASSETTE
    path.write_text(re.sub(r"(?m)^  at: .*\n", "", path.read_text()))
    undated = run(inner, monkeypatch, MARKER="{'max_age': '2d', 'expiry': 'fail'}")
    undated.assert_outcomes(passed=1)
    undated.stdout.fnmatch_lines(
        [f"  1 cassette without a recording date, which max_age cannot judge*{CASSETTE}"]
    )


def test_expiry_re_record_records_only_expired_cassettes_and_never_on_ci(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, server: Any
) -> None:
    run(inner, monkeypatch).assert_outcomes(passed=1)
    path = inner.path / CASSETTE
    flags = ("--llmvcr-max-age=10d", "--llmvcr-expiry=re-record")
    calls = server.request_count
    run(inner, monkeypatch, *flags).assert_outcomes(passed=1)
    assert server.request_count == calls  # not expired: replayed
    backdate(path, 11)
    on_ci = run(inner, monkeypatch, *flags, CI="true")
    on_ci.assert_outcomes(passed=1)
    on_ci.stdout.fnmatch_lines(["*expiry='re-record' does not record on CI*", "*11 days ago*; warned"])
    assert server.request_count == calls
    redone = run(inner, monkeypatch, *flags)
    redone.assert_outcomes(passed=1)
    redone.stdout.fnmatch_lines(["*11 days ago, over max_age 10 days; re-recorded"])
    assert server.request_count == calls + 2
    when = recorded_at(llmvcr.load_cassette(path).recorded_with)
    assert when is not None and datetime.now(timezone.utc) - when < timedelta(hours=1)
    assert len(llmvcr.load_cassette(path)) == 2


def test_max_age_is_checked_when_given() -> None:
    assert parse_age("1d12h") == timedelta(days=1, hours=12)
    assert parse_age(timedelta(hours=3)) == timedelta(hours=3)
    assert Options.build(max_age="2w").max_age == timedelta(weeks=2)
    with pytest.raises(ValueError, match="'30 days' is not a duration"):
        Options.build(max_age="30 days")
    with pytest.raises(
        ValueError,
        match=r"unknown expiry 'rerecord'; did you mean 're-record'\?; valid: warn, fail, re-record",
    ):
        Options.build(expiry="rerecord")


def test_an_age_reads_the_way_a_person_says_it() -> None:
    assert age_text(timedelta(seconds=1)) == "1 second"
    assert age_text(timedelta(seconds=42)) == "42 seconds"
    assert age_text(timedelta(minutes=1, seconds=30)) == "1 minute"
    assert age_text(timedelta(hours=3)) == "3 hours"
    assert age_text(timedelta(days=45)) == "45 days"


def test_expiry_fail_outside_pytest_runs(anthropic_client: Any, cassette_dir: Path) -> None:
    with llmvcr.recording("old"):
        anthropic_client.messages.create(
            model="claude-sonnet-4-5", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
        )
    backdate(cassette_dir / "old.yaml", 2)
    with pytest.raises(
        ExpiredCassetteError, match="old.yaml: expired: recorded .* 2 days ago, over max_age 1 day"
    ):
        with llmvcr.recording("old", max_age="1d", expiry="fail"):
            pass


# -- record_mode="all", and cassetter's "rewrite" ---------------------------------------------------------
def test_rewrite_is_not_a_second_all_and_all_that_records_nothing_reports_the_old_file(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ValueError, match="llmvcr's 'all' re-records the cassette .* use record_mode='all'"):
        Options.build(record_mode="rewrite")
    with pytest.raises(ValueError, match="cassetter's 'rewrite'"):
        llmvcr.configure(record_mode="rewrite")
    run(inner, monkeypatch).assert_outcomes(passed=1)
    kept = run(inner, monkeypatch, "--llmvcr-record-mode=all", NONE="1")
    kept.assert_outcomes(passed=1)
    kept.stdout.fnmatch_lines(
        [
            "*UnplayedEntriesWarning*test_two.yaml: record_mode='all' recorded nothing, so the file keeps all 2*"
        ]
    )
    assert len(llmvcr.load_cassette(inner.path / CASSETTE)) == 2  # kept, and said so
    strict = run(inner, monkeypatch, "--llmvcr-record-mode=all", "--llmvcr-on-unplayed=fail", NONE="1")
    strict.assert_outcomes(passed=1, errors=1)
