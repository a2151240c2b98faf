"""Usage and list-price cost per test, through real pytest runs against the loopback server: the
summary, the JSON a CI job keeps (--llmvcr-usage-json), prices from genai-prices, and the fallback
without it (tokens counted, dollars omitted with one line saying how to get them)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from genai_prices import Usage, calc_price

from llmvcr import usage
from llmvcr._summary import RunSummary
from llmvcr.freshness import Finding
from llmvcr.spend import Ledger, PerTest, Tally

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
            "llmvcr: recording spent * tokens in 4 live calls ($0.0* at list price), per test:",
            f"  test_user.py::test_claude: 2 calls, {claude['input_tokens'] + claude['output_tokens']} tokens, $0.0*",
            "llmvcr: usage and cost per test written to usage.json",
        ]
    )
    replayed = inner.runpytest("-p", "no:recording", "--llmvcr-usage-json=usage.json", "-v")
    replayed.assert_outcomes(passed=3)
    again = {row["test"]: row for row in json.loads((inner.path / "usage.json").read_text())["tests"]}
    assert again["test_user.py::test_claude"]["replayed"] == claude  # what replay saved, priced the same
    assert again["test_user.py::test_claude"]["recorded"]["calls"] == 0
    replayed.stdout.fnmatch_lines(
        ["*test_user.py::test_claude: 2 replayed, 0 recorded, 0 unplayed, * tokens ($0.0*)"]
    )


@pytest.mark.slow
def test_without_the_prices_extra_dollars_are_omitted_with_one_line_saying_how(
    inner: pytest.Pytester,
) -> None:
    inner.makeconftest(NO_PRICES)
    result = inner.runpytest_subprocess("-p", "no:recording", "--llmvcr-usage-json=usage.json", timeout=120)
    result.assert_outcomes(passed=3)
    out = result.stdout.str()
    assert "$" not in out
    assert (
        out.count("dollars omitted: install the prices extra for them (pip install 'pyllmvcr[prices]')") == 1
    )
    document = json.loads((inner.path / "usage.json").read_text())
    assert document["prices"] is None
    claude = next(r for r in document["tests"] if r["test"] == "test_user.py::test_claude")["recorded"]
    assert claude["calls"] == 2 and claude["input_tokens"] > 0 and claude["usd"] is None


def test_price_comes_from_genai_prices_and_is_none_for_an_unknown_model() -> None:
    expected = calc_price(
        Usage(input_tokens=100_000, output_tokens=2_000), "claude-sonnet-4-5", provider_id="anthropic"
    )
    assert usage.price("claude-sonnet-4-5", "anthropic", 100_000, 2_000) == pytest.approx(
        float(expected.total_price)
    )
    assert usage.price("claude-test-double", "anthropic", 10, 10) is None
    assert not hasattr(usage, "PRICES")  # no hand-kept table to go stale


def test_xdist_workers_hand_their_usage_and_findings_to_the_controller() -> None:
    worker, controller = Ledger(), Ledger()
    worker.per_test["t"] = PerTest("t", recorded=Tally(calls=2, input_tokens=10, output_tokens=5, usd=0.5))
    controller.merge(worker.as_json())
    assert controller.per_test["t"].recorded.calls == 2 and controller.spent() == 0.5
    summary_w, summary_c = RunSummary(), RunSummary()
    summary_w.findings.append(Finding("expired", "/c/a.yaml", "t", "recorded 2026-01-01", "warned"))
    summary_c.merge(summary_w.as_json())
    assert summary_c.findings == summary_w.findings
