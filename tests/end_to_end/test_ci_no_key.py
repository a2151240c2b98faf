"""The README's story with truly no key on CI: a project records with a key against the loopback
server, then its suite replays under ``CI=true`` with no key variable at all; a placeholder key
never reaches an API, and an SDK that still finds no key gets one line of llmvcr's."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ANTHROPIC_SENTINEL, OPENAI_SENTINEL
from test_ci_adoption import run_with
from test_record_replay import _assert_no_secrets

from llmvcr.providers.placeholder_keys import PLACEHOLDER
from llmvcr.proxy import ProxyServer

ROOT = Path(__file__).resolve().parent.parent.parent

# the README's step 1, as a user writes it: clients built from the environment alone
README_TESTS = """
import anthropic
import openai
import pytest


@pytest.mark.llmvcr
def test_summary():
    reply = anthropic.Anthropic().messages.create(
        model="claude-sonnet-4-6",
        max_tokens=200,
        messages=[{"role": "user", "content": "Summarise: the cat sat on the mat"}],
    )
    assert "cat" in reply.content[0].text


@pytest.mark.llmvcr
def test_openai_chat():
    reply = openai.OpenAI().chat.completions.create(
        model="gpt-5-mini", messages=[{"role": "user", "content": "Say the cat"}]
    )
    assert "cat" in reply.choices[0].message.content
"""

KEY_VARIABLES = (
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
)


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for variable in (*KEY_VARIABLES, "CI", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(variable, raising=False)
    pytester.makepyfile(test_chat=README_TESTS)
    return pytester


def record(p: pytest.Pytester, server: Any) -> int:
    """README step 2: run once with a key (here a sentinel, the API the loopback server); the
    server's request count after it."""
    before = server.request_count
    env = {"ANTHROPIC_BASE_URL": server.url, "OPENAI_BASE_URL": f"{server.url}/v1"}
    recorded = run_with(p, ANTHROPIC_API_KEY=ANTHROPIC_SENTINEL, OPENAI_API_KEY=OPENAI_SENTINEL, **env)
    recorded.assert_outcomes(passed=2)
    assert server.request_count == before + 2
    _assert_no_secrets(p.path / "cassettes")
    return int(server.request_count)


@pytest.mark.slow
def test_a_readme_suite_replays_under_ci_with_no_key_variable(project: pytest.Pytester, server: Any) -> None:
    seen = record(project, server)
    replayed = run_with(project, CI="true")  # README step 4: no key, no base URL, nothing else
    replayed.assert_outcomes(passed=2)
    replayed.stdout.fnmatch_lines(["llmvcr: 2 LLM calls replayed, 0 recorded, 0 cassettes written*"])
    assert server.request_count == seen
    for path in (project.path / "cassettes").rglob("*.yaml"):
        assert PLACEHOLDER not in path.read_text()


@pytest.mark.slow
def test_a_placeholder_key_is_never_sent_to_record(project: pytest.Pytester, server: Any) -> None:
    seen = record(project, server)
    # a marker that records on CI: the placeholder would go to the API, so the call is refused
    tests = project.path / "test_chat.py"
    tests.write_text(
        tests.read_text().replace("@pytest.mark.llmvcr\n", '@pytest.mark.llmvcr(record_mode="all")\n')
    )
    refused = run_with(project, CI="true", ANTHROPIC_BASE_URL=server.url, OPENAI_BASE_URL=f"{server.url}/v1")
    refused.assert_outcomes(failed=2)
    refused.stdout.fnmatch_lines(
        [
            "*MissingKeyError: llmvcr: POST *v1/messages would be recorded, but it carries llmvcr's "
            "placeholder key*Set a real key to record: ANTHROPIC_API_KEY=...*",
            "*Set a real key to record: OPENAI_API_KEY=...*",
        ]
    )
    assert server.request_count == seen  # nothing sent with the placeholder


@pytest.mark.slow
def test_a_recording_run_with_no_key_says_to_set_one(project: pytest.Pytester, server: Any) -> None:
    before = server.request_count
    failed = run_with(project, ANTHROPIC_BASE_URL=server.url, OPENAI_BASE_URL=f"{server.url}/v1")
    failed.assert_outcomes(failed=2)
    output = failed.stdout.str()
    assert output.count("llmvcr: the SDK found no API key. To record, set the provider's key") == 2, output
    assert server.request_count == before


# the README's TypeScript test, its clients built with no key, its prompt changeable for a divergence
TS_TEST = """
import { test } from "node:test";
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { cassette } from "./llmvcr.ts";

test("summarises the report", async (t) => {
  const tape = await cassette(t.name);
  try {
    const claude = new Anthropic({ baseURL: tape.baseURL, maxRetries: 0 });
    const m = await claude.messages.create({ model: "claude-sonnet-4-5", max_tokens: 200,
      messages: [{ role: "user", content: process.env.PROMPT ?? "Summarise: revenue up 4%, churn down." }] });
    assert.equal(m.content[0].type, "text");
    const gpt = new OpenAI({ baseURL: `${tape.baseURL}/v1`, maxRetries: 0 });
    const c = await gpt.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "One word?" }] });
    assert.ok(c.choices[0].message.content);
  } finally {
    await tape.close();
  }
});
"""
NODE = ROOT / "tests" / "node"


@pytest.fixture
def ts_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A TypeScript project as examples/typescript/README.md sets one up, its packages from tests/node."""
    if shutil.which("node") is None or not (NODE / "node_modules").is_dir():
        pytest.skip("node and tests/node's packages (npm ci in tests/node) are not installed here")
    for variable in (*KEY_VARIABLES, "CI", "LLMVCR_PROXY_URL"):
        monkeypatch.delenv(variable, raising=False)
    project = tmp_path / "tsproj"
    project.mkdir()
    (project / "package.json").write_text('{"type": "module"}\n')
    (project / "node_modules").symlink_to(NODE / "node_modules", target_is_directory=True)
    shutil.copy(ROOT / "examples" / "typescript" / "llmvcr.ts", project)
    (project / "summary.test.ts").write_text(TS_TEST)
    return project


def serve(project: Path, *options: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``llmvcr serve --cassette-dir cassettes OPTIONS -- node --import tsx --test summary.test.ts``."""
    command = [sys.executable, "-m", "llmvcr", "serve", "--cassette-dir", "cassettes", *options, "--"]
    command += ["node", "--import", "tsx", "--test", "summary.test.ts"]
    environ = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    return subprocess.run(command, cwd=project, env=environ, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_the_typescript_example_replays_under_ci_with_no_key_variable(ts_project: Path, server: Any) -> None:
    upstreams = ["--upstream", f"anthropic={server.url}", "--upstream", f"openai={server.url}"]
    before = server.request_count
    keys = {"ANTHROPIC_API_KEY": ANTHROPIC_SENTINEL, "OPENAI_API_KEY": OPENAI_SENTINEL}
    recorded = serve(ts_project, *upstreams, **keys)
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert server.request_count == before + 2
    _assert_no_secrets(ts_project / "cassettes")
    # CI, one command, no key variable: the child gets placeholders the proxy never sends upstream
    replayed = serve(ts_project, *upstreams, CI="true")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "# pass 1" in replayed.stdout and "export " not in replayed.stdout  # no banner to follow
    assert server.request_count == before + 2
    # a changed prompt: the test's error is the 424 diff, with the command that re-records in Node
    changed = serve(ts_project, *upstreams, CI="true", PROMPT="Summarise: revenue up 4%, churn flat.")
    assert changed.returncode != 0
    out = changed.stdout
    diff = out.index(
        "recorded 'Summarise: revenue up 4%, churn down.' != live 'Summarise: revenue up 4%, churn flat.'"
    )
    assert diff < out.index("1 call, 0 replayed, 0 recorded, 2 entries unplayed; 1 call no entry answered"), (
        out
    )
    assert "llmvcr serve --record-mode all --cassette-dir cassettes -- npm test" in out
    assert server.request_count == before + 2


@pytest.mark.slow
def test_llmvcr_ts_sets_placeholders_for_a_cassette_that_replays_only(
    ts_project: Path, server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    upstreams = ["--upstream", f"anthropic={server.url}", "--upstream", f"openai={server.url}"]
    keys = {"ANTHROPIC_API_KEY": ANTHROPIC_SENTINEL, "OPENAI_API_KEY": OPENAI_SENTINEL}
    assert serve(ts_project, *upstreams, **keys).returncode == 0
    before = server.request_count
    monkeypatch.setenv("CI", "true")  # the proxy started apart, as `llmvcr serve &` on CI
    with ProxyServer(
        ts_project / "cassettes", upstreams={"anthropic": server.url, "openai": server.url}
    ) as proxy:
        environ = {**os.environ, "LLMVCR_PROXY_URL": proxy.url}
        done = subprocess.run(
            ["node", "--import", "tsx", "--test", "summary.test.ts"],
            cwd=ts_project, env=environ, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert server.request_count == before


@pytest.mark.slow
def test_an_sdk_llmvcr_sets_no_placeholder_for_gets_one_line_under_its_no_key_error_on_ci(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AZURE_OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("AZURE_OPENAI_AD_TOKEN", raising=False)
    project.makepyfile(
        test_azure="""
import openai, pytest

@pytest.mark.llmvcr
def test_azure():
    openai.AzureOpenAI(azure_endpoint="https://example.openai.azure.com", api_version="2024-10-21")
"""
    )
    failed = run_with(project, "test_azure.py", CI="true")
    failed.assert_outcomes(failed=1)
    failed.stdout.fnmatch_lines(
        ["*Missing credentials*", "*llmvcr*", "llmvcr: the SDK found no API key. Replay needs none: llmvcr sets a "
         "placeholder for ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY when CI is set*"]
    )  # fmt: skip


@pytest.mark.slow
def test_llmvcr_plan_replays_with_no_key_variable(project: pytest.Pytester, server: Any) -> None:
    seen = record(project, server)
    planned = run_with(project, "--llmvcr-plan")  # no CI, no key: the plan replays only
    planned.assert_outcomes(passed=2)
    planned.stdout.fnmatch_lines(
        ["llmvcr plan: every cassette replayed whole and in date; nothing to re-record"]
    )
    assert server.request_count == seen
