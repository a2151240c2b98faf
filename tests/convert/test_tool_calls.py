"""Tool entries on the timeline: ``llmvcr show`` prints each tool call with the model call whose
``tool_use`` asked for it, and ``llmvcr view`` links the two in the page's data (its browser test is
at the end)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest
from browser import open_page, requests_made, start

import llmvcr
from llmvcr.cli import main as cli
from llmvcr.convert.tool_calls import AskedBy, asked_by, tool_call_of
from llmvcr.view.cassettes import cassette_data

WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


@llmvcr.tool
def get_weather(city: str, unit: str = "C") -> str:
    return f"21{unit} in {city}"


@llmvcr.tool
def get_time(zone: str) -> str:
    raise LookupError(f"no zone {zone}")


def agent_cassette(path: Path, client: Any) -> Path:
    """Model call asks for get_weather, the tool runs, the next call carries its result; an
    unrelated tool call nothing asked for comes last."""
    with llmvcr.use_cassette(path):
        messages: list[Any] = [{"role": "user", "content": "What is the weather in Paris?"}]
        reply = client.messages.create(
            model="claude-sonnet-4-5", max_tokens=64, tools=[WEATHER], messages=messages
        )
        use = next(b for b in reply.content if b.type == "tool_use")
        result = get_weather(**use.input)
        messages += [
            {"role": "assistant", "content": reply.content},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": result}]},
        ]
        client.messages.create(model="claude-sonnet-4-5", max_tokens=64, tools=[WEATHER], messages=messages)
        with contextlib.suppress(LookupError):
            get_time("Mars/Olympus")
    return path


def test_each_tool_call_is_linked_to_the_tool_use_that_asked_for_it(
    tmp_path: Path, anthropic_client: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    cassette = llmvcr.load_cassette(agent_cassette(tmp_path / "agent.yaml", anthropic_client))
    entries = cassette.entries
    use_id = next(b["id"] for b in entries[0].response.body["content"] if b["type"] == "tool_use")
    assert asked_by(entries) == {1: AskedBy(0, use_id)}  # get_time: nothing asked for it
    tool = tool_call_of(entries[3])
    assert tool is not None and tool.raised == {
        "type": "builtins:LookupError",
        "message": "no zone Mars/Olympus",
    }
    assert tool_call_of(entries[0]) is None

    assert cli(["show", str(tmp_path / "agent.yaml")]) == 0
    shown = capsys.readouterr().out
    assert f'calls get_weather {{"city": "Paris", "unit": "C"}} (asked by call #0 [{use_id}])' in shown
    assert '→ returned "21C in Paris"' in shown
    assert "→ raised builtins:LookupError: no zone Mars/Olympus" in shown
    assert shown.index("[1] tool get_weather") < shown.index("[2] anthropic")

    calls = cassette_data(cassette, "llmvcr")["calls"]
    assert calls[1]["tool"]["asked_by"] == {"call": 0, "id": use_id}
    assert calls[1]["tool"]["returned"] == "21C in Paris"
    assert "asked_by" not in calls[3]["tool"] and calls[3]["tool"]["raised"]["type"] == "builtins:LookupError"


def test_a_tool_use_whose_arguments_differ_is_not_linked(tmp_path: Path, anthropic_client: Any) -> None:
    with llmvcr.use_cassette(tmp_path / "other.yaml"):
        messages: list[Any] = [{"role": "user", "content": "What is the weather in Paris?"}]
        anthropic_client.messages.create(
            model="claude-sonnet-4-5", max_tokens=64, tools=[WEATHER], messages=messages
        )
        get_weather("Rome")  # the model asked for Paris
    assert asked_by(llmvcr.load_cassette(tmp_path / "other.yaml").entries) == {}


@pytest.mark.slow
def test_a_tool_call_in_the_page_links_to_its_tool_use_and_its_result(
    tmp_path: Path, anthropic_client: Any
) -> None:
    page = tmp_path / "agent.html"
    assert cli(["view", str(agent_cassette(tmp_path / "agent.yaml", anthropic_client)), "-o", str(page)]) == 0
    driver = start()
    try:
        requests_made(driver)
        open_page(driver, page)
        js = driver.execute_script
        assert js("return document.querySelectorAll('section.call').length") == 4
        runs = js("return [...document.querySelectorAll('.tool-run')].map((n) => n.textContent)")
        assert len(runs) == 2
        assert "ran get_weather" in runs[0] and 'returned "21C in Paris"' in runs[0]
        assert "asked for by call #0" in runs[0]
        assert "raised builtins:LookupError: no zone Mars/Olympus" in runs[1] and "asked for" not in runs[1]
        use = js("return document.querySelector('.tool-use').id")
        result = js("return document.querySelector('.tool-result').id")
        assert js("return document.querySelector('.tool-run .to-use').getAttribute('href')") == "#" + use
        assert (
            js("return document.querySelector('.tool-run .to-result').getAttribute('href')") == "#" + result
        )
        assert requests_made(driver) == [page.resolve().as_uri()]
    finally:
        driver.quit()
