"""A cassette with MCP entries replayed where the mcp SDK is not installed: one clear error."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

import llmvcr
from llmvcr.cassette import Entry, Request, Response
from llmvcr.errors import LLMVCRError
from llmvcr.matching.rules import default_request_hash
from llmvcr.storage.files import load_cassette
from llmvcr.storage.writer import save_cassette


def _ask(client: Any) -> str:
    reply = client.messages.create(
        model="claude-x", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
    )
    return str(reply.content[0].text)


def test_unplayed_mcp_entries_without_the_mcp_sdk_raise_a_clear_error(
    tmp_path: Path, anthropic_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "agent.yaml"
    with llmvcr.use_cassette(str(path)):
        _ask(anthropic_client)
    cassette = load_cassette(str(path))
    tool = Request("tools/call", "stdio:python clock_server.py", {"name": "now", "arguments": {}})
    cassette.append(
        Entry(
            "mcp",
            tool,
            Response(200, {}, body={"result": {"content": []}}),
            default_request_hash(tool.normalised()),
        )
    )
    save_cassette(str(path), cassette)
    for name in ("mcp", "mcp.client"):  # not installed here (nor imported by an earlier test)
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(
        LLMVCRError, match=r"1 MCP entries were not used, and the mcp package is not installed"
    ):
        with llmvcr.use_cassette(str(path), record_mode="none"):
            assert _ask(anthropic_client) == "Echo: hi"
    with llmvcr.use_cassette(str(path), record_mode="none", on_unplayed="ignore"):
        _ask(anthropic_client)  # accepted when asked to
