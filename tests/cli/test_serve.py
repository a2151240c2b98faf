"""``llmvcr serve``'s own decisions before the proxy runs: the extra checked first, the environment of
``serve -- COMMAND``'s command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from llmvcr.cli.serve import child_env
from llmvcr.providers.placeholder_keys import PLACEHOLDER

ROOT = Path(__file__).resolve().parent.parent.parent


def test_without_the_proxy_extra_serve_prints_one_line_and_exits_2_before_any_banner(tmp_path: Path) -> None:
    script = (
        "import sys; sys.modules['uvicorn'] = None; from llmvcr.cli import main; "  # as if not installed
        "sys.exit(main(['serve', '--port', '0', '--cassette-dir', sys.argv[1]]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "c")],
        capture_output=True, text=True, timeout=60, env={"PYTHONPATH": str(ROOT), "PATH": ""},
    )  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("llmvcr: error: llmvcr serve needs the proxy extra: ")
    assert (
        "pip install -e 'path/to/llmvcr[proxy]'" in lines[0]
        and "pip install 'pyllmvcr[proxy]'" not in lines[0]
    )


@pytest.mark.parametrize(
    ("ci", "record_mode", "placeholders"),
    [("true", None, True), ("", "none", True), ("true", "all", False), ("", None, False)],
)
def test_the_command_gets_a_placeholder_for_each_unset_key_only_when_every_call_replays(
    monkeypatch: pytest.MonkeyPatch, ci: str, record_mode: str | None, placeholders: bool
) -> None:
    monkeypatch.setenv("CI", ci)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-SENTINEL-set-by-the-user")
    for variable in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(variable, raising=False)
    env = child_env(record_mode, {"ANTHROPIC_BASE_URL": "http://127.0.0.1:1"})
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:1"
    assert env["OPENAI_API_KEY"] == "sk-proj-SENTINEL-set-by-the-user"  # a key given is never replaced
    assert (env.get("ANTHROPIC_API_KEY") == PLACEHOLDER) is placeholders
    assert (env.get("GEMINI_API_KEY") == PLACEHOLDER) is placeholders
