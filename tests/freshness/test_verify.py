"""``llmvcr verify``: recorded requests sent again to a loopback server whose answers changed since the
recording; each kind of drift in the answers' shape is reported, differing text is not, the cassettes
are not rewritten, and the result is also JUnit XML."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from llm_server import LLMServer

import llmvcr
from llmvcr.cli import main

USER = [{"role": "user", "content": "hello there"}]


@pytest.fixture
def live() -> Iterator[LLMServer]:
    """A server of this test's own: its answers change between recording and verifying."""
    with LLMServer() as server:
        yield server


@pytest.fixture
def recorded(live: LLMServer, cassette_dir: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Three cassettes: an Anthropic answer, an Anthropic stream, an OpenAI answer."""
    claude = anthropic.Anthropic(api_key="sk-ant-verify-test-000", base_url=live.url, max_retries=0)
    gpt = openai.OpenAI(api_key="sk-proj-verify-test-000", base_url=live.url + "/v1", max_retries=0)
    with llmvcr.recording("claude"):
        claude.messages.create(model="claude-sonnet-4-5", max_tokens=32, messages=USER)
    with llmvcr.recording("claude-stream"):
        with claude.messages.stream(model="claude-sonnet-4-5", max_tokens=32, messages=USER) as stream:
            stream.get_final_text()
    with llmvcr.recording("gpt"):
        gpt.chat.completions.create(model="gpt-4o-mini", messages=USER)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-verify-test-000")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-verify-test-000")
    return {name: cassette_dir / f"{name}.yaml" for name in ("claude", "claude-stream", "gpt")}


def verify(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    saved = sys.stdout
    sys.stdout = out
    try:
        status = main(["verify", *args])
    finally:
        sys.stdout = saved
    return status, out.getvalue()


def drift(event: str | None, payload: dict[str, Any]) -> list[tuple[str | None, dict[str, Any]]]:
    if event is None and payload.get("type") == "message":  # an Anthropic answer: a type changed
        usage = dict(payload["usage"], output_tokens=str(payload["usage"]["output_tokens"]))
        return [(None, dict(payload, usage=usage))]
    if event is None and payload.get("object") == "chat.completion":  # OpenAI: a field added, one removed
        changed = dict(payload, service_tier="default")
        changed.pop("system_fingerprint", None)
        return [(None, changed)]
    if event == "message_stop":  # a stream: a new event type before the last
        return [("message_citations", {"type": "message_citations", "citations": []}), (event, payload)]
    return [(event, payload)]


def test_each_kind_of_drift_is_reported_per_cassette_in_text_and_junit_xml(
    live: LLMServer, recorded: dict[str, Path], tmp_path: Path
) -> None:
    before = {name: path.read_bytes() for name, path in recorded.items()}
    live.drift = drift
    junit = tmp_path / "verify.xml"
    done = subprocess.run(
        [sys.executable, "-m", "llmvcr", "verify", str(recorded["claude"].parent), "--base-url", live.url,
         "--junit-xml", str(junit)],
        capture_output=True, text=True, env=dict(os.environ), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    out = done.stdout
    assert "llmvcr verify: sending 3 recorded requests of 3 cassettes, about $0.0" in out
    assert "claude.yaml: DRIFT (1 change in 1 answer)" in out
    assert "#0 POST /v1/messages: type changed: usage.output_tokens: number -> string" in out
    assert "claude-stream.yaml: DRIFT" in out
    assert "#0 POST /v1/messages: new stream event type: message_citations" in out
    assert "#0 POST /v1/chat/completions: field added: service_tier (string)" in out
    assert "#0 POST /v1/chat/completions: field removed: system_fingerprint" in out
    assert "llmvcr verify: 3 of 3 cassettes drifted; nothing was rewritten" in out
    assert {name: path.read_bytes() for name, path in recorded.items()} == before  # rewrites nothing
    suite = ET.parse(junit).getroot()
    assert suite.tag == "testsuite" and suite.get("tests") == "3" and suite.get("failures") == "3"
    failures = {case.get("name", "").rsplit("/", 1)[-1]: case.find("failure") for case in suite}
    assert failures["gpt.yaml"] is not None
    assert "field removed: system_fingerprint" in (failures["gpt.yaml"].text or "")


def test_text_that_differs_is_not_drift_and_an_error_where_a_success_was_recorded_is(
    live: LLMServer, recorded: dict[str, Path]
) -> None:
    status, out = verify(*map(str, recorded.values()), "--base-url", live.url)
    assert status == 0, out
    assert out.count("ok (1 answer, same shape)") == 3

    def new_words(event: str | None, payload: dict[str, Any]) -> list[tuple[str | None, dict[str, Any]]]:
        if event is None and payload.get("type") == "message":
            content = [dict(block, text="A different answer entirely") for block in payload["content"]]
            return [(None, dict(payload, content=content, id="msg_other", stop_reason=None))]
        return [(event, payload)]

    live.drift = new_words
    status, out = verify(str(recorded["claude"]), "--base-url", live.url)
    assert status == 0, out  # other words, another id, a null: the same shape
    live.drift, live.fail_status = None, 500
    status, out = verify(str(recorded["claude"]), str(recorded["gpt"]), "--base-url", live.url)
    assert status == 1
    assert "#0 POST /v1/messages: error where success was recorded: HTTP 500 (api_error)" in out
    assert "#0 POST /v1/chat/completions: error where success was recorded: HTTP 500 (server_error)" in out


def test_a_request_without_its_key_is_named_not_checked(
    live: LLMServer, recorded: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    requests = live.request_count
    status, out = verify(str(recorded["gpt"]), "--base-url", f"openai={live.url}")
    assert status == 2
    assert "gpt.yaml: NOT CHECKED (1 of 1 requests)" in out
    assert "not checked: #0 POST /v1/chat/completions: set OPENAI_API_KEY to send it" in out
    assert live.request_count == requests


def nulls(event: str | None, payload: dict[str, Any]) -> list[tuple[str | None, dict[str, Any]]]:
    """The live API now sends nulls where the recording had nothing, drops fields the recording had as
    null, and fills in an object where the recording had null: none of it is drift."""
    if event is None and payload.get("type") == "message":
        changed = dict(payload, container=None)
        changed.pop("stop_sequence")  # recorded as null
        return [(None, changed)]
    if event == "message_delta":  # a stream's null that went away
        return [(event, dict(payload, delta={k: v for k, v in payload["delta"].items() if v is not None}))]
    if event is None and payload.get("object") == "chat.completion":
        logprobs = {"content": [{"token": "Echo", "logprob": -0.01, "bytes": [69, 99, 104, 111], "top_logprobs": []}],
                    "refusal": None}  # fmt: skip
        message = {k: v for k, v in payload["choices"][0]["message"].items() if k != "refusal"}
        choice = dict(payload["choices"][0], message=message, logprobs=logprobs)
        return [(None, dict(payload, choices=[choice], system_fingerprint=None, service_tier=None))]
    return [(event, payload)]


def test_a_null_that_appears_goes_away_or_becomes_an_object_is_not_drift(
    live: LLMServer, recorded: dict[str, Path]
) -> None:
    live.drift = nulls
    status, out = verify(*map(str, recorded.values()), "--base-url", live.url)
    assert status == 0, out
    assert out.count("ok (1 answer, same shape)") == 3


def test_an_openai_base_url_written_the_sdks_way_with_v1_is_not_doubled(
    live: LLMServer, recorded: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    sdk_ways = ["--base-url", f"openai={live.url}/v1", "--base-url", f"anthropic={live.url}"]
    for given in (sdk_ways, ["--base-url", f"{live.url}/v1/"]):
        live.reset()
        status, out = verify(str(recorded["gpt"]), str(recorded["claude"]), *given)
        assert status == 0, out
        assert sorted(r.path for r in live.requests) == ["/v1/chat/completions", "/v1/messages"]
    monkeypatch.setenv("OPENAI_BASE_URL", f"{live.url}/v1")  # as the openai SDK reads it
    monkeypatch.setenv("ANTHROPIC_BASE_URL", live.url)  # as the anthropic SDK reads it
    live.reset()
    status, out = verify(str(recorded["gpt"]), str(recorded["claude"]))
    assert status == 0, out
    assert sorted(r.path for r in live.requests) == ["/v1/chat/completions", "/v1/messages"]
    assert "openai: the same with or without the SDK's /v1" in " ".join(_help().split())


def _help() -> str:
    out = io.StringIO()
    saved = sys.stdout
    sys.stdout = out
    try:
        with pytest.raises(SystemExit):
            main(["verify", "--help"])
    finally:
        sys.stdout = saved
    return out.getvalue()
