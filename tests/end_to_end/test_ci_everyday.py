"""Issue 13's daily annoyances, each met as a user meets it: a real pytest run in a subprocess,
then the file, the output or the ``llmvcr`` command the user looks at next."""

from __future__ import annotations

import difflib
import os
import subprocess
import sys
from typing import Any

import pytest
from test_ci_adoption import HEADER, project
from test_ci_adoption import run_with as pytest_run

import llmvcr

STREAM = """
def ask_stream(text):
    client = anthropic.Anthropic(api_key="sk-ant-inner-test-key-000", base_url=URL, max_retries=0)
    with client.messages.stream(model="claude-sonnet-4-5", max_tokens=64,
                                messages=[{"role": "user", "content": text}]) as stream:
        return "".join(stream.text_stream)

def ask_openai(text):
    import openai
    client = openai.OpenAI(api_key="sk-proj-inner-test-key-0000000000", base_url=URL + "/v1", max_retries=0)
    return client.chat.completions.create(model="gpt-5-mini", messages=[{"role": "user", "content": text}])
"""


@pytest.fixture
def inner(pytester: pytest.Pytester, server: Any, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("LLM_URL", server.url)
    monkeypatch.delenv("CI", raising=False)
    return pytester


def llmvcr_cli(p: pytest.Pytester, *args: str, encoding: str = "utf-8") -> tuple[int, str, str]:
    """The ``llmvcr`` command run from the project's root: status, stdout, stderr."""
    done = subprocess.run(
        [sys.executable, "-m", "llmvcr", *args],
        cwd=p.path,
        env={**os.environ, "PYTHONIOENCODING": encoding},
        capture_output=True,
        timeout=60,
    )
    return done.returncode, done.stdout.decode(encoding), done.stderr.decode(encoding)


def changed_lines(before: str, after: str) -> list[str]:
    return [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))
    ]


@pytest.mark.slow
def test_re_recording_one_test_is_the_command_the_error_gives(inner: pytest.Pytester, server: Any) -> None:
    inner.makepyfile(
        test_chat=HEADER
        + """
@pytest.mark.llmvcr
def test_x():
    assert ask(os.environ.get("PROMPT", "old prompt")).startswith("Echo: ")

@pytest.mark.llmvcr
def test_y():
    assert ask("untouched") == "Echo: untouched"
"""
    )
    pytest_run(inner).assert_outcomes(passed=2)
    folder = inner.path / "cassettes" / "test_chat"
    other = (folder / "test_y.yaml").read_bytes()
    failed = pytest_run(inner, PROMPT="new prompt", CI="true")
    failed.assert_outcomes(failed=1, passed=1)
    failed.stdout.fnmatch_lines(
        [
            "*recorded 'old prompt' != live 'new prompt'*",
            "*(pytest 'test_chat.py::test_x' --llmvcr-record-mode=all)*",
        ]
    )
    # the command as the error prints it
    pytest_run(
        inner, "test_chat.py::test_x", "--llmvcr-record-mode=all", PROMPT="new prompt"
    ).assert_outcomes(passed=1)
    rerecorded = llmvcr.load_cassette(folder / "test_x.yaml")
    assert [e.request.body["messages"][0]["content"] for e in rerecorded.entries] == [
        "new prompt"
    ]  # no stale entry
    assert (folder / "test_y.yaml").read_bytes() == other  # the test the command did not name is untouched
    replay = pytest_run(inner, PROMPT="new prompt", CI="true")
    replay.assert_outcomes(passed=2)
    replay.stdout.fnmatch_lines(
        ["llmvcr: 2 LLM calls replayed, 0 recorded, 0 cassettes written, 0 unplayed entries;*"]
    )


@pytest.mark.slow
def test_a_hand_edited_prompt_replays_with_a_warning_naming_the_file(inner: pytest.Pytester) -> None:
    inner.makepyfile(
        test_edit=HEADER
        + """
@pytest.mark.llmvcr
def test_prompt():
    assert ask(os.environ.get("PROMPT", "Summarise the report")) == "Echo: Summarise the report"
"""
    )
    pytest_run(inner).assert_outcomes(passed=1)
    cassette = inner.path / "cassettes" / "test_edit" / "test_prompt.yaml"
    # as a vcrpy user does: edit the prompt in the file and in the code, leave the answer
    cassette.write_text(
        cassette.read_text().replace("content: Summarise the report", "content: Summarise the memo", 1)
    )
    tree = project(inner.path)
    result = pytest_run(inner, PROMPT="Summarise the memo", CI="true")
    result.assert_outcomes(passed=1)
    output = result.stdout.str()
    assert output.count("test_prompt.yaml: entry 0 was edited by hand") == 1, output
    assert "already played" not in output
    assert project(inner.path) == tree  # replay rewrote nothing
    assert f"llmvcr rehash {cassette}" in " ".join(output.split())  # what to run to silence it
    edited = cassette.read_text()
    status, out, err = llmvcr_cli(inner, "rehash", "test_edit/test_prompt")
    assert status == 0 and "request_hash of entry 0 stored anew" in out, (out, err)
    changed = changed_lines(edited, cassette.read_text())
    assert len(changed) == 2 and all("request_hash:" in line for line in changed), changed  # that line only
    again = pytest_run(inner, PROMPT="Summarise the memo", CI="true")
    again.assert_outcomes(passed=1)
    assert "edited by hand" not in again.stdout.str()


@pytest.mark.slow
def test_prose_about_keys_replays_as_sent_and_a_wrong_path_spelling_is_refused(
    inner: pytest.Pytester, server: Any
) -> None:
    inner.makepyfile(
        test_prose=HEADER
        + """
PROSE = "Explain Bearer authentication and the sk-learn-pipeline-examples repo"
DOCS_KEY = "sk-proj-EXAMPLE-from-the-docs-0000000000"

@pytest.fixture
def llmvcr_config():
    return {"redact_keep": [r"sk-proj-EXAMPLE-[\\w-]+"]}

@pytest.mark.llmvcr
def test_prose():
    assert ask(PROSE) == "Echo: " + PROSE
    assert ask("explain " + DOCS_KEY) == "Echo: explain " + DOCS_KEY

@pytest.mark.llmvcr(redact=["metadata.user_id"])
def test_wrong_spelling():
    ask("never sent")
"""
    )
    before = server.request_count
    first = pytest_run(inner)
    first.assert_outcomes(passed=1, errors=1)
    first.stdout.fnmatch_lines(
        [
            "*ERROR at setup of test_wrong_spelling*",
            "ValueError: redact: 'metadata.user_id' reads like a JSON path*",
        ]
    )
    assert "write '$.metadata.user_id' for the path" in first.stdout.str()
    assert "llmvcr/options.py" not in first.stdout.str()  # the message, not llmvcr's code
    assert server.request_count == before + 2  # the refused test sent nothing
    text = (inner.path / "cassettes" / "test_prose" / "test_prose.yaml").read_text()
    assert "Bearer authentication and the sk-learn-pipeline-examples repo" in text
    assert (
        "sk-proj-EXAMPLE-from-the-docs-0000000000" in text and "REDACTED" not in text.split("request_hash")[0]
    )
    assert not (inner.path / "cassettes" / "test_prose" / "test_wrong_spelling.yaml").exists()
    pytest_run(inner, "-k", "not wrong", CI="true").assert_outcomes(passed=1, deselected=1)


@pytest.mark.slow
def test_re_recording_an_unchanged_stream_changes_no_line_of_the_cassette(inner: pytest.Pytester) -> None:
    inner.makepyfile(
        test_stream=HEADER
        + STREAM
        + """
@pytest.mark.llmvcr
def test_stream():
    assert ask_stream("one two three four five six seven eight") == "Echo: one two three four five six seven eight"
"""
    )
    pytest_run(inner).assert_outcomes(passed=1)
    cassette = inner.path / "cassettes" / "test_stream" / "test_stream.yaml"
    before = cassette.read_text()
    pytest_run(inner, "--llmvcr-record-mode=all").assert_outcomes(passed=1)
    changed = changed_lines(before, cassette.read_text())
    # unchanged events keep the offsets they were recorded with: a PR diff shows only the new
    # recording date (recorded_with.at, what max_age counts from)
    assert [line[1:8] for line in changed] == ["  at: '", "  at: '"], changed
    assert "timing: [" in before  # the offsets are kept for replay_speed
    pytest_run(inner, "--llmvcr-record-mode=none").assert_outcomes(passed=1)


@pytest.mark.slow
def test_the_summary_under_xdist_names_the_cassettes_to_prune_and_prune_reads_the_run(
    inner: pytest.Pytester,
) -> None:
    inner.makepyfile(
        test_par=HEADER
        + """
@pytest.mark.parametrize("word", ["a", "b", "c"])
@pytest.mark.llmvcr
def test_word(word):
    ask(word)
    if word == "a" and not os.environ.get("SHORT"):
        ask("and more")
"""
    )
    pytest_run(inner, "-n", "2").assert_outcomes(passed=3)
    result = pytest_run(inner, "-n", "2", SHORT="1", CI="true")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "llmvcr: 3 LLM calls replayed, 0 recorded, 0 cassettes written, 1 unplayed entry;*",
            "  1 cassette with entries no test used (drop them with: llmvcr prune PATH...):",
            "    *cassettes/test_par/test_word[[]a[]].yaml: 1 entry (#1)",  # the ids on_unplayed names
        ]
    )
    status, out, err = llmvcr_cli(inner, "prune", "cassettes")  # a folder; the run's plays: pytest's cache
    assert status == 0, err
    assert "cassettes/test_par/test_word[a].yaml: kept 1 of 2 entries, dropped 1 " in out
    assert "cassettes/test_par/test_word[b].yaml: kept 1 of 1 entry, dropped 0 " in out
    pytest_run(inner, SHORT="1", CI="true").stdout.fnmatch_lines(["*0 unplayed entries*"])


@pytest.mark.slow
def test_the_command_finds_the_tests_cassettes_and_reads_them_right(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    tests = inner.mkpydir("tests")
    (tests / "test_both.py").write_text(
        HEADER
        + STREAM
        + """
@pytest.mark.llmvcr
def test_openai():
    ask_openai("naïve ☃ 你好")

@pytest.mark.llmvcr
def test_anthropic():
    ask("hello")
""",
        encoding="utf-8",
    )
    pytest_run(inner).assert_outcomes(passed=2)
    status, out, err = llmvcr_cli(inner, "ls")  # from the project's root, as the plugin named them
    assert status == 0, err
    rows = [line.split() for line in out.splitlines()[1:]]
    assert [row[:3] for row in rows] == [
        ["tests/cassettes/test_both/test_anthropic.yaml", "1", "anthropic"],
        ["tests/cassettes/test_both/test_openai.yaml", "1", "openai"],
    ]
    status, out, err = llmvcr_cli(inner, "show", "test_both/test_openai", encoding="cp1252")  # Windows
    assert status == 0, err
    assert "test_openai.yaml: 1 entry" in out and "user: na\xefve ? ??" in out
    assert "(stop;" in out and "end_turn" not in out  # OpenAI's word for it
    status, out, _ = llmvcr_cli(inner, "scan", "tests")
    assert status == 0, out  # the keys the tests sent were redacted
