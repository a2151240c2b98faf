"""The token a request hands on to an MCP server the provider calls for the caller never reaches the
cassette, whatever its shape: the ``authorization_token`` of Anthropic's MCP connector
(``mcp_servers[]``) and the ``authorization`` and credential headers of OpenAI's remote MCP tool.
Each is a sentinel no key shape matches, sent through the real SDK to the loopback server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import llmvcr

CONNECTOR_TOKEN = "mcp-connector-oauth-sentinel-0001"  # lower case and digits: no key shape matches it
OPENAI_TOKEN = "mcp-remote-oauth-sentinel-0002"
HEADER_TOKEN = "mcp-remote-header-sentinel-0003"


def _anthropic(client: Any) -> str:
    reply = client.beta.messages.create(
        model="claude-sonnet-4-5",
        max_tokens=16,
        messages=[{"role": "user", "content": "what is on my calendar?"}],
        mcp_servers=[
            {
                "type": "url",
                "url": "https://calendar.example.com/mcp",
                "name": "calendar",
                "authorization_token": CONNECTOR_TOKEN,
            }
        ],
        betas=["mcp-client-2025-04-04"],
    )
    return str(reply.content[0].text)


def _openai(client: Any) -> str:
    reply = client.responses.create(
        model="gpt-4.1-mini",
        input="what is on my calendar?",
        tools=[
            {
                "type": "mcp",
                "server_label": "calendar",
                "server_url": "https://calendar.example.com/mcp",
                "authorization": OPENAI_TOKEN,
                "headers": {"X-Calendar-Token": HEADER_TOKEN, "X-Region": "eu"},
                "require_approval": "never",
            }
        ],
    )
    return str(reply.output_text)


def test_mcp_connector_tokens_never_reach_the_cassette_and_it_still_replays(
    tmp_path: Path, anthropic_client: Any, openai_client: Any
) -> None:
    path = tmp_path / "connector.yaml"
    with llmvcr.use_cassette(str(path), record_mode="once"):
        recorded = (_anthropic(anthropic_client), _openai(openai_client))
    text = path.read_text()
    for token in (CONNECTOR_TOKEN, OPENAI_TOKEN, HEADER_TOKEN):
        assert token not in text
    assert "calendar.example.com" in text and "X-Region" in text  # the rest of the request is kept
    with llmvcr.use_cassette(str(path), record_mode="none") as cassette:
        replayed = (_anthropic(anthropic_client), _openai(openai_client))
    assert replayed == recorded
    assert cassette.unplayed == []
