"""Usage and list-price cost per test, through real pytest runs against the loopback server: the
summary, the JSON a CI job keeps (--llmvcr-usage-json), prices from genai-prices, and the fallback
without it (tokens counted, dollars omitted with one line saying how to get them)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from genai_prices import Usage, calc_price, extract_usage

import llmvcr
from llmvcr.errors import RecordBudgetSpent
from llmvcr.freshness import usage
from llmvcr.freshness.budget import Ledger, PerTest, Tally
from llmvcr.freshness.check import Finding
from llmvcr.freshness.plan import Budget, Plan
from llmvcr.pytest_plugin._summary import RunSummary

USER_TESTS = """
import os, anthropic, openai, pytest
URL = os.environ["LLM_URL"]

@pytest.mark.llmvcr
def test_claude():
    client = anthropic.Anthropic(api_key="sk-ant-inner-test-key-000", base_url=URL, max_retries=0)
    for text in ("one", "two"):
        client.messages.create(model="claude-sonnet-4-5", max_tokens=16,
                               messages=[{"role": "user", "content": text}])

@pytest.mark.llmvcr
def test_gpt():
    client = openai.OpenAI(api_key="sk-proj-inner-test-key-000", base_url=URL + "/v1", max_retries=0)
    client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])

@pytest.mark.llmvcr
def test_unknown_model():
    client = anthropic.Anthropic(api_key="sk-ant-inner-test-key-000", base_url=URL, max_retries=0)
    client.messages.create(model="claude-test-double", max_tokens=16,
                           messages=[{"role": "user", "content": "x"}])
"""

NO_PRICES = "import sys\nsys.modules['genai_prices'] = None  # the prices extra is not installed\n"


@pytest.fixture
def inner(pytester: pytest.Pytester, server: Any, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("LLM_URL", server.url)
    pytester.makepyfile(test_user=USER_TESTS)
    return pytester


def _expected(model: str, provider: str, tally: dict[str, Any]) -> float:
    result = calc_price(
        Usage(input_tokens=tally["input_tokens"], output_tokens=tally["output_tokens"]),
        model,
        provider_id=provider,
    )
    return float(result.total_price)


def test_usage_and_cost_per_test_in_the_summary_and_the_json(inner: pytest.Pytester) -> None:
    recorded = inner.runpytest("-p", "no:recording", "--llmvcr-usage-json=usage.json")
    recorded.assert_outcomes(passed=3)
    document = json.loads((inner.path / "usage.json").read_text())
    assert document["prices"].startswith("genai-prices ")
    tests = {row["test"]: row for row in document["tests"]}
    claude = tests["test_user.py::test_claude"]["recorded"]
    assert claude["calls"] == 2 and claude["input_tokens"] > 0 and claude["output_tokens"] > 0
    assert claude["usd"] == pytest.approx(_expected("claude-sonnet-4-5", "anthropic", claude), rel=1e-6)
    gpt = tests["test_user.py::test_gpt"]["recorded"]
    assert gpt["usd"] == pytest.approx(_expected("gpt-4o-mini", "openai", gpt), rel=1e-6)
    unknown = tests["test_user.py::test_unknown_model"]["recorded"]
    assert unknown["calls"] == 1 and unknown["unpriced"] == 1 and unknown["usd"] == 0.0
    assert document["totals"]["recorded"]["calls"] == 4
    recorded.stdout.fnmatch_lines(
        [
            "llmvcr: recording spent * tokens in 4 live calls ($0.0* at list price, 1 call unpriced), per test:",
            f"  test_user.py::test_claude: 2 calls, {claude['input_tokens'] + claude['output_tokens']} tokens, $0.0*",
            "  test_user.py::test_unknown_model: 1 call, * tokens, unpriced",
            "llmvcr: usage and cost per test written to usage.json",
        ]
    )
    replayed = inner.runpytest("-p", "no:recording", "--llmvcr-usage-json=usage.json", "-v")
    replayed.assert_outcomes(passed=3)
    again = {row["test"]: row for row in json.loads((inner.path / "usage.json").read_text())["tests"]}
    assert again["test_user.py::test_claude"]["replayed"] == claude  # what replay saved, priced the same
    assert again["test_user.py::test_claude"]["recorded"]["calls"] == 0
    replayed.stdout.fnmatch_lines(
        [
            "llmvcr: 4 LLM calls replayed, * replay saved * tokens ($0.0* at list price, 1 call unpriced)",
            "*test_user.py::test_claude: 2 replayed, 0 recorded, 0 unplayed, * tokens ($0.0*)",
            "*test_user.py::test_unknown_model: 1 replayed, 0 recorded, 0 unplayed, * tokens (unpriced)",
        ]
    )


@pytest.mark.slow
def test_without_the_prices_extra_dollars_are_omitted_with_one_line_saying_how(
    inner: pytest.Pytester,
) -> None:
    inner.makeconftest(NO_PRICES)
    result = inner.runpytest_subprocess("-p", "no:recording", "--llmvcr-usage-json=usage.json", timeout=120)
    result.assert_outcomes(passed=3)
    out = result.stdout.str()
    assert "$" not in out and "unpriced" not in out
    assert out.count("dollars omitted: install llmvcr with its prices extra for them (pip install -e") == 1
    again = inner.runpytest_subprocess("-p", "no:recording", timeout=120)  # the project was told once
    again.assert_outcomes(passed=3)
    assert "dollars omitted" not in again.stdout.str()
    document = json.loads((inner.path / "usage.json").read_text())
    assert document["prices"] is None
    claude = next(r for r in document["tests"] if r["test"] == "test_user.py::test_claude")["recorded"]
    assert claude["calls"] == 2 and claude["input_tokens"] > 0 and claude["usd"] is None


def test_xdist_workers_hand_their_usage_and_findings_to_the_controller() -> None:
    worker, controller = Ledger(), Ledger()
    worker.per_test["t"] = PerTest("t", recorded=Tally(calls=2, input_tokens=10, output_tokens=5, usd=0.5))
    controller.merge(worker.as_json())
    assert controller.per_test["t"].recorded.calls == 2 and controller.spent() == 0.5
    summary_w, summary_c = RunSummary(), RunSummary()
    summary_w.findings.append(Finding("expired", "/c/a.yaml", "t", "recorded 2026-01-01", "warned"))
    summary_c.merge(summary_w.as_json())
    assert summary_c.findings == summary_w.findings


# ---- every kind of token at the price list's price (cache reads and writes, reasoning, long context)

ANTHROPIC_CACHED = {"input_tokens": 1561, "output_tokens": 300, "cache_creation_input_tokens": 2500,
                    "cache_read_input_tokens": 6000}  # fmt: skip
ANTHROPIC_LONG = {"input_tokens": 251_057, "output_tokens": 389, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 0}  # fmt: skip
OPENAI_CACHED = {"prompt_tokens": 6458, "completion_tokens": 550, "total_tokens": 7008,
                 "prompt_tokens_details": {"cached_tokens": 6000, "audio_tokens": 0},
                 "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0}}  # fmt: skip
OPENAI_REASONING = {"prompt_tokens": 2100, "completion_tokens": 1900, "total_tokens": 4000,
                    "prompt_tokens_details": {"cached_tokens": 1024},
                    "completion_tokens_details": {"reasoning_tokens": 1536}}  # fmt: skip
RESPONSES_REASONING = {"input_tokens": 5000, "output_tokens": 800, "total_tokens": 5800,
                       "input_tokens_details": {"cached_tokens": 4096},
                       "output_tokens_details": {"reasoning_tokens": 512}}  # fmt: skip
GEMINI_THINKING = {"promptTokenCount": 12000, "candidatesTokenCount": 400, "thoughtsTokenCount": 1200,
                   "cachedContentTokenCount": 8000, "totalTokenCount": 13600,
                   "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 12000}],
                   "cacheTokensDetails": [{"modality": "TEXT", "tokenCount": 8000}]}  # fmt: skip
USER = [{"role": "user", "content": "hello there"}]


def reporting(usage: dict[str, Any]) -> Any:
    """A server hook: every answer reports ``usage``, in the provider's own places (an Anthropic
    stream says its input and cache tokens at the start and its output tokens at the end)."""

    def hook(event: str | None, payload: dict[str, Any]) -> list[tuple[str | None, dict[str, Any]]]:
        if "usageMetadata" in payload:
            payload = {**payload, "usageMetadata": usage}
        elif event == "message_start":
            payload = {**payload, "message": {**payload["message"], "usage": {**usage, "output_tokens": 1}}}
        elif event == "message_delta":
            payload = {**payload, "usage": {"output_tokens": usage["output_tokens"]}}
        elif isinstance(payload.get("usage"), dict):
            payload = {**payload, "usage": usage}
        return [(event, payload)]

    return hook


@pytest.fixture
def live() -> Any:
    """A server of this test's own, whose answers report the usage a test sets."""
    from llm_server import LLMServer

    with LLMServer() as server:
        yield server


def _clients(live: Any) -> tuple[Any, Any, Any]:
    import anthropic
    import openai
    from google import genai
    from google.genai import types

    claude = anthropic.Anthropic(api_key="sk-ant-usage-test-000", base_url=live.url, max_retries=0)
    gpt = openai.OpenAI(api_key="sk-proj-usage-test-000", base_url=live.url + "/v1", max_retries=0)
    options = types.HttpOptions(base_url=live.url, retry_options=types.HttpRetryOptions(attempts=1))
    return claude, gpt, genai.Client(api_key="gemini-test-key", http_options=options)


def _direct(body: dict[str, Any], provider: str, flavor: str = "default") -> float:
    """genai-prices' own price of a recorded response body, read by its own usage extraction."""
    return float(extract_usage(body, provider_id=provider, api_flavor=flavor).calc_price().total_price)


def test_each_kind_of_token_is_priced_as_genai_prices_reads_the_recorded_body(live: Any) -> None:
    claude, gpt, gemini = _clients(live)
    calls = [
        (ANTHROPIC_CACHED, "anthropic", "default", lambda: claude.messages.create(
            model="claude-sonnet-4-5", max_tokens=32, messages=USER)),
        (ANTHROPIC_LONG, "anthropic", "default", lambda: claude.messages.create(
            model="claude-sonnet-4-5", max_tokens=32, messages=[{"role": "user", "content": "a long one"}])),
        (OPENAI_CACHED, "openai", "chat", lambda: gpt.chat.completions.create(model="gpt-4o", messages=USER)),
        (OPENAI_REASONING, "openai", "chat", lambda: gpt.chat.completions.create(model="o4-mini", messages=USER)),
        (RESPONSES_REASONING, "openai", "responses", lambda: gpt.responses.create(model="o4-mini", input="hi")),
        (GEMINI_THINKING, "google", "default", lambda: gemini.models.generate_content(
            model="gemini-2.5-flash", contents="hello there")),
    ]  # fmt: skip
    with llmvcr.recording("kinds") as cassette:
        for reported, *_, call in calls:
            live.drift = reporting(reported)
            call()
    assert len(cassette) == len(calls)
    for position, (reported, provider, flavor, _) in enumerate(calls):
        entry = cassette.entry(position)
        assert entry.response.body[_USAGE_KEY[provider]] == reported  # what the answer said is priced
        expected = _direct(entry.response.body, provider, flavor)
        assert usage.cost_of(entry) == pytest.approx(expected, rel=1e-9), (provider, reported)
    base_rate = float(
        calc_price(Usage(input_tokens=1000), "claude-sonnet-4-5", provider_id="anthropic").total_price
    )
    long = usage.cost_of(cassette.entry(1)) or 0.0
    assert long > 251_057 / 1000 * base_rate * 1.9  # the long-context tier, not the base one


_USAGE_KEY = {"anthropic": "usage", "openai": "usage", "google": "usageMetadata"}


def test_a_stream_is_priced_as_its_non_streamed_twin(live: Any) -> None:
    claude, gpt, gemini = _clients(live)
    with llmvcr.recording("streams") as cassette:
        live.drift = reporting(ANTHROPIC_CACHED)
        claude.messages.create(model="claude-sonnet-4-5", max_tokens=32, messages=USER)
        with claude.messages.stream(model="claude-sonnet-4-5", max_tokens=32, messages=USER) as stream:
            stream.get_final_message()
        live.drift = reporting(OPENAI_REASONING)
        gpt.chat.completions.create(model="o4-mini", messages=USER)
        list(gpt.chat.completions.create(model="o4-mini", messages=USER, stream=True,
                                         stream_options={"include_usage": True}))  # fmt: skip
        live.drift = reporting(GEMINI_THINKING)
        gemini.models.generate_content(model="gemini-2.5-flash", contents="hello there")
        list(gemini.models.generate_content_stream(model="gemini-2.5-flash", contents="hello there"))
    for twin in (0, 2, 4):
        body, streamed = cassette.entry(twin), cassette.entry(twin + 1)
        assert streamed.response.stream is not None and body.response.stream is None
        provider = body.provider
        expected = _direct(body.response.body, provider, "chat" if provider == "openai" else "default")
        assert usage.cost_of(streamed) == pytest.approx(expected, rel=1e-9), provider
        assert usage.tokens_of(streamed) == usage.tokens_of(body)


def test_the_usage_json_the_plan_and_the_budget_price_cache_tokens_at_the_list_price(
    pytester: pytest.Pytester, live: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_URL", live.url)
    pytester.makepyfile(test_user=USER_TESTS.split("@pytest.mark.llmvcr\ndef test_gpt")[0])
    live.drift = reporting(ANTHROPIC_CACHED)
    result = pytester.runpytest("-p", "no:recording", "--llmvcr-usage-json=usage.json")
    result.assert_outcomes(passed=1)
    path = next((pytester.path / "cassettes").rglob("*.yaml"))
    cassette = llmvcr.load_cassette(str(path))
    expected = sum(_direct(cassette.entry(i).response.body, "anthropic") for i in range(2))
    document = json.loads((pytester.path / "usage.json").read_text())
    assert document["tests"][0]["recorded"]["usd"] == pytest.approx(expected, rel=1e-9)
    result.stdout.fnmatch_lines(
        [f"llmvcr: recording spent * tokens in 2 live calls (${expected:.4f} at list price)*"]
    )
    plan = Plan()
    plan.add("unplayed", str(path), "test_user.py::test_claude")
    assert f"~${expected:.4f}" in "\n".join(plan.lines())
    budget = Budget(
        expected * 0.75, spent=lambda: 0.0
    )  # above the base-tier arithmetic, below the list price
    with pytest.raises(RecordBudgetSpent, match=rf"would cost 2 calls, [\d,]+ tokens, ~\${expected:.4f}"):
        budget.gate(str(path), "all", True, "test_user.py::test_claude")


def test_a_model_without_a_price_is_unpriced_in_the_plan_never_zero_dollars(live: Any) -> None:
    claude, _, _ = _clients(live)
    with llmvcr.recording("unknown") as cassette:
        claude.messages.create(model="claude-test-double", max_tokens=16, messages=USER)
    assert usage.cost_of(cassette.entry(0)) is None and usage.tokens_of(cassette.entry(0))[0] > 0
    plan = Plan()
    plan.add("unplayed", cassette.path, "t")
    lines = "\n".join(plan.lines())
    assert "1 call, " in lines and "tokens, unpriced" in lines and "$0.0000" not in lines
    assert not hasattr(usage, "PRICES") and not hasattr(usage, "price")  # no hand-kept rates to go stale


def test_a_registered_provider_is_priced_under_its_own_name() -> None:
    from llmvcr.cassette.entries import Entry, Request, Response

    body = {"id": "chatcmpl-1", "object": "chat.completion", "model": "llama-3.3-70b-versatile", "choices": [],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 200, "total_tokens": 1200,
                      "prompt_tokens_details": {"cached_tokens": 512}}}  # fmt: skip
    request = Request("POST", "/openai/v1/chat/completions", {"model": "llama-3.3-70b-versatile"})
    entry = Entry("groq", request, Response(200, {}, body=body), "sha256:0")
    assert usage.usage_of(entry) == (1000, 200, pytest.approx(_direct(body, "groq")))
    assert usage.cost_of(Entry("my-gateway", request, Response(200, {}, body=body), "sha256:0")) is None
