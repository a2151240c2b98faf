"""Packaging: the distribution name, the extras, the supported SDK range and the tox envs agree."""

from __future__ import annotations

import configparser
import importlib.metadata
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent

tomllib = pytest.importorskip("tomllib", reason="tomllib needs Python 3.11")

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _names(specs: list[str]) -> set[str]:
    return {re.split(r"[<>=!~\[; ]", s, maxsplit=1)[0].lower() for s in specs}


def test_distribution_name_extras_and_core_dependencies() -> None:
    assert PROJECT["name"] == "pyllmvcr"  # 'llmvcr' on PyPI is an unrelated project
    assert _names(PROJECT["dependencies"]) == {"wrapt", "orjson", "pyyaml", "rapidyaml"}
    # rapidyaml only where it has wheels: elsewhere pip would try to build its C++ sdist
    (rapidyaml,) = [s for s in PROJECT["dependencies"] if s.startswith("rapidyaml")]
    assert "platform_python_implementation == 'CPython'" in rapidyaml and "sys_platform" in rapidyaml
    extras = PROJECT["optional-dependencies"]
    assert _names(extras["anthropic"]) == {"anthropic"} and _names(extras["openai"]) == {"openai"}
    assert set(extras["all"]) == set(extras["anthropic"]) | set(extras["openai"])
    readme = (ROOT / "README.md").read_text()
    assert "the import name is `llmvcr`" in readme
    # not on PyPI yet: no claim that it is, no link to a page that does not exist
    assert "pip install pyllmvcr" not in readme and 'pip install "pyllmvcr' not in readme
    assert "pypi.org/project/pyllmvcr" not in readme + (ROOT / "pyproject.toml").read_text()
    assert "pip wheel . --no-deps" in readme and "pip wheel . --no-deps" in (ROOT / ".ci" / "run").read_text()
    # the installed distribution is this one, and says the same
    meta = importlib.metadata.metadata("pyllmvcr")
    assert {"anthropic", "openai", "all", "test"} <= set(meta.get_all("Provides-Extra") or [])


def test_supported_range_is_the_same_in_pyproject_readme_and_tox() -> None:
    lower = {}
    for spec in PROJECT["optional-dependencies"]["all"]:
        m = re.fullmatch(r"(\w+)>=([\d.]+),<(\d+)", spec.replace(" ", ""))
        assert m, spec
        lower[m.group(1)] = (m.group(2), m.group(3))
    readme = (ROOT / "README.md").read_text()
    for sdk, (low, below) in lower.items():
        assert f"`{sdk}` {low} to {int(below) - 1}.x" in readme, sdk
    tox = configparser.ConfigParser()
    tox.read(ROOT / "tox.ini")
    envs = {e.strip() for e in tox["tox"]["env_list"].split(",")}
    assert {"py310", "py311", "py312", "py313", "sdk-oldest", "sdk-newest"} <= envs
    pins = dict(
        line.strip().split("==") for line in tox["testenv:sdk-oldest"]["deps"].split("\n") if "==" in line
    )
    assert pins == {sdk: low + ".0" if low.count(".") == 1 else low for sdk, (low, _) in lower.items()}
    assert "python_requires" not in PROJECT and PROJECT["requires-python"] == ">=3.10"


@pytest.mark.slow
def test_a_wheel_ships_py_typed_and_runs_the_demo_from_anywhere(tmp_path: Path) -> None:
    import subprocess
    import sys
    import zipfile

    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path / "dist"), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (wheel,) = (tmp_path / "dist").glob("pyllmvcr-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "llmvcr/py.typed" in names
    assert {"llmvcr/cassettes/demo-anthropic.yaml", "llmvcr/cassettes/demo-openai.yaml"} <= set(names)
    static = {f"llmvcr/view/static/{p.name}" for p in (ROOT / "llmvcr" / "view" / "static").iterdir()}
    assert "llmvcr/view/static/page.html" in static and static <= set(names)  # the page llmvcr view writes
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import sys; sys.path.insert(0, {str(site)!r}); import llmvcr, runpy; "
            f"assert llmvcr.__file__.startswith({str(site)!r}); import llmvcr.view, os; "
            "llmvcr.view.write_view([os.path.join(os.path.dirname(llmvcr.__file__), 'cassettes')], 'page.html'); "
            "runpy.run_module('llmvcr.demo', run_name='__main__')",
        ],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "entries" in run.stdout
    assert "demo-openai.yaml" in (elsewhere / "page.html").read_text()


def test_licence_and_classifiers_are_declared() -> None:
    meta = importlib.metadata.metadata("pyllmvcr")
    assert meta["License-Expression"] == "MIT" and (ROOT / "LICENSE").read_text().startswith("MIT License")
    classifiers = set(meta.get_all("Classifier") or [])
    assert {
        "Typing :: Typed",
        "Topic :: Software Development :: Testing",
        "Framework :: Pytest",
    } <= classifiers
    assert {f"Programming Language :: Python :: 3.{n}" for n in (10, 11, 12, 13)} <= classifiers
