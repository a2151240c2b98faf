"""google-genai's, aiohttp's and DSPy's private names survive a release that renames them, as declared.

The same simulated releases as ``tests/providers/test_internals.py`` (see ``sdk_release.py``), for the
packages only this suite installs: google-genai (its funnels), aiohttp (the seam google-genai's
async client sends through) and DSPy (where it vendors lm15).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from llm_server import LLMServer
from sdk_release import FRAMEWORKS, RENAMES, check_release, record_before

CASES = [(family, key) for family in FRAMEWORKS for key in RENAMES[family]]


@pytest.fixture(scope="module")
def before(server: LLMServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    sdks = ("anthropic", "openai", "google", "dspy")
    return record_before({"http": server.url}, sdks, tmp_path_factory.mktemp("before"))


@pytest.mark.parametrize(("family", "key"), CASES, ids=[f"{f}:{k}" for f, k in CASES])
def test_a_release_renaming_the_name_gives_the_declared_outcome(
    family: str, key: str, before: dict[str, Any], tmp_path: Path
) -> None:
    check_release(family, key, before, tmp_path)
