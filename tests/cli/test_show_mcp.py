"""``llmvcr show`` puts MCP requests on the same timeline as the model's calls."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llmvcr.cassette import Cassette, Entry, Request, Response
from llmvcr.cli import main
from llmvcr.storage.writer import save_cassette


def test_show_puts_mcp_requests_on_the_timeline_beside_the_model_calls(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "agent.yaml"
    model = Entry(
        "anthropic",
        Request(
            "POST", "/v1/messages", {"model": "claude-x", "messages": [{"role": "user", "content": "time?"}]}
        ),
        Response(200, {}, body={"role": "assistant", "content": [{"type": "text", "text": "asking"}]}),
        "",
    )
    tool = Entry(
        "mcp",
        Request("tools/call", "stdio:python clock_server.py", {"name": "now", "arguments": {}}),
        Response(
            200,
            {},
            body={"result": {"content": [{"type": "text", "text": "12:00"}]}},
            stream=[{"event": "server", "data": {}, "t": 1.0}],
        ),
        "",
    )
    cassette = Cassette(str(path))
    for entry in (model, tool):
        cassette.append(entry)
    save_cassette(str(path), cassette)
    assert main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "[1] mcp tools/call now · stdio:python clock_server.py · 200" in out
    assert "  → 12:00" in out and "(1 messages while in flight)" in out
    assert out.index("[0] anthropic") < out.index("[1] mcp")
