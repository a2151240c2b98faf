"""``llmvcr view`` shows no key in any form a file can hold one (a JSON object's key, the file's own
name, base64), and a file too deep to read is a clear error, listed with the others in a folder."""

from __future__ import annotations

import base64
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from llmvcr.cli import main as cli

DEMO = Path(__file__).resolve().parent.parent.parent / "cassettes"
ISLAND = re.compile(r'<script type="application/json" id="llmvcr-data">(.*?)</script>', re.S)

KEY = "sk-ant-api03-" + "Zq7" * 12
OPENAI = "sk-proj-" + "Ab9" * 16


def view(out: Path, *paths: Path) -> Path:
    assert cli(["view", *map(str, paths), "-o", str(out)]) == 0
    return out


def document(page: Path) -> dict[str, Any]:
    """The page's data island (the shared strings left as references: only names are read)."""
    found = ISLAND.search(page.read_text(encoding="utf-8"))
    assert found is not None
    return dict(json.loads(found.group(1)))


def leaky(tmp_path: Path, name: str, old: str, new: str) -> Path:
    path = tmp_path / name
    path.write_text((DEMO / "demo-anthropic.yaml").read_text().replace(old, new))
    return path


def test_a_key_used_as_a_json_object_key_is_redacted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = (DEMO / "demo-anthropic.yaml").read_text()
    assert "      max_tokens: 256" in demo
    path = leaky(tmp_path, "keyed.yaml", "      max_tokens: 256", f"      {KEY}: 1\n      max_tokens: 256")
    page = view(tmp_path / "p.html", path).read_text()
    assert KEY not in page and "REDACTED" in page
    assert "keyed.yaml: holds what looks like a credential" in capsys.readouterr().err


def test_a_base64_wrapped_key_is_redacted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wrapped = base64.b64encode(f"key={OPENAI}".encode()).decode()
    path = leaky(tmp_path, "b64.yaml", "Let me check the weather.", f"token {wrapped} end")
    page = view(tmp_path / "p.html", path).read_text()
    assert wrapped not in page and OPENAI not in page
    assert "b64.yaml: holds what looks like a credential" in capsys.readouterr().err


def test_a_file_named_like_a_key_is_shown_under_a_redacted_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    shutil.copy(DEMO / "demo-openai.yaml", folder / f"{KEY}.yaml")
    shutil.copy(DEMO / "demo-openai.yaml", folder / "plain.yaml")
    page = view(tmp_path / "p.html", folder)
    assert KEY not in page.read_text()
    names = [c["name"] for c in document(page)["data"]["cassettes"]]
    assert len(names) == 2 and "plain.yaml" in names
    said = capsys.readouterr().err
    assert "holds what looks like a credential" in said and KEY not in said  # nor in the terminal


def deep(path: Path) -> Path:
    path.write_text('{"version": 1, "entries": [' + "[" * 100_000 + "]" * 100_000 + "]}")
    return path


def test_deeply_nested_json_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["view", str(deep(tmp_path / "deep.json")), "-o", str(tmp_path / "p.html")]) == 2
    said = capsys.readouterr().err
    assert "deep.json" in said and "nested too deeply" in said and "RecursionError" not in said


def test_a_folder_lists_a_too_deep_file_beside_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(DEMO / "demo-openai.yaml", tmp_path / "good.yaml")
    deep(tmp_path / "deep.json")
    page = view(tmp_path / "p.html", tmp_path)
    assert "deep.json: not shown: " in capsys.readouterr().err
    rows = document(page)["data"]["cassettes"]
    assert [r["name"] for r in rows] == ["deep.json", "good.yaml"] and "nested too deeply" in rows[0]["error"]
    json.dumps(rows)  # the page's data is plain JSON
