"""A cassette recorded with the oldest supported SDKs replays with the installed (newest) ones.

``tests/cassettes/sdk-oldest.yaml`` was recorded by ``tests/make_old_sdk_cassette.py`` with
``anthropic`` 2.10.0 and ``openai`` 3.51.0 against the loopback server. Here the installed SDKs
replay it offline, and what the caller sees must equal a live run of the same scenario, with the
same SDKs, against the same (deterministic) server.
"""

from __future__ import annotations

import importlib.metadata
import shutil
import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = None

import pytest
from make_old_sdk_cassette import CASSETTE, clients, scenario

import llmvcr

ROOT = Path(__file__).resolve().parent.parent.parent


def _lower_bounds() -> dict[str, str]:
    if tomllib is None:
        pytest.skip("tomllib needs Python 3.11")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    bounds = {}
    for spec in project["optional-dependencies"]["all"]:
        name, _, rest = spec.split(";")[0].partition(">=")  # rapidyaml's platform marker aside
        bounds[name.strip()] = rest.split(",")[0].strip()
    return bounds


def test_the_shipped_cassette_was_recorded_with_the_oldest_supported_sdks() -> None:
    recorded = llmvcr.load_cassette(CASSETTE).recorded_with
    bounds = _lower_bounds()
    for sdk in ("anthropic", "openai"):
        # 2.10 in pyproject is 2.10.0 in recorded_with: the lower end of the supported range
        assert recorded[sdk].startswith(bounds[sdk] + "."), (sdk, recorded[sdk], bounds[sdk])
    data = CASSETTE.read_bytes()
    assert b"SENTINEL" not in data  # the three sentinel keys it was recorded with never reached the file


@pytest.mark.slow
def test_old_sdk_cassette_replays_with_the_installed_sdks(server: Any, tmp_path: Path, request: Any) -> None:
    # the scenario live first, with the installed SDKs, against the same deterministic server
    live = scenario(*clients(server.url))
    path = tmp_path / "sdk-oldest.yaml"
    shutil.copyfile(CASSETTE, path)  # replay never writes, but the committed file is not the test's to risk
    a, o, az = clients(server.url)
    before = server.request_count
    attempts = request.getfixturevalue("no_network")
    with llmvcr.recording(path, record_mode="none") as cassette:
        replayed = scenario(a, o, az)
    assert server.request_count == before and attempts == []
    assert cassette.unplayed == []  # every entry the old SDKs wrote answered a call of the new ones
    assert len(cassette) == 20
    assert replayed == live
    print(
        f"replayed with anthropic {importlib.metadata.version('anthropic')}, openai "
        f"{importlib.metadata.version('openai')}; recorded with anthropic {cassette.recorded_with['anthropic']}, "
        f"openai {cassette.recorded_with['openai']}"
    )


def test_the_oldest_ci_job_pins_exactly_the_lower_bounds_pyproject_allows() -> None:
    if tomllib is None:
        pytest.skip("tomllib needs Python 3.11")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    floors = {}
    for spec in [*project["dependencies"], *project["optional-dependencies"]["all"]]:
        name, _, rest = spec.split(";")[0].partition(">=")  # rapidyaml's platform marker aside
        low = rest.split(",")[0].strip()
        floors[name.strip().lower()] = low + ".0" if low.count(".") == 1 else low
    lines = (ROOT / ".ci" / "oldest.txt").read_text().splitlines()
    pins = dict(line.lower().split("==") for line in lines if line and not line.startswith("#"))
    assert {name: pins[name] for name in floors} == floors
    assert pins["wrapt"] >= "2.4"  # the first wrapt with unwrap_object, which every undo relies on


def test_the_wrapt_floor_has_what_the_patches_use() -> None:
    import wrapt

    assert callable(wrapt.unwrap_object) and callable(wrapt.wrap_function_wrapper)
