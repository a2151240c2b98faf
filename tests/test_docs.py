"""The README is a front door and the pages behind it are whole: its Quickstart is what CI runs, each of
its links opens a page, every page is in the site's navigation, and the command's reference is
generated from its parser. (The site itself is built with ``mkdocs build --strict`` in .ci/run; the
Python blocks run in test_docs_examples.py.)"""

from __future__ import annotations

import argparse
import importlib.util
import re
from pathlib import Path
from typing import Any

import yaml

from llmvcr.cli import build_parser
from llmvcr.cli.reading import SOURCES, TARGETS

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = ROOT / "docs"
QUICKSTART = """```bash
pip install -e '.[all]' && python -m llmvcr.demo
pip install -e '.[test]' && python -m pytest -q -n 2 -m "not slow"
```"""


def _hooks() -> Any:
    spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _nav_pages(nav: Any) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [p for item in nav for p in _nav_pages(item)]
    return [p for value in nav.values() for p in _nav_pages(value)]


def test_the_readme_is_a_front_door_under_250_lines() -> None:
    assert len(README.splitlines()) < 250
    for section in (
        "## Installation",
        "## Quickstart",
        "## Use it in your tests",
        "## CI",
        "## Re-recording",
    ):
        assert section in README
    assert "## Migrating from pytest-recording" in README and "## Other languages" in README
    assert "## Where to read more" in README


def test_the_quickstart_is_the_two_commands_ci_runs() -> None:
    section = README[README.index("## Quickstart") :]
    assert section[section.index("```bash") :].startswith(QUICKSTART)
    demo, tests = QUICKSTART.splitlines()[1:3]
    ci = (ROOT / ".ci" / "run").read_text()
    assert tests.removeprefix("pip install -e '.[test]' && ") in ci and "python -m llmvcr.demo" in ci
    assert demo.startswith("pip install -e '.[all]'")


def test_the_migration_and_options_pages_are_one_click_from_the_readme() -> None:
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README)
    assert "docs/migration.md" in links and "docs/options.md" in links
    for link in links:
        if link.startswith(("http://", "https://")):
            continue
        target = ROOT / link
        assert target.exists(), link


def test_every_page_is_in_the_navigation_and_every_entry_is_a_page() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    nav = _nav_pages(config["nav"])
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert sorted(nav) == sorted(pages)
    assert {"options.md", "cassette-format.md", "matching.md", "pytest.md", "freshness.md"} <= pages
    assert {"frameworks.md", "providers.md", "safety.md", "faults.md", "otel.md", "cli.md"} <= pages
    assert {"benchmarks.md", "changelog.md", "migration.md", "ci.md"} <= pages
    assert {"vcrpy.md", "cassetter.md", "regista.md", "agentskit.md", "otel.md"} <= {
        p.removeprefix("converters/") for p in pages if p.startswith("converters/")
    }


def test_the_commands_reference_is_generated_from_the_parser() -> None:
    hooks = _hooks()
    parser = build_parser()
    reference = hooks.cli_reference(parser)
    subcommands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert len(subcommands) >= 10
    for name, sub in subcommands.items():
        assert f"### `llmvcr {name}`" in reference, name
        for action in sub._actions:
            for option in action.option_strings:
                assert f"`{option}" in reference or f", {option}" in reference, (name, option)
    page = (DOCS / "cli.md").read_text()
    generated = page.partition(hooks.CLI_BEGIN)[2].partition(hooks.CLI_END)[0]
    assert generated.strip() == reference.strip(), "the command changed: run python docs/hooks.py"
    assert hooks.with_reference(page) == page  # the page is what the writer writes, on GitHub too
    assert reference in hooks.on_page_markdown(page, None, None, None)  # and in the site


def test_the_sites_hook_leaves_the_runners_fence_settings_out() -> None:
    hooks = _hooks()
    page = 'a\n\n```python test="pytest"\nx = 1\n```\n\n   ```python same_as="tests/x.py"\n   y\n   ```\n'
    assert (
        hooks.on_page_markdown(page, None, None, None)
        == "a\n\n```python\nx = 1\n```\n\n   ```python\n   y\n   ```\n"
    )


def test_every_format_the_command_reads_or_writes_has_a_row_on_the_converters_page() -> None:
    page = (DOCS / "converters" / "index.md").read_text()
    for name in SOURCES:
        assert f"`--from {name}`" in page, name
    for name in TARGETS:
        assert f"`--to {name}`" in page, name
