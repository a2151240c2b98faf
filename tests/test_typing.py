"""A user's own test file, checked by ``mypy --strict``: llmvcr is typed for its users."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

USER_FILE = """
from __future__ import annotations

import anthropic
import pytest

import llmvcr


@llmvcr.use_cassette("bug-427", record_mode="none", ignore=["$.metadata.user_id"])
def test_sync() -> None:
    client = anthropic.Anthropic(api_key="test")
    reply = client.messages.create(
        model="claude-sonnet-4-5", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
    )
    assert reply.content


@llmvcr.use_cassette("bug-427")
async def test_async() -> None:
    client = anthropic.AsyncAnthropic(api_key="test")
    await client.messages.count_tokens(model="claude-sonnet-4-5", messages=[{"role": "user", "content": "hi"}])


def test_recording() -> None:
    with llmvcr.recording("bug-427", seed="bug-repro-#427") as cassette:
        pass
    entries: list[llmvcr.Entry] = cassette.entries
    assert isinstance(entries, list)


def test_replay_adapter() -> None:
    client: anthropic.Anthropic = llmvcr.create_replay_adapter("bug-427", anthropic.Anthropic(api_key="x"))
    assert client is not None


@pytest.mark.llmvcr
def test_marker() -> None:
    pass
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """llmvcr as a user's environment has it: the wheel's files on the path (an editable install
    is an import hook that type checkers cannot follow)."""
    tmp = tmp_path_factory.mktemp("wheel")
    root = Path(__file__).resolve().parent.parent
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp / "dist"), str(root)],
        check=True,
        capture_output=True,
    )
    (wheel,) = (tmp / "dist").glob("pyllmvcr-*.whl")
    zipfile.ZipFile(wheel).extractall(tmp / "site")
    return tmp / "site"


def mypy(installed: Path, folder: Path, name: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(installed)}
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", name],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
def test_a_user_test_file_passes_mypy_strict(installed: Path, tmp_path: Path) -> None:
    (tmp_path / "test_user.py").write_text(USER_FILE)
    result = mypy(installed, tmp_path, "test_user.py")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_a_misused_option_is_a_type_error(installed: Path, tmp_path: Path) -> None:
    """The options are typed: a wrong record mode is caught before the test runs."""
    (tmp_path / "test_bad.py").write_text(
        'import llmvcr\n\n\n@llmvcr.use_cassette("x", record_mode="sometimes")\ndef test_x() -> None:\n    pass\n'
    )
    result = mypy(installed, tmp_path, "test_bad.py")
    assert result.returncode == 1 and "record_mode" in result.stdout, result.stdout
