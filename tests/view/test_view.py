"""``llmvcr view``, ``llmvcr diff --html`` and ``--llmvcr-report``: one self-contained page each,
checked in the data it holds and, in a real headless Chromium (tests marked slow), in its DOM."""

from __future__ import annotations

import json
import os
import re
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml
from browser import open_page, requests_made, start
from selenium.webdriver.support.ui import WebDriverWait
from weather_agent import agent

import llmvcr
from llmvcr.cli import main as cli
from llmvcr.freshness.playlog import PlayLog
from llmvcr.freshness.usage import cost_of, tokens_of
from llmvcr.view.cassettes import cassette_data, load
from llmvcr.view.page import island, share_strings

ROOT = Path(__file__).resolve().parent.parent.parent
DEMO = ROOT / "cassettes"
VCRPY = ROOT / "tests" / "data" / "vcrpy_real" / "llm-anthropic" / "test_prompt.yaml"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
HOSTILE = (
    '</script><script>window.pwned = 1</script><img src=x onerror="window.pwned = 2"> https://example.com/a'
)
ISLAND = re.compile(r'<script type="application/json" id="llmvcr-data">(.*?)</script>', re.S)


# -- helpers ------------------------------------------------------------------------------------------
def view(out: Path, *paths: Path | str, extra: tuple[str, ...] = ()) -> Path:
    assert cli(["view", *map(str, paths), "-o", str(out), *extra]) == 0
    return out


def document(page: Path) -> dict[str, Any]:
    """The page's data island, its shared strings put back where they were."""
    found = ISLAND.search(page.read_text(encoding="utf-8"))
    assert found is not None
    doc = json.loads(found.group(1))
    strings = doc["strings"]

    def back(node: Any) -> Any:
        if isinstance(node, str):
            return strings[int(node[1:])] if node[:1] == "\x01" else node[1:] if node[:1] == "\x02" else node
        if isinstance(node, dict):
            return {k: back(v) for k, v in node.items()}
        if isinstance(node, list):
            return [back(v) for v in node]
        return node

    return {**doc, "data": back(doc["data"])}


def outside_island(page: Path) -> str:
    return ISLAND.sub("", page.read_text(encoding="utf-8"))


def hostile_cassette(path: Path, client: Any) -> Path:
    """A call whose prompt and answer hold markup and URLs, with one image inline and one by URL."""
    with llmvcr.use_cassette(path, record_mode="all"):
        client.messages.create(
            model="claude-sonnet-4-5",
            max_tokens=64,
            messages=[
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": HOSTILE},
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": PNG},
                        },
                        {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}},
                    ],
                }
            ],
        )
    return path


def slow_stream(path: Path, client: Any) -> str:
    """A streamed answer of about 20 events, 50 ms apart as the server sent them; its text."""
    with llmvcr.use_cassette(path, record_mode="all"):
        with client.messages.stream(
            model="claude-sonnet-4-5",
            max_tokens=256,
            messages=[{"role": "user", "content": "__slow_stream__ __split_stream__ tell me about the sea"}],
        ) as stream:
            return "".join(stream.text_stream)


def agent_session(path: Path, client: Any, calls: int) -> Path:
    with llmvcr.use_cassette(path, record_mode="all"):
        agent(client, calls // 2)
    return path


# -- the data the page holds --------------------------------------------------------------------------
def test_calls_tokens_and_dollars_are_those_of_the_run_summary(tmp_path: Path) -> None:
    page = view(tmp_path / "demo.html", DEMO / "demo-anthropic.yaml")
    (shown,) = document(page)["data"]["cassettes"]
    cassette = llmvcr.load_cassette(DEMO / "demo-anthropic.yaml")
    assert [c["i"] for c in shown["calls"]] == list(range(len(cassette)))
    assert [(c["in"], c["out"]) for c in shown["calls"]] == [tokens_of(e) for e in cassette.entries]
    assert [c["usd"] for c in shown["calls"]] == [cost_of(e) for e in cassette.entries]
    assert shown["totals"]["in"] == sum(tokens_of(e)[0] for e in cassette.entries) > 0
    assert shown["seed"] == "demo-anthropic-v1"
    assert shown["recorded_with"]["anthropic"] == cassette.recorded_with["anthropic"]
    second = shown["calls"][1]
    assert second["parent"] == 0 and second["stream"] and second["events"] > 1
    assert second["new"][0]["content"][0]["type"] == "tool_result"  # only what the call adds


def test_a_response_holding_markup_stays_text_and_the_page_names_no_other_place(
    tmp_path: Path, anthropic_client: Any
) -> None:
    page = view(tmp_path / "p.html", hostile_cassette(tmp_path / "hostile.yaml", anthropic_client))
    text = page.read_text(encoding="utf-8")
    assert text.count("<script") == 2  # the data island and the page's own code, nothing from the data
    assert "</script><script>" not in ISLAND.search(text).group(1)  # type: ignore[union-attr]
    assert not re.search(r"https?://", outside_island(page))
    assert "default-src 'none'" in text and "'unsafe-inline'" not in text
    (call,) = document(page)["data"]["cassettes"][0]["calls"]
    content = call["new"][0]["content"]
    assert content[0]["text"] == HOSTILE
    assert {"type": "image", "media_type": "image/png", "data": PNG} in content
    assert {"type": "image", "url": "https://example.com/cat.png"} in content
    assert call["reply"]["content"][0]["text"] == "Echo: " + HOSTILE


def test_the_island_escapes_what_would_end_or_open_a_tag() -> None:
    text = island({"a": "</script><!-- & -->"})
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == {"a": "</script><!-- & -->"}


def test_a_repeated_string_is_stored_once() -> None:
    long = "a system prompt sent on every call of the session, " * 3
    data = {"calls": [{"system": long, "n": 1}, {"system": long, "text": "\x01 not a reference"}]}
    shared, table = share_strings(data)
    assert table == [long]
    assert shared["calls"][0]["system"] == shared["calls"][1]["system"] == "\x010"
    assert shared["calls"][1]["text"] == "\x02\x01 not a reference"


@pytest.mark.slow
def test_an_agent_session_is_one_growing_conversation_and_its_page_grows_linearly(
    tmp_path: Path, anthropic_client: Any
) -> None:
    sizes = {}
    for calls in (10, 20, 40):
        cassette = agent_session(tmp_path / f"agent{calls}.yaml", anthropic_client, calls)
        sizes[calls] = view(tmp_path / f"agent{calls}.html", cassette).stat().st_size
    shown = document(tmp_path / "agent40.html")["data"]["cassettes"][0]
    assert shown["layout"] == "linear" and len(shown["calls"]) == 40
    assert [c["parent"] for c in shown["calls"]] == [None, *range(39)]
    # each turn adds what is new: a question or a tool result (the answer is the reply)
    assert all(len(c["new"]) == 1 for c in shown["calls"])
    full = load(str(tmp_path / "agent40.yaml"))[0].entry(39).request.body["messages"]
    assert sum(len(c["new"]) for c in shown["calls"]) + 39 == len(full)  # + the 39 earlier replies
    assert "system" in shown["calls"][0] and all("system" not in c for c in shown["calls"][1:])
    # linear: 20 more calls add about twice what 10 more did, not four times
    assert 1.6 < (sizes[40] - sizes[20]) / (sizes[20] - sizes[10]) < 2.4
    assert (tmp_path / "agent40.html").read_text().count("You plan trips.") == 22  # the prompt, once


def test_unplayed_entries_of_the_last_run_are_marked(
    tmp_path: Path, anthropic_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLMVCR_STATE_DIR", str(tmp_path / "state"))
    path = tmp_path / "two.yaml"
    asked = ("first", "second")
    with llmvcr.use_cassette(path, record_mode="all"):
        for text in asked:
            anthropic_client.messages.create(
                model="claude-sonnet-4-5", max_tokens=16, messages=[{"role": "user", "content": text}]
            )
    with PlayLog(), llmvcr.use_cassette(path, record_mode="none", on_unplayed="ignore"):
        anthropic_client.messages.create(
            model="claude-sonnet-4-5", max_tokens=16, messages=[{"role": "user", "content": "second"}]
        )
    shown = document(view(tmp_path / "p.html", path))["data"]["cassettes"][0]
    assert [c["unplayed"] for c in shown["calls"]] == [True, False]
    assert shown["played"]["unplayed"] == [0] and shown["stale"]
    assert shown["totals"]["unplayed"] == 1


def test_a_folders_index_reads_the_play_store_once_and_marks_each_cassette(
    tmp_path: Path, anthropic_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLMVCR_STATE_DIR", str(tmp_path / "state"))
    folder = tmp_path / "cassettes"
    for name in ("a", "b", "c"):
        with llmvcr.use_cassette(folder / f"{name}.yaml", record_mode="all"):
            for text in ("first", "second"):
                anthropic_client.messages.create(
                    model="claude-sonnet-4-5", max_tokens=16, messages=[{"role": "user", "content": text}]
                )
    with PlayLog(), llmvcr.use_cassette(folder / "b.yaml", record_mode="none", on_unplayed="ignore"):
        anthropic_client.messages.create(
            model="claude-sonnet-4-5", max_tokens=16, messages=[{"role": "user", "content": "second"}]
        )
    opened: list[str] = []
    real_open = open

    def counting_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr("builtins.open", counting_open)
    shown = document(view(tmp_path / "p.html", folder))["data"]["cassettes"]
    monkeypatch.undo()
    stores = [f for f in opened if f.endswith(os.path.join("state", "plays.json"))]
    assert len(stores) == 1, stores  # not once per cassette
    assert [[c["unplayed"] for c in cassette["calls"]] for cassette in shown] == [
        [False, False],
        [True, False],
        [False, False],
    ]
    assert [bool(c["played"]) for c in shown] == [False, True, False]


def test_age_and_expiry_come_from_the_recording_date(tmp_path: Path, anthropic_client: Any) -> None:
    path = tmp_path / "dated.yaml"
    with llmvcr.use_cassette(path, record_mode="all"):
        anthropic_client.messages.create(
            model="claude-sonnet-4-5", max_tokens=16, messages=[{"role": "user", "content": "hi"}]
        )
    cassette, fmt = load(str(path))
    later = datetime.now(timezone.utc) + timedelta(days=45)
    old = cassette_data(cassette, fmt, now=later, max_age=timedelta(days=30))
    assert old["age"]["age"] == "45 days" and old["age"]["expired"] is True and old["stale"]
    fresh = cassette_data(cassette, fmt, max_age=timedelta(days=30))
    assert fresh["age"]["expired"] is False and not fresh["stale"]


def test_a_key_in_a_file_is_redacted_in_the_page_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = "sk-ant-api03-" + "Zq7" * 12
    path = tmp_path / "leaky.yaml"
    text = (DEMO / "demo-anthropic.yaml").read_text().replace("Let me check the weather.", f"key {key}")
    path.write_text(text)
    assert cli(["view", str(path), "-o", str(tmp_path / "p.html")]) == 0
    said = capsys.readouterr().err
    assert "leaky.yaml: holds what looks like a credential at entry 0: response.body.content[0].text" in said
    page = (tmp_path / "p.html").read_text()
    assert key not in page and "REDACTED:anthropic-key" in page


def test_a_folder_keeps_a_file_it_cannot_read_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(DEMO / "demo-openai.yaml", tmp_path / "good.yaml")
    (tmp_path / "broken.yaml").write_text("version: 1\nentries: [unclosed\n")
    page = view(tmp_path / "p.html", tmp_path)
    assert "broken.yaml: not shown: " in capsys.readouterr().err
    rows = document(page)["data"]["cassettes"]
    assert [r["name"] for r in rows] == ["broken.yaml", "good.yaml"]
    assert "error" in rows[0] and rows[1]["totals"]["calls"] == 2


def test_the_command_says_what_is_wrong(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["view", str(tmp_path / "nothing.yaml")]) == 2
    assert "nothing.yaml: no such file or folder" in capsys.readouterr().err
    assert cli(["view", str(DEMO), "-o", str(tmp_path)]) == 2
    assert "is a folder; -o names the page" in capsys.readouterr().err
    assert cli(["view", str(DEMO), "--max-age", "soon"]) == 2
    assert "--max-age" in capsys.readouterr().err


def test_diff_html_holds_each_differing_entry_and_its_changed_words(
    tmp_path: Path, anthropic_client: Any
) -> None:
    for name, word in (("a", "sunny"), ("b", "rainy")):
        with llmvcr.use_cassette(tmp_path / f"{name}.yaml", record_mode="all"):
            for text in ("same question", f"is it {word} in Paris today"):
                anthropic_client.messages.create(
                    model="claude-sonnet-4-5", max_tokens=16, messages=[{"role": "user", "content": text}]
                )
    page = tmp_path / "diff.html"
    assert cli(["diff", str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml"), "--html", str(page)]) == 1
    pairs = document(page)["data"]["pairs"]
    assert [p["same"] for p in pairs] == [True, False]
    rows = {r[0] for r in pairs[1]["compare"]["rows"]}
    assert "[1].request.body.messages[0].content" in rows
    words = pairs[1]["compare"]["words"]["[1].request.body.messages[0].content"]
    assert ["-", "sunny"] in words and ["+", "rainy"] in words and ["=", " in Paris today"] in words


# -- in a real browser -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def browser() -> Any:
    driver = start()
    try:
        yield driver
    finally:
        driver.quit()


def js(driver: Any, script: str) -> Any:
    return driver.execute_script(script)


@pytest.mark.slow
def test_the_demo_cassettes_in_a_browser(tmp_path: Path, browser: Any) -> None:
    page = view(tmp_path / "one.html", DEMO / "demo-anthropic.yaml")
    requests_made(browser)
    open_page(browser, page)
    assert js(browser, "return document.querySelectorAll('section.call').length") == 2
    tokens = js(browser, "const t = document.querySelector('.total-tokens').dataset; return [t.in, t.out]")
    cassette = llmvcr.load_cassette(DEMO / "demo-anthropic.yaml")
    assert [int(n) for n in tokens] == [sum(tokens_of(e)[i] for e in cassette.entries) for i in (0, 1)]
    # the tool call links to its result in the next call, and back
    assert js(browser, "return document.querySelector('.tool-use .to-result').getAttribute('href')") == (
        "#" + js(browser, "return document.querySelector('.tool-result').id")
    )
    browser.find_element("css selector", ".raw-box summary").click()  # built when it opens ("toggle")
    shown = WebDriverWait(browser, 30).until(lambda d: d.find_elements("css selector", ".raw-request"))
    raw = json.loads(shown[0].text)
    assert raw["request"]["body"] == cassette.entry(0).request.body
    assert requests_made(browser) == [page.resolve().as_uri()]  # the page itself, and nothing else


@pytest.mark.slow
def test_play_replays_a_stream_at_its_recorded_pace(
    tmp_path: Path, anthropic_client: Any, browser: Any
) -> None:
    text = slow_stream(tmp_path / "slow.yaml", anthropic_client)
    open_page(browser, view(tmp_path / "slow.html", tmp_path / "slow.yaml"))
    total = js(browser, "return DOC.data.cassettes[0].calls[0].events")
    assert total > 10
    played = "return Number(document.querySelector('.counter').dataset.played || 0)"
    # every count the counter shows, seen from inside the page (a poll from outside may miss them)
    js(
        browser,
        "window.seen = []; new MutationObserver(() => window.seen.push(Number(document.querySelector('.counter')"
        ".dataset.played))).observe(document.querySelector('.counter'), {attributes: true})",
    )
    browser.find_element("css selector", ".player .play").click()
    WebDriverWait(browser, 30).until(lambda d: js(d, played) == total)
    seen = js(browser, "return window.seen")
    assert any(0 < n < total for n in seen), seen  # it went event by event, not at once
    assert seen == sorted(seen)
    assert browser.find_element("css selector", ".played").text == text.strip()
    browser.find_element("css selector", "button.speed[data-speed='instant']").click()
    browser.find_element("css selector", ".player .play").click()
    assert js(browser, played) == total  # at once


@pytest.mark.slow
def test_the_filter_narrows_the_index(tmp_path: Path, browser: Any) -> None:
    folder = tmp_path / "suite"
    shutil.copytree(DEMO, folder / "demo")
    shutil.copytree(VCRPY.parent.parent, folder / "vcrpy")
    open_page(browser, view(tmp_path / "index.html", folder))
    rows = js(browser, "return document.querySelectorAll('table.cassettes tbody tr').length")
    assert rows == len(document(tmp_path / "index.html")["data"]["cassettes"]) > 10
    box = browser.find_element("css selector", "#filter")
    box.send_keys("openai")
    shown = js(
        browser,
        "return [...document.querySelectorAll('table.cassettes tbody tr')].filter(r => !r.hidden).map(r => r.cells[0].textContent)",
    )
    expected = [
        c["path"]
        for c in document(tmp_path / "index.html")["data"]["cassettes"]
        if "openai" in " ".join([c["path"], *c.get("models", []), *c.get("providers", [])]).lower()
    ]
    assert shown == expected and 0 < len(shown) < rows
    assert js(browser, "return Number(document.querySelector('#shown').dataset.shown)") == len(shown)
    box.clear()
    box.send_keys("demo-openai")
    browser.find_element("css selector", "table.cassettes tbody tr:not([hidden]) a.open").click()
    open_page(browser, tmp_path / "index.html", js(browser, "return location.hash"))
    visible = "return [...document.querySelectorAll('section.call')].filter(s => s.offsetParent).length"
    assert js(browser, visible) == 2


@pytest.mark.slow
def test_nothing_in_a_response_runs_and_no_request_leaves_the_page(
    tmp_path: Path, anthropic_client: Any, browser: Any
) -> None:
    page = view(tmp_path / "hostile.html", hostile_cassette(tmp_path / "hostile.yaml", anthropic_client))
    requests_made(browser)
    open_page(browser, page)
    assert js(browser, "return window.pwned === undefined")
    assert HOSTILE in browser.find_element("css selector", ".message.reply .text").text
    assert js(browser, "return document.querySelector('img.thumb').src").startswith("data:image/png;base64,")
    assert "not loaded" in browser.find_element("css selector", ".image.remote").text
    made = requests_made(browser)
    assert made and all(u.startswith(("file://", "data:")) for u in made), made


@pytest.mark.slow
def test_a_40_turn_agent_session_in_a_browser(tmp_path: Path, anthropic_client: Any, browser: Any) -> None:
    page = view(tmp_path / "agent.html", agent_session(tmp_path / "agent.yaml", anthropic_client, 40))
    open_page(browser, page)
    assert js(browser, "return document.querySelectorAll('section.call').length") == 40
    assert js(browser, "return document.querySelectorAll('.continues').length") == 39
    assert js(browser, "return document.querySelectorAll('.message.sent').length") == 40  # one new each
    assert js(browser, "return document.querySelectorAll('.tool-use .to-result:not(.pending)').length") == 20


@pytest.mark.slow
def test_a_real_vcrpy_cassette_in_a_browser(tmp_path: Path, browser: Any) -> None:
    open_page(browser, view(tmp_path / "vcr.html", VCRPY))
    assert js(browser, "return document.querySelectorAll('section.call').length") == 1
    assert "vcrpy (read in place)" in browser.find_element("css selector", ".meta").text
    assert "Captain" in browser.find_element("css selector", ".message.reply").text
    tokens = js(
        browser, "const t = document.querySelector('section.call .tokens').dataset; return [t.in, t.out]"
    )
    assert tokens == ["17", "10"]


@pytest.mark.slow
def test_diff_html_in_a_browser(tmp_path: Path, anthropic_client: Any, browser: Any) -> None:
    for name, word in (("a", "sunny"), ("b", "rainy")):
        with llmvcr.use_cassette(tmp_path / f"{name}.yaml", record_mode="all"):
            anthropic_client.messages.create(
                model="claude-sonnet-4-5",
                max_tokens=16,
                messages=[{"role": "user", "content": f"is it {word}"}],
            )
    page = tmp_path / "diff.html"
    cli(["diff", str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml"), "--html", str(page)])
    open_page(browser, page)
    changed = js(
        browser, "return [...document.querySelectorAll('.side.right .node.changed')].map(n => n.dataset.path)"
    )
    assert "[0].request.body.messages[0].content" in changed
    assert browser.find_element("css selector", ".side.left del").text == "sunny"
    assert browser.find_element("css selector", ".side.right ins").text == "rainy"


INNER = """
import os, anthropic, pytest

def ask(text):
    client = anthropic.Anthropic(api_key="sk-ant-inner-test-key-000", base_url=os.environ["LLM_URL"], max_retries=0)
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=16,
                                  messages=[{"role": "user", "content": text}]).content[0].text

@pytest.mark.llmvcr
def test_trip():
    assert ask("Plan a {word} trip to Lisbon in May") == "Echo: Plan a {word} trip to Lisbon in May"
"""


@pytest.mark.slow
def test_a_failed_replay_writes_the_report_the_error_names(
    pytester: pytest.Pytester, server: Any, monkeypatch: pytest.MonkeyPatch, browser: Any
) -> None:
    monkeypatch.setenv("LLM_URL", server.url)
    pytester.makepyfile(test_trip=INNER.replace("{word}", "short"))
    run = ("-p", "no:cacheprovider", "-p", "no:recording")
    pytester.runpytest_subprocess(*run, timeout=120).assert_outcomes(passed=1)
    pytester.makepyfile(test_trip=INNER.replace("{word}", "long"))
    result = pytester.runpytest_subprocess(
        *run, "--llmvcr-record-mode=none", "--llmvcr-report=out/report.html", timeout=120
    )
    result.assert_outcomes(failed=1)
    report = pytester.path / "out" / "report.html"
    assert f"Side by side in {report}" in result.stdout.str()
    (shown,) = document(report)["data"]["divergences"]
    assert shown["test"] == "test_trip.py::test_trip" and shown["entry"] == 0
    assert [r[0] for r in shown["compare"]["rows"]] == ["request.body.messages[0].content"]
    open_page(browser, report)
    for side in ("left", "right"):
        paths = js(
            browser,
            f"return [...document.querySelectorAll('.side.{side} .node.changed')].map(n => n.dataset.path)",
        )
        assert paths == ["request.body.messages[0].content"]
    assert browser.find_element("css selector", ".side.left del").text == "short"
    assert browser.find_element("css selector", ".side.right ins").text == "long"
    assert js(browser, "return document.querySelectorAll('section.call').length") == 1  # the cassette below


@pytest.mark.slow
def test_the_reports_cassette_says_what_this_run_did_not_play_not_what_the_last_green_run_played(
    pytester: pytest.Pytester, server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_URL", server.url)
    pytester.makepyfile(test_trip=INNER.replace("{word}", "short"))
    run = ("-p", "no:recording")  # the cache on: the green run records that it played every entry
    pytester.runpytest_subprocess(*run, timeout=120).assert_outcomes(passed=1)
    pytester.makepyfile(test_trip=INNER.replace("{word}", "long"))
    result = pytester.runpytest_subprocess(
        *run, "--llmvcr-record-mode=none", "--llmvcr-report=report.html", timeout=120
    )
    result.assert_outcomes(failed=1)
    (cassette,) = document(pytester.path / "report.html")["data"]["cassettes"]
    assert cassette["played"]["this_run"] is True and cassette["played"]["unplayed"] == [0]
    assert cassette["played"]["failed_tests"] == ["test_trip.py::test_trip"]
    assert [c["unplayed"] for c in cassette["calls"]] == [True] and cassette["stale"] is True


def test_the_report_is_named_from_where_pytest_started_and_per_xdist_worker(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from llmvcr.view.report import report_path

    started = SimpleNamespace(dir=tmp_path)
    controller = SimpleNamespace(invocation_params=started)
    worker = SimpleNamespace(invocation_params=started, workerinput={"workerid": "gw1"})
    assert report_path(controller, "out/report.html") == str(tmp_path / "out" / "report.html")  # type: ignore[arg-type]
    assert report_path(worker, "out/report.html") == str(tmp_path / "out" / "report-gw1.html")  # type: ignore[arg-type]


def test_other_recorders_files_are_shown_as_llmvcr_replays_them(tmp_path: Path) -> None:
    otel = ROOT / "tests" / "data" / "otel" / "anthropic-agent.jsonl"
    gz = (
        ROOT
        / "tests"
        / "data"
        / "vcrpy_real"
        / "langchain-layout"
        / "test_anthropic_message_create_legacy.yaml.gz"
    )
    shown = document(view(tmp_path / "p.html", otel, gz, VCRPY))["data"]["cassettes"]
    assert [c["format"] for c in shown] == ["otel", "langchain-gz", "vcrpy"]
    for cassette, path in zip(shown, (otel, gz, VCRPY), strict=True):
        assert len(cassette["calls"]) == len(load(str(path))[0]) > 0
        assert all("reply" in call for call in cassette["calls"])


# -- MCP calls beside the model turn that asked for them --------------------------------------------
WEATHER_TOOLS = [
    {
        "name": "weather",
        "description": "The weather in a city.",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }
]


def mcp_agent_cassette(path: Path, client: Any) -> Path:
    """A model turn that calls the weather tool, then the MCP connection that listed and ran it, then a second listing."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "weather in Paris?"}]
    with llmvcr.use_cassette(path, record_mode="all", layout="full"):
        reply = client.messages.create(
            model="claude-sonnet-4-5", max_tokens=64, tools=WEATHER_TOOLS, messages=messages
        )
    use = next(b for b in reply.content if b.type == "tool_use")
    document = yaml.safe_load(path.read_text())
    listed = {"tools": [{"name": "weather", "inputSchema": WEATHER_TOOLS[0]["input_schema"]}]}
    answer = {"content": [{"type": "text", "text": "21C in Paris"}]}
    for method, params, result in (
        ("tools/list", {}, listed),
        ("tools/call", {"name": use.name, "arguments": use.input}, answer),
        ("tools/list", {}, listed),  # a second connection: the linear layout holds its answer once
    ):
        document["entries"].append(
            {
                "provider": "mcp",
                "request": {"method": method, "path": "stdio:python weather_server.py", "body": params},
                "request_hash": "h",
                "response": {"status": 200, "body": {"result": result}},
            }
        )
    path.write_text(yaml.safe_dump(json.loads(json.dumps(document)), sort_keys=False))
    assert cli(["rehash", str(path)]) == 0
    return path


def test_a_tools_call_names_the_model_turn_that_asked_for_it(tmp_path: Path, anthropic_client: Any) -> None:
    cassette = mcp_agent_cassette(tmp_path / "agent.yaml", anthropic_client)
    data = document(view(tmp_path / "page.html", cassette))["data"]
    calls = data["cassettes"][0]["calls"] if "cassettes" in data else data["calls"]
    model, listed, called, again = calls
    assert again["mcp"]["method"] == "tools/list"
    raw = data["cassettes"][0]["raw"] if "cassettes" in data else data["raw"]
    assert raw[3]["response"]["body"]["result"] == {"same_as": 1}  # held once; the page shows it whole
    assert called["asked_by"] == 0 and model["served_by"] == [2]
    assert called["mcp"]["tool"] == "weather" and called["mcp"]["result"] == "21C in Paris"
    assert listed["mcp"] == {"server": "stdio:python weather_server.py", "method": "tools/list"}
    assert "asked_by" not in listed


@pytest.mark.slow
def test_mcp_calls_beside_their_model_turn_in_a_browser(
    tmp_path: Path, anthropic_client: Any, browser: Any
) -> None:
    page = view(tmp_path / "page.html", mcp_agent_cassette(tmp_path / "agent.yaml", anthropic_client))
    requests_made(browser)
    open_page(browser, page)
    asked = js(
        browser, "return [...document.querySelectorAll('.asked-by a')].map(a => a.getAttribute('href'))"
    )
    served = js(browser, "return [...document.querySelectorAll('.served-by a')].map(a => a.textContent)")
    assert [h.rsplit("-", 1)[1] for h in asked] == ["0"]
    assert served == ["#2 weather"]
    result = js(browser, "return document.querySelector('.mcp-result').textContent")
    assert result == "21C in Paris"
    browser.find_elements("css selector", ".raw-box summary")[-1].click()  # the second tools/list
    shown = WebDriverWait(browser, 30).until(lambda d: d.find_elements("css selector", ".raw-response"))
    assert json.loads(shown[-1].text)["body"]["result"]["tools"][0]["name"] == "weather"  # shown whole
    assert requests_made(browser) == [page.resolve().as_uri()]
