"""The ``llmvcr`` command line, run through ``llmvcr.cli.main(argv)`` (and once as ``python -m llmvcr``)."""

from __future__ import annotations

import copy
import fnmatch
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anthropic
import pytest
import vcr
import yaml

import llmvcr
from llmvcr.cli import main
from llmvcr.freshness.playlog import PlayLog, merge_unplayed, read_record

TOOL = {
    "name": "get_weather",
    "description": "Weather for a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
COMMANDS = ["ls", "show", "diff", "convert", "scan", "prune"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def agent(anthropic_client: Any, openai_client: Any, cassette_dir: Path) -> Path:
    """A cassette with a tool loop, a streamed call and an OpenAI call."""
    with llmvcr.recording("agent"):
        messages: list[dict[str, Any]] = [{"role": "user", "content": "What is the weather in Paris?"}]
        first = anthropic_client.messages.create(
            model="claude-test", max_tokens=64, system="Be brief.", messages=messages, tools=[TOOL]
        )
        messages += [
            {"role": "assistant", "content": [b.model_dump() for b in first.content]},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": first.content[1].id, "content": "18C, sunny"}
                ],
            },
        ]
        anthropic_client.messages.create(
            model="claude-test", max_tokens=64, system="Be brief.", messages=messages, tools=[TOOL]
        )
        with anthropic_client.messages.stream(
            model="claude-test", max_tokens=64, messages=[{"role": "user", "content": "tell me a story"}]
        ) as stream:
            stream.until_done()
        openai_client.chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "hi openai"}]
        )
    return cassette_dir / "agent.yaml"


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_help(capsys: pytest.CaptureFixture[str], command: str | None) -> None:
    with pytest.raises(SystemExit) as info:
        main([command, "--help"] if command else ["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: llmvcr") and (command is None or command in out)
    if command is None:
        assert all(c in out for c in COMMANDS)


def test_python_dash_m_llmvcr() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "llmvcr", "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0 and "usage: llmvcr" in done.stdout and "convert" in done.stdout
    done = subprocess.run(
        [sys.executable, "-m", "llmvcr", "show", "/nonexistent/x.yaml"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("llmvcr: error: ")


def test_ls(capsys: pytest.CaptureFixture[str], agent: Path, cassette_dir: Path) -> None:
    (cassette_dir / "notes.yaml").write_text("just: notes\n")
    status, out, err = run(capsys, "ls", str(cassette_dir))
    assert status == 0
    header, row = out.splitlines()
    assert header.split() == ["cassette", "entries", "providers", "models", "size"]
    assert row.split()[:4] == ["agent.yaml", "4", "anthropic,", "openai"] and "claude-test, gpt-test" in row
    assert row.endswith("KB")
    assert "skipped" in err and "notes.yaml" in err and "version" in err
    assert run(capsys, "ls", str(cassette_dir / "missing"))[0] == 2


def test_show(capsys: pytest.CaptureFixture[str], agent: Path) -> None:
    status, out, _ = run(capsys, "show", str(agent))
    assert status == 0
    assert "[0] anthropic POST /v1/messages · claude-test · 200" in out
    assert "    system: Be brief." in out and "    user: What is the weather in Paris?" in out
    assert '  → assistant calls get_weather {"city": "Paris"}' in out
    assert "    tool result [toolu_" in out and "]: 18C, sunny" in out
    assert "  → assistant: The tool said: 18C, sunny" in out
    assert out.count("user: What is the weather in Paris?") == 1  # the second call shows only what it adds
    assert "· 200, streamed" in out and "  → assistant: Echo: tell me a story" in out  # the stream, collapsed
    assert "[3] openai POST /v1/chat/completions · gpt-test" in out and "→ assistant: Echo: hi openai" in out


def test_show_reads_other_formats(capsys: pytest.CaptureFixture[str], agent: Path, tmp_path: Path) -> None:
    with pytest.warns(llmvcr.convert.ConversionWarning):
        trace = llmvcr.to_regista_trace(agent, tmp_path / "t.jsonl")
    status, out, _ = run(capsys, "show", trace)
    assert status == 0 and "calls get_weather" in out


def test_diff(capsys: pytest.CaptureFixture[str], agent: Path, tmp_path: Path) -> None:
    assert run(capsys, "diff", str(agent), str(agent))[0] == 0
    document = yaml.safe_load(agent.read_text())
    document["entries"][0]["request"]["body"]["system"] = "Be verbose."
    document["entries"].append(copy.deepcopy(document["entries"][-1]))  # safe_dump would alias the same one
    other = tmp_path / "other.yaml"
    other.write_text(yaml.safe_dump(document))
    status, out, _ = run(capsys, "diff", str(agent), str(other))
    assert status == 1
    assert "[0] differs at 1 path(s):" in out
    assert "[0].request.body.system: A 'Be brief.' != B 'Be verbose.'" in out
    assert "[1] same" in out and "[4] only in B: openai POST /v1/chat/completions" in out


def test_convert_every_way(capsys: pytest.CaptureFixture[str], agent: Path, tmp_path: Path) -> None:
    status, out, err = run(capsys, "convert", str(agent), "--to", "regista", "-o", str(tmp_path / "t.jsonl"))
    assert (
        status == 0 and "wrote" in out and "llmvcr: warning:" in err and "not one regista conversation" in err
    )
    assert run(capsys, "convert", str(agent), "--to", "agentskit", "-o", str(tmp_path / "a.json"))[0] == 0
    assert json.loads((tmp_path / "a.json").read_text())["version"] == 1
    for src, fmt in ((tmp_path / "t.jsonl", "regista"), (tmp_path / "a.json", "agentskit")):
        out_path = tmp_path / f"from-{fmt}.json"
        status, out, _ = run(capsys, "convert", str(src), "--to", "llmvcr-json", "-o", str(out_path))
        assert status == 0 and len(llmvcr.load_cassette(out_path)) == 4
    status, _, _ = run(
        capsys,
        "convert",
        str(tmp_path / "a.json"),
        "--from",
        "agentskit",
        "--to",
        "llmvcr-yaml",
        "-o",
        str(tmp_path / "back.yaml"),
    )
    assert status == 0 and len(llmvcr.load_cassette(tmp_path / "back.yaml")) == 4
    status, _, err = run(capsys, "convert", str(agent), "--to", "llmvcr-yaml", "-o", str(tmp_path / "x.json"))
    assert status == 2 and err.count("\n") == 1 and "needs a .yaml or .yml path" in err


def test_convert_from_vcrpy(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, anthropic_client: Any
) -> None:
    source = tmp_path / "vcr.yaml"
    with vcr.VCR().use_cassette(str(source)):
        anthropic_client.messages.create(
            model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
        )
    assert run(capsys, "scan", str(source))[0] == 1  # vcrpy wrote the key
    status, out, _ = run(
        capsys, "convert", str(source), "--to", "llmvcr-yaml", "-o", str(tmp_path / "c.yaml")
    )
    assert status == 0 and "(llmvcr-yaml, 1 entry from" in out
    assert run(capsys, "scan", str(tmp_path / "c.yaml"))[0] == 0  # ...the import did not


def test_scan(capsys: pytest.CaptureFixture[str], agent: Path, tmp_path: Path) -> None:
    status, out, _ = run(capsys, "scan", str(agent.parent))
    assert status == 0 and "no secrets found in 1 file" in out
    leaky = tmp_path / "leaky"
    leaky.mkdir()
    (leaky / "trace.jsonl").write_text('{"a": 1}\n{"note": "key sk-ant-api03-abcdefghijklmnopqrstuvwxyz"}\n')
    (leaky / "c.yaml").write_text("headers:\n  x-api-key: something-secret\n")
    (leaky / "broken.json").write_text('{"token": "Bearer abcdefghijklmnop"')  # not JSON: the text is scanned
    status, out, err = run(capsys, "scan", str(leaky), str(agent))
    assert status == 1
    assert f"{leaky / 'trace.jsonl'}:2: note: anthropic-key" in out
    assert f"{leaky / 'c.yaml'}: headers.x-api-key: credential-header" in out
    assert f"{leaky / 'broken.json'}: (text): bearer" in out
    assert "possible secrets in 3 of 4 files" in err  # the files with a hit, of those scanned
    assert run(capsys, "scan", str(tmp_path / "nope"))[0] == 2


@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
def test_prune_goes_by_what_the_last_run_played(
    capsys: pytest.CaptureFixture[str], anthropic_client: Any, cassette_dir: Path
) -> None:
    def ask(text: str) -> None:
        anthropic_client.messages.create(
            model="claude-test", max_tokens=8, messages=[{"role": "user", "content": text}]
        )

    with llmvcr.recording("chat"):
        for text in ("one", "two", "three", "two"):
            ask(text)
    path = cassette_dir / "chat.yaml"
    status, _, err = run(capsys, "prune", str(path))
    assert status == 2 and err.count("\n") == 1 and "no run has recorded what it played" in err
    with PlayLog():  # what the pytest plugin does for a whole run
        with llmvcr.recording("chat", record_mode="none"):
            ask("two")
        with llmvcr.recording("chat", record_mode="none"):  # another test of the same run
            ask("three")
    log = read_record(str(path))
    assert log is not None and log.entries == 4 and sorted(log.unplayed) == [0, 3] and log.failed_tests == []
    assert not [p.name for p in cassette_dir.iterdir() if p.name != "chat.yaml"]  # nothing beside it
    status, out, _ = run(capsys, "prune", str(path), "--dry-run")
    assert status == 0 and "kept 2 of 4 entries, would drop 2" in out and len(llmvcr.load_cassette(path)) == 4
    status, out, _ = run(capsys, "prune", "chat")  # a bare name under the cassette folder
    assert status == 0 and "kept 2 of 4 entries, dropped 2" in out
    pruned = llmvcr.load_cassette(path)
    assert [e.request.body["messages"][0]["content"] for e in pruned.entries] == ["two", "three"]
    with llmvcr.recording(path, record_mode="none") as again:  # what the run used still replays
        ask("two")
        ask("three")
    assert again.unplayed == []
    assert "kept 2 of 2 entries, dropped 0" in run(capsys, "prune", str(path))[1]


@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
def test_prune_refuses_after_a_failure_or_a_change(
    capsys: pytest.CaptureFixture[str], anthropic_client: Any, cassette_dir: Path
) -> None:
    def ask(text: str) -> None:
        anthropic_client.messages.create(
            model="claude-test", max_tokens=8, messages=[{"role": "user", "content": text}]
        )

    with llmvcr.recording("chat"):
        ask("one")
        ask("two")
    path = cassette_dir / "chat.yaml"
    with pytest.raises(RuntimeError), PlayLog(), llmvcr.recording(path, record_mode="none"):
        ask("one")
        raise RuntimeError("the run stopped before asking 'two'")
    status, _, err = run(capsys, "prune", str(path))
    assert (
        status == 2
        and "failed" in err
        and "make the tests pass" in err
        and len(llmvcr.load_cassette(path)) == 2
    )
    with PlayLog(), llmvcr.recording(path, record_mode="none"):
        ask("one")
    with llmvcr.recording(path, record_mode="new_episodes"):  # the file grows after the run
        ask("three")
    status, _, err = run(capsys, "prune", str(path))
    assert status == 2 and "changed since the last run" in err and "2 entries then, 3 now" in err
    assert len(llmvcr.load_cassette(path)) == 3


PRUNE_TESTS = """
import os, anthropic, pytest

def ask(text):
    client = anthropic.Anthropic(api_key="test", base_url=os.environ["LLM_URL"], max_retries=0)
    return client.messages.create(model="claude-test", max_tokens=8, messages=[{"role": "user", "content": text}])

@pytest.mark.llmvcr("shared")
def test_a():
    ask("a")
    if os.environ.get("EXTRA"):
        ask("c")

@pytest.mark.llmvcr("shared")
def test_b():
    ask("b")
    assert not os.environ.get("FAIL_B")
"""


@pytest.mark.slow
def test_the_pytest_plugin_records_plays_for_prune(
    pytester: pytest.Pytester,
    server: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("LLM_URL", server.url)
    monkeypatch.delenv("CI", raising=False)
    pytester.makepyfile(test_chat=PRUNE_TESTS)

    def pytest_run(*args: str) -> pytest.RunResult:
        return pytester.runpytest_subprocess(
            "-p", "no:cacheprovider", "-p", "no:recording", *args, timeout=120
        )

    monkeypatch.setenv("EXTRA", "1")
    pytest_run("--llmvcr-record-mode=new_episodes").assert_outcomes(passed=2)  # records a, c, b
    monkeypatch.delenv("EXTRA")
    cassette = pytester.path / "cassettes" / "shared.yaml"
    assert len(llmvcr.load_cassette(cassette)) == 3
    monkeypatch.setenv("FAIL_B", "1")
    pytest_run("--llmvcr-record-mode=none").assert_outcomes(passed=1, failed=1)
    status, _, err = run(capsys, "prune", str(cassette))
    assert status == 2 and "test_chat.py::test_b failed" in err
    monkeypatch.delenv("FAIL_B")
    pytest_run("--llmvcr-record-mode=none", "-n", "2").assert_outcomes(passed=2)  # two workers, one record
    log = read_record(str(cassette))
    assert log is not None and log.entries == 3 and sorted(log.unplayed) == [1] and log.failed_tests == []
    status, out, _ = run(capsys, "prune", str(cassette))
    assert status == 0 and "kept 2 of 3 entries, dropped 1" in out
    assert [e.request.body["messages"][0]["content"] for e in llmvcr.load_cassette(cassette).entries] == [
        "a",
        "b",
    ]
    with llmvcr.recording(cassette, record_mode="none") as kept:  # what the run used still replays
        for text in ("a", "b"):
            anthropic.Anthropic(api_key="test", base_url=server.url).messages.create(
                model="claude-test", max_tokens=8, messages=[{"role": "user", "content": text}]
            )
    assert kept.unplayed == []


def test_plays_of_one_run_merge() -> None:
    # an entry stays unplayed only while every session that saw it left it unplayed
    assert merge_unplayed((3, {1: "c", 2: "b"}), (3, {0: "a", 1: "c"})) == (3, {1: "c"})
    assert merge_unplayed((2, {1: "x"}), (3, {2: "y"})) == (
        3,
        {2: "y"},
    )  # the second session saw a longer file
    assert merge_unplayed((3, {1: "x"}), (3, {1: "other"})) == (3, {})  # not the same entry: keep it


def one_line_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    try:
        status = main(list(argv))
    except SystemExit as exit:  # argparse
        status = int(exit.code or 0)
    out, err = capsys.readouterr()
    assert status == 2, argv
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err, (argv, err)
    return err


def test_errors_are_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, agent: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("version: 1\nentries: [\n")
    for argv in (
        ["show", str(broken)],
        ["diff", str(broken), str(broken)],
        ["convert", str(broken), "--to", "regista", "-o", str(tmp_path / "t.jsonl")],
    ):
        err = one_line_error(capsys, *argv)
        assert err.startswith(f"llmvcr: error: {broken}: not valid YAML at line 3") and "restore it" in err
    assert "no run has recorded what it played" in one_line_error(capsys, "prune", str(broken))
    assert "no command given; see 'llmvcr --help'" in one_line_error(capsys)
    assert "invalid choice: 'bogus'" in one_line_error(capsys, "bogus")
    err = one_line_error(capsys, "convert", str(agent), "--to", "xml", "-o", "x")
    assert (
        err.startswith("llmvcr convert: error: argument --to: invalid choice: 'xml'")
        and "see 'llmvcr convert --help'" in err
    )
    assert "required: -o/--output" in one_line_error(capsys, "convert", str(agent), "--to", "regista")
    assert "required: B" in one_line_error(capsys, "diff", str(agent))
    # missing files, folders and wrong formats say what to do
    err = one_line_error(capsys, "show", "nope")
    assert (
        f"nope: no such file (nor {agent.parent / 'nope.yaml'}), nor in a 'cassettes' folder below here"
        in err
    )  # the cassette folder
    assert "is a folder; name a cassette file in it" in one_line_error(capsys, "show", str(tmp_path))
    assert "is a file; llmvcr ls lists a folder" in one_line_error(capsys, "ls", str(agent))
    assert "no such folder" in one_line_error(capsys, "ls", str(tmp_path / "none"))
    assert "no such file or folder" in one_line_error(capsys, "scan", str(tmp_path / "none"))
    err = one_line_error(capsys, "convert", str(agent), "--from", "vcrpy", "--to", "regista", "-o", "t.jsonl")
    assert "not a vcrpy cassette; is it really a vcrpy file? leave out --from to detect the format" in err
    notes = tmp_path / "notes.json"
    notes.write_text('{"title": "not a cassette"}')
    assert "llmvcr reads llmvcr cassettes, vcrpy" in one_line_error(capsys, "show", str(notes))
    # a file in the working folder is read as given, whatever its extension
    with pytest.warns(llmvcr.convert.ConversionWarning):
        llmvcr.to_regista_trace(agent, tmp_path / "trace.jsonl")
    monkeypatch.chdir(tmp_path)
    status, out, _ = run(capsys, "show", "trace.jsonl")
    assert status == 0 and out.startswith("trace.jsonl: 4 entries")


@pytest.mark.slow
def test_a_closed_pipe_is_not_an_error(agent: Path, tmp_path: Path) -> None:
    recorded = llmvcr.load_cassette(agent)
    big = llmvcr.Cassette()
    for i in range(600):  # far more output than a pipe buffers
        big.append(recorded.entry(i % 2))
    llmvcr.save_cassette(tmp_path / "big.yaml", big)
    reader = subprocess.Popen(
        [sys.executable, "-m", "llmvcr", "show", str(tmp_path / "big.yaml")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert reader.stdout is not None and reader.stderr is not None
    assert reader.stdout.readline().endswith("big.yaml: 600 entries\n")
    reader.stdout.close()  # like `| head -1`
    assert reader.wait(timeout=60) == 141 and reader.stderr.read() == ""


MIGRATE_TESTS = """
import os, anthropic, openai, pytest

@pytest.mark.{marker}
def test_chat():
    a = anthropic.Anthropic(api_key="sk-ant-api03-inner-key-0000000000000000", base_url=os.environ["LLM_URL"])
    o = openai.OpenAI(api_key="sk-proj-inner-key-00000000000000000000", base_url=os.environ["LLM_URL"] + "/v1")
    assert a.messages.create(model="claude-test", max_tokens=8,
                             messages=[{{"role": "user", "content": "hi"}}]).content[0].text == "Echo: hi"
    with a.messages.stream(model="claude-test", max_tokens=8, messages=[{{"role": "user", "content": "yo"}}]) as s:
        assert s.get_final_text() == "Echo: yo"
    chunks = o.chat.completions.create(model="gpt-test", messages=[{{"role": "user", "content": "hey"}}], stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Echo: hey"
"""


@pytest.mark.slow
def test_a_pytest_recording_suite_migrates_in_one_command(
    pytester: pytest.Pytester,
    server: Any,
    agent: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("LLM_URL", server.url)
    monkeypatch.delenv("CI", raising=False)
    test_file = pytester.makepyfile(test_chat=MIGRATE_TESTS.format(marker="vcr"))
    recorded = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--record-mode=once", timeout=120)
    recorded.assert_outcomes(passed=1)  # pytest-recording wrote cassettes/test_chat/test_chat.yaml
    folder = pytester.path / "cassettes"
    source = folder / "test_chat" / "test_chat.yaml"
    assert "interactions" in yaml.safe_load(source.read_text())
    mixed = folder / "test_other" / "test_mixed.yaml"  # a cassette that also holds a non-LLM call
    document = yaml.safe_load(source.read_text())
    document["interactions"].append(
        {
            "request": {"method": "GET", "uri": "https://example.com/health", "body": None, "headers": {}},
            "response": {"status": {"code": 200, "message": "OK"}, "headers": {}, "body": {"string": "ok"}},
        }
    )
    mixed.parent.mkdir()
    mixed.write_text(yaml.safe_dump(document))
    mixed_before = mixed.read_bytes()
    (folder / "already.yaml").write_bytes(agent.read_bytes())

    status, out, err = run(capsys, "convert", str(folder), "--to", "llmvcr-yaml", "-o", str(folder))
    assert status == 0
    assert out.count(str(source)) == 2  # its table row: the file and what it became, once
    assert f"wrote {source}" in [line.split("  ")[-1] for line in out.splitlines()]
    assert "converted 2 file(s)" in out  # the mixed one too: its non-LLM call is answered from it
    assert "skipped: already llmvcr-yaml" in out and "already.yaml" not in err
    assert mixed.read_bytes() != mixed_before
    assert len(llmvcr.load_cassette(source)) == 3
    assert [e.provider for e in llmvcr.load_cassette(mixed)][-1] == "http"  # the GET, answered from it
    assert run(capsys, "scan", str(source))[0] == 0  # the keys vcrpy kept did not come along
    # the same test, now on llmvcr's marker, replays the migrated cassette with no network
    test_file.write_text(MIGRATE_TESTS.format(marker="llmvcr"))
    before = server.request_count
    replayed = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "no:recording", "--llmvcr-record-mode=none", timeout=120
    )
    replayed.assert_outcomes(passed=1)
    assert server.request_count == before
    replayed.stdout.fnmatch_lines(["llmvcr: 3 LLM calls replayed, 0 recorded*0 unplayed entries*"])


def test_convert_a_folder_to_another(capsys: pytest.CaptureFixture[str], agent: Path, tmp_path: Path) -> None:
    (agent.parent / "sub").mkdir()
    (agent.parent / "sub" / "copy.yaml").write_bytes(agent.read_bytes())
    (agent.parent / "broken.yaml").write_text("version: 1\nentries: [\n")
    status, out, err = run(
        capsys, "convert", str(agent.parent), "--to", "agentskit", "-o", str(tmp_path / "out")
    )
    assert status == 2  # one file could not be read; the others were converted
    assert "converted 2 file(s)" in out and "broken.yaml: not valid YAML" in err
    for name in ("agent.json", "sub/copy.json"):
        assert json.loads((tmp_path / "out" / name).read_text())["version"] == 1
    err = one_line_error(capsys, "convert", str(agent.parent), "--to", "regista", "-o", str(agent))
    assert "is a file; when SRC is a folder, -o names the output folder" in err


def test_convert_reads_an_otel_trace(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    trace = Path(__file__).parent.parent / "data" / "otel" / "anthropic-agent.jsonl"
    out = tmp_path / "agent.yaml"
    status, text, _ = run(capsys, "convert", str(trace), "--to", "llmvcr-yaml", "-o", str(out))
    assert status == 0 and "2 entries" in text
    explicit = tmp_path / "explicit.yaml"
    assert (
        run(capsys, "convert", str(trace), "--from", "otel", "--to", "llmvcr-yaml", "-o", str(explicit))[0]
        == 0
    )
    assert [e.request.path for e in llmvcr.load_cassette(out).entries] == ["/v1/messages"] * 2
    assert explicit.read_bytes() == out.read_bytes()


def test_show_speaks_each_apis_words_and_survives_a_narrow_console(
    capsys: pytest.CaptureFixture[str], openai_client: Any, cassette_dir: Path
) -> None:
    import os
    import subprocess
    import sys

    with llmvcr.recording("narrow"):
        openai_client.chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "naïve ☃ 你好"}]
        )
    status, out, _ = run(capsys, "show", str(cassette_dir / "narrow.yaml"))
    assert status == 0 and "(stop;" in out and "end_turn" not in out
    narrow = subprocess.run(
        [sys.executable, "-m", "llmvcr", "show", str(cassette_dir / "narrow.yaml")],
        env={**os.environ, "PYTHONIOENCODING": "cp1252"},
        capture_output=True,
        timeout=60,
    )
    assert narrow.returncode == 0, narrow.stderr
    assert "na\xefve ? ??".encode("cp1252") in narrow.stdout


@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
def test_prune_takes_several_files_and_folders(
    capsys: pytest.CaptureFixture[str], anthropic_client: Any, cassette_dir: Path
) -> None:
    def ask(text: str) -> None:
        anthropic_client.messages.create(
            model="claude-test", max_tokens=8, messages=[{"role": "user", "content": text}]
        )

    for name in ("a", "b", "never"):
        with llmvcr.recording(name):
            ask("one")
            ask("two")
    with PlayLog():
        for name in ("a", "b"):
            with llmvcr.recording(name, record_mode="none"):
                ask("two")
    status, out, _ = run(capsys, "prune", str(cassette_dir))
    assert status == 0
    assert "a.yaml: kept 1 of 2 entries, dropped 1" in out and "b.yaml: kept 1 of 2 entries, dropped 1" in out
    assert "never.yaml: skipped (no run has recorded what it played)" in out
    assert len(llmvcr.load_cassette(cassette_dir / "never.yaml")) == 2
    status, _, err = run(capsys, "prune", str(cassette_dir / "never.yaml"), str(cassette_dir / "a.yaml"))
    assert status == 2 and "never.yaml: no run has recorded what it played" in err


def test_a_bare_name_is_found_in_the_cassettes_folders_beside_the_tests(
    capsys: pytest.CaptureFixture[str], anthropic_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    cassette = project / "tests" / "cassettes" / "test_chat" / "test_one.yaml"
    with llmvcr.recording(cassette):
        anthropic_client.messages.create(
            model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "beside"}]
        )
    monkeypatch.chdir(project)
    status, out, _ = run(capsys, "show", "test_chat/test_one")
    assert status == 0 and "beside" in out
    status, _, err = run(capsys, "show", "test_chat/test_two")
    assert status == 2 and "nor in a 'cassettes' folder below here" in err


@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_rehash_stores_the_hash_of_a_request_edited_by_hand(
    capsys: pytest.CaptureFixture[str], anthropic_client: Any, cassette_dir: Path, suffix: str
) -> None:
    import re
    import warnings

    from llmvcr.errors import EditedCassetteWarning

    def ask(text: str) -> None:
        anthropic_client.messages.create(
            model="claude-test", max_tokens=8, messages=[{"role": "user", "content": text}]
        )

    path = cassette_dir / f"edited{suffix}"
    with llmvcr.recording(path):
        ask("same")
        ask("before")
        ask("same again")
    path.write_text(path.read_text().replace("before", "after"))
    with pytest.warns(EditedCassetteWarning, match=re.escape(f"llmvcr rehash {path}")):
        with llmvcr.recording(path, record_mode="none"):
            ask("after")
    status, out, _ = run(capsys, "rehash", str(path))
    assert status == 0 and out.strip().endswith(
        "3 entries, counted in its header; request_hash of entry 1 stored anew"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning left
        with llmvcr.recording(path, record_mode="none") as cassette:
            for text in ("same", "after", "same again"):
                ask(text)
    assert cassette.unplayed == []
    assert run(capsys, "rehash", str(path))[1].strip().endswith("3 entries, counted in its header")


def test_a_folder_convert_names_each_file_once(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    real = Path(__file__).parent.parent / "data" / "vcrpy_real" / "otel-contrib"
    source = tmp_path / "src"
    shutil.copytree(real, source)
    status, out, _ = run(capsys, "convert", str(source), "--to", "llmvcr-yaml", "-o", str(tmp_path / "out"))
    assert status == 0
    for name in os.listdir(source):
        assert out.count(name) == 2, out  # its table row: the file and what it became


def test_convert_into_a_folder_that_does_not_exist_yet(
    capsys: pytest.CaptureFixture[str], agent: Path, tmp_path: Path
) -> None:
    status, out, err = run(
        capsys, "convert", str(agent), "--to", "regista", "-o", str(tmp_path / "traces") + "/"
    )
    assert status == 0, err
    written = tmp_path / "traces" / "agent.jsonl"
    assert written.is_file() and out.startswith(f"wrote {written} (regista, ")
    assert "is a directory" not in err


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["conver", "x"], "invalid choice: 'conver'*did you mean 'convert'?"),
        (["convert", "x", "--to", "regsta", "-o", "y"], "invalid choice: 'regsta'*did you mean 'regista'?"),
        (["convert", "x", "--to", "regista", "--layot", "full", "-o", "y"], "*did you mean '--layout'?"),
        (["prune", "x", "--dry-rn"], "*did you mean '--dry-run'?"),
    ],
)
def test_a_mistyped_command_option_or_value_gets_a_did_you_mean(
    capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert fnmatch.fnmatch(err.strip(), "llmvcr*: error: *" + expected + "; see 'llmvcr*--help'"), err


@pytest.mark.slow
def test_a_mistyped_record_mode_or_option_gets_a_did_you_mean(pytester: pytest.Pytester) -> None:
    with pytest.raises(ValueError, match=r"unknown record_mode 'onse'; did you mean 'once'\?"):
        llmvcr.use_cassette("x", record_mode="onse")  # type: ignore[typeddict-item]
    with pytest.raises(ValueError, match=r"unknown option\(s\) 'record_mod'; did you mean 'record_mode'\?"):
        llmvcr.use_cassette("x", record_mod="once")  # type: ignore[call-arg]
    pytester.makepyfile(test_x="def test_x(): pass")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--llmvcr-record-mode=onse", timeout=120)
    assert result.ret == 4  # a usage error
    result.stderr.fnmatch_lines(
        ["*unknown record mode 'onse'; did you mean 'once'? (valid: once, new_episodes, none, all)*"]
    )


# -- a conversion never succeeds empty -------------------------------------------------------------
def test_a_conversion_that_yields_no_entry_fails_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], anthropic_client: Any, tmp_path: Path
) -> None:
    with llmvcr.recording("fails") as cassette, pytest.raises(anthropic.RateLimitError):
        anthropic_client.messages.create(
            model="claude-test", max_tokens=32, messages=[{"role": "user", "content": "__status_429__"}]
        )
    trace = Path(llmvcr.to_regista_trace(cassette, tmp_path / "fails.jsonl"))  # a request, no answer
    with pytest.raises(llmvcr.CassetteFormatError, match=r"fails\.jsonl: 1 llm\.request event\(s\) but no"):
        llmvcr.from_regista_trace(trace)  # the API: an error, never an empty cassette
    empty = tmp_path / "empty.yaml"
    empty.write_text("interactions: []\nversion: 1\n")
    for source in (trace, empty):
        out = tmp_path / (source.stem + ".out.yaml")
        status, _, err = run(capsys, "convert", str(source), "--to", "llmvcr-yaml", "-o", str(out))
        assert status != 0 and not out.exists(), err
        assert str(source) in err
    assert "no call in this vcrpy file could be converted (0 entries" in err
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "empty.yaml").write_text(empty.read_text())
    status, out_text, _ = run(
        capsys, "convert", str(folder), "--to", "llmvcr-yaml", "-o", str(tmp_path / "o")
    )
    assert status == 2 and "FAILED: no call in this vcrpy file could be converted" in out_text


def test_ls_and_show_read_each_provider_from_its_wire_description(capsys: pytest.CaptureFixture[str]) -> None:
    """Gemini names its model in the path and its error in its own shape: ls and show say both."""
    corpus = Path(__file__).parent.parent / "data" / "vcrpy_real" / "pydantic-ai"
    status, out, _ = run(capsys, "show", str(corpus / "TestGoogle.test_embed_error.yaml"))
    assert status == 0
    assert (
        "[0] google POST /v1beta/models/nonexistent-model:batchEmbedContents · nonexistent-model · 404" in out
    )
    assert "→ error: models/nonexistent-model is not found" in out
    status, out, _ = run(capsys, "ls", str(corpus))
    row = next(line for line in out.splitlines() if line.startswith("test_google_model_stream.yaml"))
    assert row.split()[6:8] == ["google", "gemini-2.0-flash-exp"]  # after "(vcrpy, read in place) 1"
