"""Every Python block of the README and of the pages in docs/ runs here, so an example that stops
working fails CI.

Each block is compiled under its page's path with its real line numbers, so a failure's traceback
shows the page's lines (a small collector of our own: pytest-examples rebuilds tracebacks with frames
made through ctypes, which pytest 9's reporter crashes on, and mktestdocs runs blocks with neither
line numbers nor fixtures). A block gets what a reader's machine would give it: an API key and a
base URL for each SDK (the loopback server's, so nothing leaves the machine), a fresh working folder
holding the demo cassettes under ``cassettes/`` and an OpenTelemetry export as ``trace.json``, and
llmvcr's settings, put back afterwards.

A fence may carry settings after the language (GitHub reads the first word only; the site's hook in
``docs/hooks.py`` removes the rest):

- ``test="pytest"``: the block is a test module. It runs in an inner pytest session, which records;
  then again with ``CI=true``, which must replay every call without reaching the server.
- ``same_as="tests/x.py"``: the block is that file, byte for byte; the file's own tests run it.
- ``test="skip" reason="..."``: not run, for what cannot run here (a live API); the reason is required.

Shell, YAML and output blocks use their own fence (``bash``, ``yaml``, ``text``) and are not run.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import textwrap
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import ANTHROPIC_SENTINEL, OPENAI_SENTINEL

from llmvcr.options import settings

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^( *)```python(?:[ \t]+([^\n]*))?\n(.*?)^\1```", re.M | re.S)
SETTING = re.compile(r'(\w+)="([^"]*)"')
SETTINGS = {"test", "same_as", "reason"}
# the OpenTelemetry export the OTel page replays: an OpenInference-traced Anthropic agent
TRACE = ROOT / "tests" / "data" / "otel" / "openinference-anthropic.jsonl"
MOST_SKIPPED = 3  # used sparingly: a block that is not run is a block that can go stale


@dataclass(frozen=True)
class Example:
    """One ```python block: where it is, its settings and its source (dedented, as a list item's)."""

    page: Path
    line: int  # of the fence's first code line, counted from 1
    settings: dict[str, str]
    source: str

    def __str__(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    def code(self) -> Any:
        """Compiled under the page's path at its own lines, so a traceback shows the page."""
        return compile("\n" * (self.line - 1) + self.source, str(self.page), "exec")


def find_examples(page: Path) -> list[Example]:
    text = page.read_text(encoding="utf-8")
    return [
        Example(
            page,
            text.count("\n", 0, m.start(3)) + 1,
            dict(SETTING.findall(m.group(2) or "")),
            textwrap.dedent(m.group(3)),
        )
        for m in FENCE.finditer(text)
    ]


EXAMPLES = [e for page in PAGES for e in find_examples(page)]
RUN = [e for e in EXAMPLES if e.settings.get("test") != "skip" and "same_as" not in e.settings]


@pytest.fixture
def reader(
    server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cassette_dir: Path
) -> Iterator[list[Any]]:
    """A reader's machine: keys and base URLs for the SDKs, a working folder with the demo cassettes,
    llmvcr's settings restored afterwards, and every socket to a host off this machine refused."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_SENTINEL)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_SENTINEL)
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
    shutil.copytree(ROOT / "cassettes", cassette_dir)
    shutil.copy(TRACE, tmp_path / "trace.json")
    monkeypatch.chdir(tmp_path)
    for field in ("cassette_dir", "cassette_format", "record_mode", "default_record_mode"):
        monkeypatch.setattr(settings, field, getattr(settings, field))
    refused: list[Any] = []
    connect = socket.socket.connect

    def loopback_only(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else address
        if isinstance(host, str) and host not in ("127.0.0.1", "localhost", "::1"):
            refused.append(address)
            raise OSError(f"an example tried to leave the machine: {address!r}")
        return connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", loopback_only)
    yield refused


def _param(example: Example) -> Any:
    """Two inner pytest sessions take seconds: such a block runs with the slow tests (CI runs both)."""
    slow = example.settings.get("test") == "pytest"
    return pytest.param(example, id=str(example), marks=[pytest.mark.slow] if slow else [])


@pytest.mark.parametrize("example", [_param(e) for e in RUN])
def test_example_runs(example: Example, request: Any, tmp_path: Path) -> None:
    folders = [tmp_path]
    if example.settings.get("test") == "pytest":
        pytester = request.getfixturevalue("pytester")
        refused = request.getfixturevalue("reader")
        request.getfixturevalue("monkeypatch").chdir(pytester.path)  # an inner session collects the cwd
        folders.append(pytester.path)
        _run_as_tests(example, pytester, request)
    else:
        refused = request.getfixturevalue("reader")
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            exec(example.code(), {"__name__": "__main__", "__file__": str(example.page)})
        # an example shows the clean path: llmvcr has nothing to warn its reader about
        assert not [w for w in said if type(w.message).__module__.startswith("llmvcr")], [
            str(w.message) for w in said
        ]
    assert refused == []  # no socket was opened to a host off this machine
    written = [p for f in folders for p in f.rglob("*") if p.suffix in (".yaml", ".json", ".jsonl")]
    assert written and not [p for p in written if b"SENTINEL" in p.read_bytes()]  # no key reached a file


def _run_as_tests(example: Example, pytester: pytest.Pytester, request: Any) -> None:
    """Record in one inner session, then replay in a second with CI set: no request reaches the server."""
    server = request.getfixturevalue("server")
    module = str(pytester.makepyfile(test_example=example.source))
    recorded = pytester.runpytest("-p", "no:recording", "-p", "no:cacheprovider", module)
    outcomes = recorded.parseoutcomes()
    assert outcomes.get("passed", 0) >= 1 and set(outcomes) <= {"passed", "warnings"}, recorded.stdout.str()
    before = server.request_count
    monkeypatch = request.getfixturevalue("monkeypatch")
    monkeypatch.setenv("CI", "true")
    replayed = pytester.runpytest("-p", "no:recording", "-p", "no:cacheprovider", module)
    assert replayed.parseoutcomes() == outcomes, replayed.stdout.str()
    assert server.request_count == before  # every call answered from the cassettes just written


@pytest.mark.parametrize("example", [e for e in EXAMPLES if "same_as" in e.settings], ids=str)
def test_a_block_shown_as_a_file_is_that_file(example: Example) -> None:
    """The file's own tests run it (tests/providers/test_providers.py runs the adapters the providers page shows)."""
    path = ROOT / example.settings["same_as"]
    assert example.source.strip() == path.read_text().strip()


def test_settings_are_known_and_a_skipped_block_says_why() -> None:
    skipped = [e for e in EXAMPLES if e.settings.get("test") == "skip"]
    for example in EXAMPLES:
        settings_ = example.settings
        assert set(settings_) <= SETTINGS, (str(example), settings_)
        assert settings_.get("test", "pytest") in ("pytest", "skip"), str(example)
    assert all(e.settings.get("reason") for e in skipped), [str(e) for e in skipped]
    assert len(skipped) <= MOST_SKIPPED, [str(e) for e in skipped]


def test_every_page_is_searched_and_holds_examples() -> None:
    """The finder reads the README and the docs; a fence it cannot read would go untested silently."""
    assert len(RUN) >= 10 and {e.page.name for e in EXAMPLES} >= {"README.md", "usage.md", "matching.md"}
    for page in PAGES:
        text = page.read_text()
        assert not re.search(r"^ *```(?:py|Python|python3)\b", text, re.M), f"{page}: write ```python"
        fences = text.count("```python")
        assert fences == sum(1 for e in EXAMPLES if e.page == page), page
    assert os.environ.get("ANTHROPIC_API_KEY") is None  # the fixture's keys never outlive a test
