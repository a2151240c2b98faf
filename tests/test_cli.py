"""The ``llmvcr`` command line, run through ``llmvcr.cli.main(argv)`` (and once as ``python -m llmvcr``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import vcr
import yaml

import llmvcr
from llmvcr.cli import main

TOOL = {"name": "get_weather", "description": "Weather for a city",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
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
        first = anthropic_client.messages.create(model="claude-test", max_tokens=64, system="Be brief.",
                                                 messages=messages, tools=[TOOL])
        messages += [{"role": "assistant", "content": [b.model_dump() for b in first.content]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": first.content[1].id,
                                                   "content": "18C, sunny"}]}]
        anthropic_client.messages.create(model="claude-test", max_tokens=64, system="Be brief.", messages=messages,
                                         tools=[TOOL])
        with anthropic_client.messages.stream(model="claude-test", max_tokens=64,
                                              messages=[{"role": "user", "content": "tell me a story"}]) as stream:
            stream.until_done()
        openai_client.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": "hi openai"}])
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
    done = subprocess.run([sys.executable, "-m", "llmvcr", "--help"], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and "usage: llmvcr" in done.stdout and "convert" in done.stdout
    done = subprocess.run([sys.executable, "-m", "llmvcr", "show", "/nonexistent/x.yaml"], capture_output=True,
                          text=True, timeout=60, check=False)
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
    assert "  → assistant calls get_weather {\"city\": \"Paris\"}" in out
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
    document["entries"].append(document["entries"][-1])
    other = tmp_path / "other.yaml"
    other.write_text(yaml.safe_dump(document))
    status, out, _ = run(capsys, "diff", str(agent), str(other))
    assert status == 1
    assert "[0] differs at 1 path(s):" in out
    assert "[0].request.body.system: A 'Be brief.' != B 'Be verbose.'" in out
    assert "[1] same" in out and "[4] only in B: openai POST /v1/chat/completions" in out


def test_convert_every_way(capsys: pytest.CaptureFixture[str], agent: Path, tmp_path: Path) -> None:
    status, out, err = run(capsys, "convert", str(agent), "--to", "regista", "-o", str(tmp_path / "t.jsonl"))
    assert status == 0 and "wrote" in out and "llmvcr: warning:" in err and "not one regista conversation" in err
    assert run(capsys, "convert", str(agent), "--to", "agentskit", "-o", str(tmp_path / "a.json"))[0] == 0
    assert json.loads((tmp_path / "a.json").read_text())["version"] == 1
    for src, fmt in ((tmp_path / "t.jsonl", "regista"), (tmp_path / "a.json", "agentskit")):
        out_path = tmp_path / f"from-{fmt}.json"
        status, out, _ = run(capsys, "convert", str(src), "--to", "llmvcr-json", "-o", str(out_path))
        assert status == 0 and len(llmvcr.load_cassette(out_path)) == 4
    status, _, _ = run(capsys, "convert", str(tmp_path / "a.json"), "--from", "agentskit", "--to", "llmvcr-yaml",
                       "-o", str(tmp_path / "back.yaml"))
    assert status == 0 and len(llmvcr.load_cassette(tmp_path / "back.yaml")) == 4
    status, _, err = run(capsys, "convert", str(agent), "--to", "llmvcr-yaml", "-o", str(tmp_path / "x.json"))
    assert status == 2 and err.count("\n") == 1 and "needs a .yaml or .yml path" in err


def test_convert_from_vcrpy(capsys: pytest.CaptureFixture[str], tmp_path: Path, anthropic_client: Any) -> None:
    source = tmp_path / "vcr.yaml"
    with vcr.VCR().use_cassette(str(source)):
        anthropic_client.messages.create(model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    assert run(capsys, "scan", str(source))[0] == 1  # vcrpy wrote the key
    status, out, _ = run(capsys, "convert", str(source), "--to", "llmvcr-yaml", "-o", str(tmp_path / "c.yaml"))
    assert status == 0 and "1 entries" in out
    assert run(capsys, "scan", str(tmp_path / "c.yaml"))[0] == 0  # ...the import did not


def test_scan(capsys: pytest.CaptureFixture[str], agent: Path, tmp_path: Path) -> None:
    status, out, _ = run(capsys, "scan", str(agent.parent))
    assert status == 0 and "no secrets found in 1 file(s)" in out
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
    assert "possible secret(s) in 4 file(s)" in err
    assert run(capsys, "scan", str(tmp_path / "nope"))[0] == 2


def test_prune(capsys: pytest.CaptureFixture[str], agent: Path) -> None:
    status, _, err = run(capsys, "prune", str(agent))
    assert status == 1 and "no metadata.last_run.played" in err
    document = yaml.safe_load(agent.read_text())
    document["metadata"] = {"last_run": {"played": [0, 3]}}
    agent.write_text(yaml.safe_dump(document, sort_keys=False))
    status, out, _ = run(capsys, "prune", str(agent), "--dry-run")
    assert status == 0 and "would drop 2" in out and len(llmvcr.load_cassette(agent)) == 4
    status, out, _ = run(capsys, "prune", "agent")  # a bare name under the cassette folder
    assert status == 0 and "kept 2 of 4 entries, dropped 2" in out
    pruned = llmvcr.load_cassette(agent)
    assert [e.request.path for e in pruned.entries] == ["/v1/messages", "/v1/chat/completions"]
    assert pruned.metadata["last_run"]["played"] == [0, 1]


def test_errors_are_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("version: 1\nentries: [\n")
    for argv in (["show", str(broken)], ["diff", str(broken), str(broken)], ["show", str(tmp_path / "none.yaml")],
                 ["prune", str(broken)], ["convert", str(broken), "--to", "regista", "-o", str(tmp_path / "t.jsonl")]):
        status, _, err = run(capsys, *argv)
        assert status == 2, argv
        assert err.count("\n") == 1 and err.startswith("llmvcr: error: ") and "Traceback" not in err, argv
