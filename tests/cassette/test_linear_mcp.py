"""The linear layout stores an MCP server's repeated answer once: an agent that opens a connection per
run (or per step) gets the same ``tools/list`` every time, and the file names the first one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

import llmvcr
from llmvcr.cassette.linear import Unpacker, pack, unpack
from llmvcr.cli import main as cli
from llmvcr.errors import CassetteFormatError

SERVER = "stdio:uvx mcp-server-time"
TOOLS = {
    "tools": [
        {
            "name": "get_current_time",
            "description": "Get current time in a specific timezone",
            "inputSchema": {
                "type": "object",
                "properties": {"timezone": {"type": "string", "description": "IANA timezone name"}},
                "required": ["timezone"],
            },
        },
        {
            "name": "convert_time",
            "description": "Convert time between timezones",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "source_timezone": {"type": "string"},
                    "time": {"type": "string", "description": "Time to convert in 24-hour format (HH:MM)"},
                    "target_timezone": {"type": "string"},
                },
                "required": ["source_timezone", "time", "target_timezone"],
            },
        },
    ]
}


def _mcp(method: str, params: Any, result: Any) -> dict[str, Any]:
    return {
        "provider": "mcp",
        "request": {"method": method, "path": SERVER, "body": params},
        "request_hash": "h",
        "response": {"status": 200, "body": {"result": result}},
    }


def _connections(count: int) -> list[dict[str, Any]]:
    entries = []
    for n in range(count):
        entries.append(_mcp("tools/list", {}, TOOLS))
        now = {"content": [{"type": "text", "text": f'{{"datetime": "2026-12-0{n + 1}T10:00:00+00:00"}}'}]}
        entries.append(
            _mcp("tools/call", {"name": "get_current_time", "arguments": {"timezone": "UTC"}}, now)
        )
    return entries


def test_a_repeated_tools_list_answer_is_written_once_and_loads_equal(tmp_path: Path) -> None:
    full = tmp_path / "full.yaml"
    document = json.loads(json.dumps({"version": 1, "entries": _connections(5)}))  # no YAML aliases
    full.write_text(yaml.safe_dump(document, sort_keys=False))
    assert cli(["rehash", str(full)]) == 0
    linear = tmp_path / "linear.yaml"
    assert cli(["convert", str(full), "--to", "llmvcr-yaml", "--layout", "linear", "-o", str(linear)]) == 0
    stored = yaml.safe_load(linear.read_text())
    assert stored["version"] == 2
    results = [
        e["response"]["body"]["result"] for e in stored["entries"] if e["request"]["method"] == "tools/list"
    ]
    assert results[0] == TOOLS and results[1:] == [{"same_as": 0}] * 4
    assert linear.stat().st_size < full.stat().st_size * 0.7  # four answers of about 600 bytes saved
    loaded, original = llmvcr.load_cassette(linear), llmvcr.load_cassette(full)
    assert loaded.entries == original.entries


def test_only_equal_answers_are_shared_and_unpacking_entry_by_entry_agrees() -> None:
    entries = _connections(3)
    entries[4]["response"]["body"]["result"] = {"tools": TOOLS["tools"][:1]}  # the third listed one tool
    packed, version = pack(entries)
    assert version == 2
    assert packed[2]["response"]["body"]["result"] == {"same_as": 0}
    assert packed[4]["response"]["body"]["result"] == {"tools": TOOLS["tools"][:1]}
    assert all("same_as" not in str(e["response"]["body"]) for e in packed[1::2])  # answers that differ
    assert unpack(packed, "x.yaml") == entries
    unpacker = Unpacker(packed, "x.yaml")
    assert [unpacker.entry(i) for i in reversed(range(len(packed)))] == entries[::-1]


def test_a_broken_answer_reference_names_the_entry_and_field() -> None:
    packed, _ = pack(_connections(2))
    packed[2]["response"]["body"]["result"] = {"same_as": 1}  # entry 1 is a tools/call: no tools there
    packed[1]["provider"] = "anthropic"
    with pytest.raises(CassetteFormatError, match=r"response\.body\.result\.same_as"):
        unpack(packed, "x.yaml")
