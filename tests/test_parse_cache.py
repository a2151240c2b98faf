"""The parse cache of YAML cassettes: keyed by content, never trusted over the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import llmvcr
from llmvcr import parse_cache


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("LLMVCR_CACHE_DIR", str(folder))
    return folder


def _record(anthropic_client: Any, folder: Path, text: str) -> Path:
    path = folder / "c.yaml"
    with llmvcr.recording(path):
        anthropic_client.messages.create(
            model="claude-test", max_tokens=8, messages=[{"role": "user", "content": text}]
        )
    return path


def test_a_cassette_is_parsed_once_per_content(cache: Path, anthropic_client: Any) -> None:
    path = _record(anthropic_client, cache.parent, "hello")
    first = llmvcr.load_cassette(path)
    assert len(list(cache.glob("*.json"))) == 1
    again = llmvcr.load_cassette(path)
    assert [e.request.body for e in again.entries] == [e.request.body for e in first.entries]
    # an edit changes the bytes, so the file is parsed again and never served from the cache
    path.write_text(path.read_text().replace("hello", "edited"))
    edited = llmvcr.load_cassette(path)
    assert edited.entry(0).request.body["messages"][0]["content"] == "edited"
    assert len(list(cache.glob("*.json"))) == 2


def test_a_damaged_cache_entry_is_parsed_around_and_replaced(cache: Path, anthropic_client: Any) -> None:
    path = _record(anthropic_client, cache.parent, "hello")
    llmvcr.load_cassette(path)
    (entry,) = cache.glob("*.json")
    entry.write_bytes(b'{"version": 1, "entries": [')  # truncated
    assert llmvcr.load_cassette(path).entry(0).request.body["messages"][0]["content"] == "hello"
    assert entry.read_bytes().startswith(b'{"version":1')


def test_what_json_cannot_hold_is_not_cached(cache: Path, tmp_path: Path) -> None:
    path = tmp_path / "dated.yaml"
    path.write_text("version: 1\nrecorded_with: {}\nmetadata: {when: 2026-12-04}\nentries: []\n")
    assert str(llmvcr.load_cassette(path).metadata["when"]) == "2026-12-04"
    assert not cache.exists() or not list(cache.glob("*.json"))
    assert llmvcr.load_cassette(path).metadata["when"].year == 2026  # still a date, parsed again


def test_the_cache_can_be_turned_off_and_a_read_only_folder_costs_speed_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, anthropic_client: Any
) -> None:
    path = _record(anthropic_client, tmp_path, "hello")
    monkeypatch.setenv("LLMVCR_CACHE_DIR", "off")
    assert parse_cache.cache_folder(str(path)) is None
    assert len(llmvcr.load_cassette(path)) == 1
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    monkeypatch.setenv("LLMVCR_CACHE_DIR", str(locked / "inner"))
    try:
        assert len(llmvcr.load_cassette(path)) == 1  # whether or not this user may write there
    finally:
        locked.chmod(0o700)
