"""OpenTelemetry traces made live by the real instrumentations, converted by ``from_otel`` and replayed offline.

The main suite reads traces exported once (``tests/data/otel/``); here the instrumentations run
now, each in a process of its own as in production (``make_otel_traces.generate``: the agent of
``otel_agent.py`` calls the loopback server under the instrumentation, every span is written as
OTLP JSON). ``from_otel`` converts the export, and the agent runs again in this process, sockets
refused, answered from the cassette. The google-genai trace (its instrumentation takes
google-genai < 3 only, so it stays a fixture) is replayed through google-genai itself.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from llm_server import LLMServer
from make_otel_traces import generate
from otel_agent import anthropic_agent, openai_agent
from roundtrip import SENTINEL, sockets_refused

import llmvcr
from llmvcr.convert import ConversionWarning

DATA = Path(__file__).parent.parent / "data" / "otel"
ANSWER = "The tool said: 18C, sunny"
LIVE = [  # scenarios of make_otel_traces.py; the instrumentations' versions are pinned in requirements.txt
    "openinference-openai",
    "openinference-openai-stream",
    "openinference-anthropic",
    "openinference-anthropic-stream",
    "traceloop-openai",
    "traceloop-openai-stream",
    "anthropic-agent",  # traceloop's anthropic instrumentation with the SDK's own spans
    "anthropic-agent-stream",
    "logfire-openai",
    "logfire-openai-stream",
    "logfire-anthropic",
    "logfire-anthropic-stream",
]


@pytest.mark.parametrize("name", LIVE)
def test_a_live_trace_converts_like_its_fixture_and_replays_strictly(
    name: str, server: LLMServer, tmp_path: Path
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConversionWarning)  # nothing the trace lacks but:
        warnings.filterwarnings("ignore", "[^']*stream_options is not in the trace", ConversionWarning)
        cassette = llmvcr.from_otel(generate(name, tmp_path))
        fixture = llmvcr.from_otel(DATA / f"{name}.jsonl")
    # the committed fixture is what today's package writes
    assert [e.request for e in cassette.entries] == [e.request for e in fixture.entries]
    streamed = name.endswith("stream")
    assert [e.response.stream is not None for e in cassette.entries] == [streamed, streamed]
    client: Any
    if cassette.entries[0].provider == "anthropic":
        client, agent = (
            anthropic.Anthropic(api_key=SENTINEL, base_url=server.url, max_retries=0),
            anthropic_agent,
        )
    else:
        client, agent = (
            openai.OpenAI(api_key=SENTINEL, base_url=server.url + "/v1", max_retries=0),
            openai_agent,
        )
    before = server.request_count
    with sockets_refused() as attempts:
        replaying = llmvcr.create_replay_adapter(cassette, client)
        assert agent(replaying, streamed=streamed) == ANSWER
    assert attempts == [] and server.request_count == before
