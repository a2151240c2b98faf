"""The documentation's frameworks page (docs/frameworks.md) is this folder's DOCS_PAGE.md, and its table
names the versions this suite pins and runs."""

from __future__ import annotations

import re
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).parent
SECTION = (HERE / "DOCS_PAGE.md").read_text()
DISTRIBUTIONS = {
    "pydantic-ai": "pydantic-ai-slim",
    "langchain-anthropic": "langchain-anthropic",
    "langchain-openai": "langchain-openai",
    "OpenAI Agents SDK": "openai-agents",
    "litellm": "litellm",
    "instructor": "instructor",
    "google-genai": "google-genai",
    "DSPy": "dspy",
}


def test_the_docs_page_holds_the_section() -> None:
    assert SECTION.strip() in (HERE.parent.parent / "docs" / "frameworks.md").read_text()


def test_each_row_names_the_version_pinned_and_installed() -> None:
    pins = {  # name[extra]==1.2.3  # a comment -> {name: 1.2.3}
        m[1]: m[2]
        for name in ("requirements.txt", "requirements-nodeps.txt")
        for m in re.finditer(r"^([A-Za-z0-9_.-]+)(?:\[[^]]*\])?==(\S+)", (HERE / name).read_text(), re.M)
    }
    rows = {
        m[1]: m[2]
        for m in re.finditer(r"^\| (?:\*\*)?([^|(`]+?)(?: \(`[^`]+`\))? \| ([^ |]+) \|", SECTION, re.M)
    }
    for label, distribution in DISTRIBUTIONS.items():
        assert rows.get(label) == pins[distribution] == version(distribution), label
