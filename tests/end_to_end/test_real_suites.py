"""Other projects' own pytest-recording suites switch to llmvcr, and every test that passed still passes
(issue 25). Each folder of ``tests/data/pytest_recording_suites`` holds a few of a public project's
tests with their cassettes, as the project wrote them (sources and licences in its SOURCES.md); the
project's package is installed at the version those tests were written for (``.[test]``).

Each suite is run as it is under pytest-recording, offline; then ``llmvcr migrate --write`` moves it
onto llmvcr and it runs again: in place, after ``llmvcr convert``, and with ``CI=true``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from llmvcr.cli import main

SUITES = Path(__file__).parent.parent / "data" / "pytest_recording_suites"
# a suite with a requirements.txt of its own needs SDK versions the main test environment does not
# have: .ci/run builds that environment and names the suite in LLMVCR_SUITES there
OWN_ENVIRONMENT = sorted(p.name for p in SUITES.iterdir() if (p / "requirements.txt").exists())
PROJECTS = (
    os.environ["LLMVCR_SUITES"].split(",")
    if os.environ.get("LLMVCR_SUITES")
    else sorted(p.name for p in SUITES.iterdir() if p.is_dir() and p.name not in OWN_ENVIRONMENT)
)


def passing(folder: Path, *args: str, ci: bool = False) -> set[str]:
    """The ids of the tests that pass, run as the project runs them (keys unset, no network needed)."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "CI"}
    env["LLM_USER_PATH"] = str(folder / ".llm")  # the llm tool's own settings stay in the copy
    if ci:
        env["CI"] = "true"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-rA",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            *args,
            "tests",
        ],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert "error" not in result.stdout.splitlines()[-1], result.stdout[-3000:]
    return set(re.findall(r"^PASSED (\S+)", result.stdout, re.MULTILINE))


@pytest.mark.parametrize("project", PROJECTS)
@pytest.mark.slow
def test_every_test_that_passed_under_pytest_recording_passes_on_llmvcr(
    project: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / project
    shutil.copytree(SUITES / project, folder)
    before = passing(folder, "-p", "no:llmvcr", "--block-network", "--record-mode=none")
    assert before, f"{project}: no test passes as it is under pytest-recording"

    monkeypatch.chdir(folder)
    assert main(["migrate", ".", "--write"]) == 0
    report = capsys.readouterr().out
    assert "@pytest.mark.vcr -> @pytest.mark.llmvcr" in report
    in_place = passing(folder, "--llmvcr-block-network")
    cassettes = str(folder / "tests" / "cassettes")
    assert main(["convert", cassettes, "--from", "vcrpy", "--to", "llmvcr-yaml", "-o", cassettes]) == 0
    capsys.readouterr()
    converted = passing(folder, "--llmvcr-block-network")
    on_ci = passing(folder, ci=True)

    row = f"{project}: {len(before)} before, {len(in_place)} in place, {len(converted)} converted, {len(on_ci)} on CI"
    print(row)
    assert before <= in_place, (row, sorted(before - in_place))
    assert before <= converted, (row, sorted(before - converted))
    assert before <= on_ci, (row, sorted(before - on_ci))


def test_every_suite_with_an_environment_of_its_own_runs_in_ci() -> None:
    ci = (Path(__file__).parent.parent.parent / ".ci" / "run").read_text()
    for project in OWN_ENVIRONMENT:
        assert f"tests/data/pytest_recording_suites/{project}/requirements.txt" in ci, project
        assert f"LLMVCR_SUITES={project}" in ci, project
