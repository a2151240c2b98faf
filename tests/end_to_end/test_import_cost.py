"""What a process loads: PyYAML, rapidyaml and the aiohttp/lm15 seams only when something needs them.

The aiohttp seam is loaded by a post-import hook when aiohttp itself is imported (anthropic imports
it whenever it is installed), so it counts as unused only in a process that never imported aiohttp.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from llm_server import LLMServer

import llmvcr

OPTIONAL = ("yaml", "ryml", "llmvcr.providers._aiohttp", "llmvcr.providers._lm15")

REPLAY = """
import sys, anthropic, llmvcr, llmvcr.pytest_plugin
client = anthropic.Anthropic(api_key="sk-ant-test", base_url=sys.argv[2], max_retries=0)
with llmvcr.use_cassette(sys.argv[1], record_mode="none"):
    client.messages.create(model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
print(" ".join(m for m in sys.argv[3:] if m in sys.modules))
print("aiohttp" in sys.modules)
"""


def _loaded_after_replay(path: Path, server: LLMServer) -> list[str]:
    root = str(Path(__file__).resolve().parent.parent.parent)
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("CI", None)
    done = subprocess.run(
        [sys.executable, "-c", REPLAY, str(path), server.url, *OPTIONAL],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    loaded, aiohttp_imported = done.stdout.splitlines()
    names = loaded.split()
    if aiohttp_imported == "True":  # the seam for a library the process did import is not unused
        assert "llmvcr.providers._aiohttp" in names
        names.remove("llmvcr.providers._aiohttp")
    return names


@pytest.mark.slow
def test_replaying_a_json_cassette_imports_no_yaml_and_no_unused_seam(
    tmp_path: Path, anthropic_client: Any, server: LLMServer
) -> None:
    path = tmp_path / "chat.json"
    with llmvcr.recording(path):
        anthropic_client.messages.create(
            model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
        )
    assert _loaded_after_replay(path, server) == []


@pytest.mark.slow
def test_a_yaml_cassette_still_loads_pyyaml_when_it_parses_one(
    tmp_path: Path, anthropic_client: Any, server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "chat.yaml"
    with llmvcr.recording(path):
        anthropic_client.messages.create(
            model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
        )
    monkeypatch.setenv("LLMVCR_STATE_DIR", str(tmp_path / "state"))  # a cold parse cache: it is parsed
    loaded = _loaded_after_replay(path, server)
    assert "yaml" in loaded or "ryml" in loaded
    assert "llmvcr.providers._lm15" not in loaded


IMPORTS = """
import sys, llmvcr, llmvcr.pytest_plugin
print(" ".join(sorted(m for m in sys.modules if m.startswith("llmvcr.convert"))))
if len(sys.argv) > 1:  # a vcrpy cassette read in place: its reader is imported now, on first use
    cassette = llmvcr.load_cassette(sys.argv[1])
    print(len(cassette), cassette.read_only is not None, "llmvcr.convert.vcrpy" in sys.modules)
"""

VCRPY_FILE = (
    Path(__file__).parent.parent / "data" / "vcrpy_real" / "openllmetry" / "test_anthropic_tools_legacy.yaml"
)


def _fresh_process(*args: str) -> list[str]:
    root = str(Path(__file__).resolve().parent.parent.parent)
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("CI", None)
    done = subprocess.run(
        [sys.executable, "-c", IMPORTS, *args], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_importing_llmvcr_and_its_plugin_imports_no_converter() -> None:
    # the converters cost 6-9 ms of import; storage reaches the vcrpy reader by name when it needs it
    assert _fresh_process() == [""]


def test_a_vcrpy_cassette_still_reads_in_place_in_a_fresh_process() -> None:
    loaded, read = _fresh_process(str(VCRPY_FILE))
    assert loaded == ""
    count, read_only, imported = read.split()
    assert int(count) > 0
    assert (read_only, imported) == ("True", "True")
