"""Every private SDK name llmvcr uses survives a release that renames it, with the declared outcome.

For each name in ``providers._internals.INTERNALS`` a fresh process renames it across its package
before anything is imported (``sdk_release.py``: the SDK still works, only llmvcr's reference
dangles), then opens cassettes, records plain, streamed and async calls against the loopback
server, replays them and a cassette recorded here before the rename, and does the same with
another SDK. The outcome must be the one the registry declares: a fallback that records and
replays as before (and says so once), or one clear ``SDKChangedError`` at the first call through
that SDK. Never a broken open, never a cassette of the other SDK harmed, never a call gone live.

The names of google-genai, aiohttp and DSPy's lm15 are renamed the same way in the frameworks
suite (``tests/frameworks/test_internals_frameworks.py``), which installs those packages.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from llm_server import LLMServer
from sdk_release import FRAMEWORKS, RENAMES, check_release, record_before

from llmvcr.providers import _internals

CASES = [(family, key) for family, keys in RENAMES.items() if family not in FRAMEWORKS for key in keys]


@pytest.fixture(scope="module")
def ws_server() -> Any:
    from llm_server import ResponsesWebSocketServer

    srv = ResponsesWebSocketServer().start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def before(server: LLMServer, ws_server: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    urls = {"http": server.url, "ws": ws_server.url}
    return record_before(urls, ("anthropic", "openai", "openai_ws"), tmp_path_factory.mktemp("before"))


def test_every_registered_name_has_a_simulated_release() -> None:
    assert {key for keys in RENAMES.values() for key in keys} == {i.key for i in _internals.INTERNALS}
    for family in FRAMEWORKS:  # each family is renamed here or in the frameworks suite, not in both
        assert not any(f == family for f, _ in CASES)


@pytest.mark.parametrize(("family", "key"), CASES, ids=[f"{f}:{k}" for f, k in CASES])
@pytest.mark.slow
def test_a_release_renaming_the_name_gives_the_declared_outcome(
    family: str, key: str, before: dict[str, Any], tmp_path: Path
) -> None:
    check_release(family, key, before, tmp_path)
