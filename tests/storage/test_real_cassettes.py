"""Cassettes recorded against the real Anthropic and OpenAI APIs by other projects (vcrpy,
pytest-recording, pydantic-ai's serializer, cassetter, LangChain's gzip format) replay through
today's SDKs offline, converted or read in place, equal to what the API answered."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import vcr
from real_corpus import CORPUS, FILES, calls, clients, expected, issue

import llmvcr
from llmvcr.cli import main
from llmvcr.cli.reading import load_any
from llmvcr.convert.vcrpy import read_document
from llmvcr.errors import ForeignCassetteError, ReplayDivergence
from llmvcr.redaction import find_secrets


def replay(path: Path, source: Path) -> list[tuple[str, bool, Any, Any]]:
    """Every recorded call of ``source`` made again inside ``use_cassette(path)``, replay only."""
    a, o = clients()
    rows = []
    with llmvcr.use_cassette(path, record_mode="none"):
        for call in calls(source):
            got, want = issue(call, a, o), expected(call)
            rows.append((call.name, got == want, got, want))
    return rows


def converted(source: Path, tmp_path: Path) -> Path:
    target = tmp_path / "converted" / (source.name.removesuffix(".gz").removesuffix(".yaml") + ".yaml")
    target.parent.mkdir(parents=True, exist_ok=True)
    llmvcr.save_cassette(target, load_any(str(source)))
    return target


def in_place(source: Path, tmp_path: Path) -> Path:
    target = tmp_path / "in_place" / source.name
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    return target


def replay_file(source: Path, how: str, tmp_path: Path) -> list[tuple[str, bool, Any, Any]]:
    try:
        target = converted(source, tmp_path) if how == "converted" else in_place(source, tmp_path)
        return replay(target, source)
    except Exception as err:  # counted as unequal calls and named by the test, never hidden
        return [(c.name, False, f"{type(err).__name__}: {err}", None) for c in calls(source)]


def test_the_corpus_is_real_and_covers_every_call_shape() -> None:
    projects = {p.relative_to(CORPUS).parts[0] for p in FILES}
    assert len(projects) >= 4, projects
    every = [c for f in FILES for c in calls(f)]
    assert any(c.body.get("stream") for c in every) and any(c.status >= 400 for c in every)
    assert any("tools" in c.body for c in every) and any(c.path.endswith("/embeddings") for c in every)
    assert {c.host for c in every} == {
        "api.anthropic.com",
        "api.openai.com",
        "generativelanguage.googleapis.com",
    }
    gemini = {c.path.rsplit(":", 1)[-1] for c in every if c.host.startswith("generativelanguage")}
    assert {"generateContent", "streamGenerateContent", "batchEmbedContents"} <= gemini
    assert any(c.query.get("alt") == "sse" for c in every) and any(
        c.path.endswith(":streamGenerateContent") and "alt" not in c.query for c in every
    )


@pytest.mark.parametrize("how", ["converted", "in_place"])
@pytest.mark.slow
def test_every_real_call_replays_equal(how: str, tmp_path: Path, no_network: list[Any]) -> None:
    rows = [row for source in FILES for row in replay_file(source, how, tmp_path)]
    equal = sum(1 for row in rows if row[1])
    print(f"\n{how}: {equal} of {len(rows)} calls equal")
    unequal = [f"{name}: {str(got)[:300]}" for name, ok, got, _ in rows if not ok]
    assert no_network == []
    assert not unequal, f"{how}: {equal} of {len(rows)} calls equal; unequal:\n" + "\n".join(unequal)


USER = [{"role": "user", "content": "hello there"}]


def test_new_episodes_on_a_vcrpy_cassette_keeps_its_interactions(
    tmp_path: Path, anthropic_client: Any, server: Any
) -> None:
    source = tmp_path / "test_chat.yaml"
    with vcr.VCR().use_cassette(str(source), record_mode="all"):
        live = anthropic_client.messages.create(model="claude-test", max_tokens=64, messages=USER).to_dict()
    before = source.read_bytes()
    sent = len(server.requests)
    with pytest.raises(ReplayDivergence, match=r"(?s)a vcrpy cassette.*llmvcr convert .*test_chat\.yaml"):
        with llmvcr.use_cassette(source, record_mode="new_episodes") as cassette:
            again = anthropic_client.messages.create(model="claude-test", max_tokens=64, messages=USER)
            assert again.to_dict() == live and len(cassette) == 1  # read in place, served
            anthropic_client.messages.create(
                model="claude-test", max_tokens=64, messages=[{"role": "user", "content": "a new call"}]
            )  # could not be kept: refused before it goes out, and the file is not written over
    assert source.read_bytes() == before
    assert len(server.requests) == sent  # neither call reached the network


@pytest.mark.parametrize("source", [f for f in FILES if f.suffix == ".yaml"][:3], ids=lambda p: p.name)
def test_no_write_reaches_a_foreign_cassette(source: Path, tmp_path: Path) -> None:
    target = in_place(source, tmp_path)
    before = target.read_bytes()
    with (
        pytest.raises(ForeignCassetteError, match="llmvcr convert"),
        llmvcr.use_cassette(target, record_mode="all"),
    ):
        pass
    with pytest.raises(ForeignCassetteError, match="llmvcr convert"):
        llmvcr.save_cassette(target, llmvcr.load_cassette(target))  # prune and save go through here
    assert target.read_bytes() == before


@pytest.mark.slow
def test_the_pytest_marker_reads_a_vcrpy_cassette_in_place(
    pytester: pytest.Pytester, monkeypatch: Any, server: Any
) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("LLM_URL", server.url)
    folder = pytester.path / "cassettes" / "test_chat"
    folder.mkdir(parents=True)
    shutil.copyfile(
        CORPUS / "openllmetry" / "test_anthropic_message_create_legacy.yaml", folder / "test_joke.yaml"
    )
    pytester.makepyfile(
        test_chat="""
import anthropic, pytest

@pytest.mark.llmvcr
def test_joke():
    client = anthropic.Anthropic(api_key="sk-ant-placeholder", max_retries=0)
    message = client.messages.create(model="claude-3-opus-20240229", max_tokens=1024,
        messages=[{"role": "user", "content": "Tell me a joke about OpenTelemetry"}])
    assert message.content[0].text.startswith("Sure, here's a joke about OpenTelemetry")
"""
    )
    before = (folder / "test_joke.yaml").read_bytes()
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:recording", timeout=120)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["llmvcr: 1 LLM call replayed, 0 recorded*"])
    assert (folder / "test_joke.yaml").read_bytes() == before
    # new_episodes: the recorded call still replays; a new one may not be written into the file
    pytester.makepyfile(
        test_chat="""
import os, anthropic, pytest

@pytest.mark.llmvcr
def test_joke():
    client = anthropic.Anthropic(api_key="sk-ant-placeholder", max_retries=0)
    message = client.messages.create(model="claude-3-opus-20240229", max_tokens=1024,
        messages=[{"role": "user", "content": "Tell me a joke about OpenTelemetry"}])
    assert message.content[0].text.startswith("Sure, here's a joke about OpenTelemetry")
    local = anthropic.Anthropic(api_key="sk-ant-placeholder", base_url=os.environ["LLM_URL"], max_retries=0)
    local.messages.create(model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "new"}])
"""
    )
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "no:recording", "--llmvcr-record-mode=new_episodes", timeout=120
    )
    result.assert_outcomes(failed=1)  # refused before the call goes out: nothing left to write
    result.stdout.fnmatch_lines(["*ReplayDivergence*", "*a vcrpy cassette*llmvcr convert*"])
    assert (folder / "test_joke.yaml").read_bytes() == before  # its interactions are kept


def test_ls_show_and_scan_name_each_format(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    folder = tmp_path / "cassettes"
    shutil.copytree(CORPUS, folder)
    assert main(["ls", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "llm/test_responses_basic_non_streaming.yaml (vcrpy, read in place)" in out
    assert "pydantic-ai/test_openai_instructions.yaml (cassetter, read in place)" in out
    assert "test_anthropic_message_create_legacy.yaml.gz (langchain-gz, read in place)" in out
    assert main(["show", str(folder / "pydantic-ai" / "test_openai_instructions.yaml")]) == 0
    assert "1 entry (a cassetter cassette, shown as llmvcr replays it)" in capsys.readouterr().out
    assert main(["scan", str(folder / "llm")]) == 1
    out = capsys.readouterr().out
    assert "(vcrpy cassette): interactions[0].response.headers.set-cookie[1]: credential-header" in out


def test_a_folder_conversion_prints_a_table_and_fails_loudly(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    folder = tmp_path / "cassettes"
    shutil.copytree(CORPUS, folder)
    (folder / "broken.yaml").write_text("interactions:\n- request: {}\n  response: []\n")
    (folder / "other.yaml").write_text(
        "interactions:\n- request: {method: GET, uri: 'https://example.com/', body: null, headers: {}}\n"
        "  response: {status: {code: 200, message: OK}, headers: {}, body: {string: ok}}\n"
    )
    status = main(["convert", str(folder), "--to", "llmvcr-json", "-o", str(tmp_path / "out")])
    out = capsys.readouterr().out
    assert status == 2
    table = out[out.index("file ") :].splitlines()
    assert table[0].split() == ["file", "format", "entries", "result"]
    rows = {line.split()[0]: line for line in table[1:-1]}
    assert len(rows) == len(FILES) + 2
    assert (
        "FAILED: entry 0: an interaction needs a request and a response" in rows[str(folder / "broken.yaml")]
    )
    assert (
        "kept: none of its 1 interaction(s) is an LLM call (to example.com), left to vcrpy"
        in rows[str(folder / "other.yaml")]
    )
    gemini = rows[str(folder / "llm-gemini" / "test_prompt.yaml")]
    assert "wrote" in gemini and "kept" not in gemini  # Gemini is converted, never "no LLM calls"
    gz = str(folder / "langchain-layout" / "test_anthropic_message_create_legacy.yaml.gz")
    assert "langchain-gz" in rows[gz] and "wrote" in rows[gz]
    assert table[-1].endswith("; 1 failed (see above; fix or convert them one by one)")
    converted = tmp_path / "out" / "langchain-layout" / "test_anthropic_message_create_legacy.json"
    assert len(llmvcr.load_cassette(converted)) == 1
    # llmvcr YAML to llmvcr JSON is a conversion, not "already llmvcr-json"
    assert main(["convert", str(tmp_path / "out"), "--to", "llmvcr-yaml", "-o", str(tmp_path / "yaml")]) == 0
    assert f"converted {len(FILES)} file(s)" in capsys.readouterr().out


def test_the_corpus_holds_no_real_credential() -> None:
    placeholders = {
        "Bearer test_openai_api_key",
        "test_set_cookie",
        "test_organization",
        "test_openai_org_id",
    }
    for source in FILES:
        document = read_document(str(source))
        for where, kind, _ in find_secrets(document):
            value: Any = document
            for part in re.findall(r"[^.\[\]]+", where):
                value = value[int(part)] if isinstance(value, list) else value[part]
            assert kind == "credential-header", (source, where, kind)  # no key-shaped string anywhere
            cookie = str(value).startswith(("__cf_bm=", "_cfuvid="))  # Cloudflare's, not an account's
            assert value in placeholders or cookie or "organization" in where, (source, where)
