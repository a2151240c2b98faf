"""The README's story with truly no key on CI: a project records with a key against the loopback
server, then its suite replays under ``CI=true`` with no key variable at all; a placeholder key
never reaches an API, and an SDK that still finds no key gets one line of llmvcr's."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import ANTHROPIC_SENTINEL, OPENAI_SENTINEL
from test_ci_adoption import run_with
from test_record_replay import _assert_no_secrets

from llmvcr.providers.placeholder_keys import PLACEHOLDER

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
