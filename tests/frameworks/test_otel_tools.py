"""OpenTelemetry GenAI ``execute_tool`` spans, as pydantic-ai's own instrumentation writes them live,
become tool entries: the trace of a production run replays with its model calls and its tools served,
the tool body never running (``from_otel(tools=True)``)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from llm_server import LLMServer
from make_otel_traces import spans_document
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai import Agent, InstrumentationSettings
from pydantic_ai.capabilities.instrumentation import Instrumentation
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from roundtrip import SENTINEL, sockets_refused

import llmvcr
from llmvcr.convert import ConversionWarning

RAN: list[str] = []


@llmvcr.tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    RAN.append(city)
    return f"21C in {city}"


@llmvcr.tool  # named as pydantic-ai names it, and the trace records it: broken_weather
def broken_weather(city: str) -> str:
    """The weather in a city."""
    RAN.append(city)
    raise ValueError(f"no station in {city}")


def agent(
    server: LLMServer, exporter: InMemorySpanExporter | None = None, version: int = 5, tool: Any = get_weather
) -> Agent[None, str]:
    model = AnthropicModel(
        "claude-sonnet-4-5", provider=AnthropicProvider(api_key=SENTINEL, base_url=server.url)
    )
    capabilities = []
    if exporter is not None:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # versions before 5 are deprecated, and still written
            settings = InstrumentationSettings(tracer_provider=provider, version=version)
        capabilities.append(Instrumentation(settings=settings))
    built = Agent(model, capabilities=capabilities)  # type: ignore[arg-type]
    built.tool_plain(tool)
    return built


@pytest.mark.parametrize("version", [5, 2])  # gen_ai.tool.call.*; tool_arguments / tool_response
async def test_a_production_trace_replays_with_its_tool_served(
    version: int, server: LLMServer, tmp_path: Path
) -> None:
    RAN.clear()
    exporter = InMemorySpanExporter()
    live = (await agent(server, exporter, version).run("What is the weather in Paris?")).output
    assert RAN == ["Paris"]
    export = tmp_path / "trace.json"
    export.write_text(json.dumps(spans_document(exporter.get_finished_spans())))
    assert SENTINEL not in export.read_text()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConversionWarning)  # max_tokens assumed: the trace lacks it
        cassette = llmvcr.from_otel(export, tools=True)
    assert [e.provider for e in cassette.entries] == ["anthropic", "tool", "anthropic"]
    assert cassette.entry(1).request.body == {"arguments": {"city": "Paris"}}
    assert cassette.entry(1).response.body == {"return": "21C in Paris"}
    path = tmp_path / "from-trace.yaml"
    llmvcr.save_cassette(path, cassette)
    before = server.request_count
    with sockets_refused() as attempts, llmvcr.use_cassette(path, record_mode="none", mode="sequential"):
        replayed = (await agent(server).run("What is the weather in Paris?")).output
    assert replayed == live and RAN == ["Paris"] and attempts == [] and server.request_count == before


async def test_a_tool_that_raised_in_production_raises_again(server: LLMServer, tmp_path: Path) -> None:
    RAN.clear()
    exporter = InMemorySpanExporter()
    with pytest.raises(ValueError, match="no station in Paris"):
        await agent(server, exporter, tool=broken_weather).run("What is the weather in Paris?")
    export = tmp_path / "failed.json"
    export.write_text(json.dumps(spans_document(exporter.get_finished_spans())))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConversionWarning)
        cassette = llmvcr.from_otel(export, tools=True)
    assert [e.provider for e in cassette.entries] == ["anthropic", "tool"]
    assert cassette.entry(1).response.status == 500
    assert cassette.entry(1).response.body["error"] == {
        "type": "builtins:ValueError",
        "message": "no station in Paris",
    }
    path = tmp_path / "failed.yaml"
    llmvcr.save_cassette(path, cassette)
    with (
        sockets_refused(),
        llmvcr.use_cassette(path, record_mode="none", mode="sequential"),
        pytest.raises(ValueError, match="no station in Paris"),
    ):
        await agent(server, tool=broken_weather).run("What is the weather in Paris?")
    assert RAN == ["Paris"]  # raised again from the recording: the body did not run
