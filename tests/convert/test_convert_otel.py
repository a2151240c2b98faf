"""OpenTelemetry GenAI traces -> cassettes: traces exported by the real instrumentations, replayed offline.

The fixtures in tests/data/otel/ were exported by ``tests/make_otel_traces.py``: the agent of
``otel_agent.py`` run against the loopback server under ``opentelemetry-instrumentation-anthropic``
and ``opentelemetry-instrumentation-openai-v2`` with content capture on (versions in
``versions.json``). Here each trace is converted and the same agent is run again with its calls
answered from the converted cassette, sockets refused, and must reach the same final answer.
"""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from conftest import ANTHROPIC_SENTINEL, OPENAI_SENTINEL
from llm_server import LLMServer
from otel_agent import anthropic_agent, google_agent, openai_agent

import llmvcr
from llmvcr.convert import ConversionWarning
from llmvcr.convert.otel import from_otel
from llmvcr.convert.otlp import is_otlp, read_export
from llmvcr.errors import CassetteFormatError

DATA = Path(__file__).parent.parent / "data" / "otel"
ANSWER = "The tool said: 18C, sunny"


def exported_answer(name: str) -> str:
    """The agent's final answer as the trace recorded it (the last call's output text)."""
    spans, _ = read_export(DATA / f"{name}.jsonl")
    outputs = [
        s["attributes"]["gen_ai.output.messages"]
        for s in spans
        if "gen_ai.output.messages" in s["attributes"]
    ]
    last = json.loads(outputs[-1]) if isinstance(outputs[-1], str) else outputs[-1]
    return "".join(p["content"] for p in last[0]["parts"] if p["type"] == "text")


def strictly(name: str) -> llmvcr.Cassette:
    """Convert, failing on any ConversionWarning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConversionWarning)
        return from_otel(DATA / f"{name}.jsonl")


def replay(
    cassette: Any, client: Any, agent: Any, server: LLMServer, no_network: list[Any], **options: Any
) -> str:
    before = server.request_count
    replaying = llmvcr.create_replay_adapter(cassette, client, **options)
    answer = agent(replaying)
    assert server.request_count == before, "a replayed call reached the server"
    assert no_network == []
    return str(answer)


@pytest.mark.parametrize("name", ["anthropic-agent", "anthropic-agent-stream"])
def test_anthropic_agent_replays_strictly_from_its_trace(
    name: str, server: LLMServer, no_network: list[Any], tmp_path: Path
) -> None:
    cassette = strictly(name)  # nothing the trace lacks for these calls: no warning at all
    assert [e.provider for e in cassette.entries] == ["anthropic", "anthropic"]
    first, second = (e.request.body for e in cassette.entries)
    assert first["messages"] == [{"role": "user", "content": "What is the weather in Paris?"}]
    assert first["system"] == "You are a weather bot." and first["max_tokens"] == 256
    assert first["tools"][0]["name"] == "get_weather"
    assert second["messages"][2]["content"][0]["type"] == "tool_result"
    # saved and loaded like any cassette (what `llmvcr convert --from otel` writes)
    path = tmp_path / "session.yaml"
    llmvcr.save_cassette(path, cassette)
    client = anthropic.Anthropic(api_key=ANTHROPIC_SENTINEL, base_url=server.url, max_retries=0)
    streamed = name.endswith("stream")
    answer = replay(path, client, lambda c: anthropic_agent(c, streamed=streamed), server, no_network)
    assert answer == exported_answer(name) == ANSWER


@pytest.mark.parametrize("name", ["openai-agent", "openai-agent-events", "openai-agent-legacy"])
def test_openai_agent_replays_from_its_trace(name: str, server: LLMServer, no_network: list[Any]) -> None:
    with pytest.warns(ConversionWarning) as caught:
        cassette = from_otel(DATA / f"{name}.jsonl", stream=False)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 2 and all("tool definitions" in m for m in messages)  # one per entry
    assert "entry 0" in messages[0] and "entry 1" in messages[1]
    assert [e.provider for e in cassette.entries] == ["openai", "openai"]
    client = openai.OpenAI(api_key=OPENAI_SENTINEL, base_url=server.url + "/v1", max_retries=0)
    assert replay(cassette, client, openai_agent, server, no_network, mode="sequential") == ANSWER
    # strict, with the one field openai-v2 does not capture left out of the fingerprint
    with pytest.warns(ConversionWarning):
        cassette = from_otel(DATA / f"{name}.jsonl")  # not streamed: the default when the trace does not say
    answer = replay(cassette, client, openai_agent, server, no_network, ignore=["tools"])
    assert answer == exported_answer("openai-agent") == ANSWER


def test_a_streamed_openai_call_is_a_stream_when_the_user_says_so(
    server: LLMServer, no_network: list[Any]
) -> None:
    """openai-v2 records no sign of streaming: stream=True writes chunk streams for every call."""
    with pytest.warns(ConversionWarning) as caught:
        cassette = from_otel(DATA / "openai-agent-stream.jsonl", stream=True)
    assert not [w for w in caught if "whether this call was streamed" in str(w.message)]
    assert all(e.request.body["stream"] and e.response.stream for e in cassette.entries)
    assert not any(e.response.as_asked for e in cassette.entries)
    client = openai.OpenAI(api_key=OPENAI_SENTINEL, base_url=server.url + "/v1", max_retries=0)
    answer = replay(
        cassette, client, lambda c: openai_agent(c, streamed=True), server, no_network, ignore=["tools"]
    )
    assert answer == exported_answer("openai-agent-stream") == ANSWER


@pytest.mark.parametrize("name", ["openai-agent", "openai-agent-stream", "openai-agent-events"])
def test_a_call_the_trace_does_not_say_streamed_replays_as_the_app_asks(
    name: str, server: LLMServer, no_network: list[Any], tmp_path: Path
) -> None:
    """openai-v2 records nothing that says a call streamed: each entry is the plain call marked
    as_asked, and a session mixing a plain call and a stream=True call replays through the real SDK."""
    with pytest.warns(ConversionWarning) as caught:
        cassette = from_otel(DATA / f"{name}.jsonl")
    assert not [w for w in caught if "was streamed" in str(w.message)]
    assert all(e.response.as_asked and e.response.stream is None for e in cassette.entries)
    assert all("stream" not in e.request.body for e in cassette.entries)
    path = tmp_path / "session.yaml"
    llmvcr.save_cassette(path, cassette)
    assert path.read_text().count("as_asked: true") == 2  # the mark survives the file
    client = openai.OpenAI(api_key=OPENAI_SENTINEL, base_url=server.url + "/v1", max_retries=0)
    for turns in ([False, True], [True, False]):
        answer = replay(
            path, client, lambda c, t=turns: openai_agent(c, streamed=t), server, no_network, ignore=["tools"]
        )
        assert answer == ANSWER


def test_openai_strict_replay_without_ignore_names_the_missing_tools(
    server: LLMServer, no_network: list[Any]
) -> None:
    with pytest.warns(ConversionWarning):
        cassette = from_otel(DATA / "openai-agent.jsonl")
    client = openai.OpenAI(api_key=OPENAI_SENTINEL, base_url=server.url + "/v1", max_retries=0)
    with pytest.raises(llmvcr.ReplayDivergence, match="tools"):
        replay(cassette, client, openai_agent, server, no_network)


@pytest.mark.parametrize("name", ["openai-agent-events", "openai-agent-legacy"])
def test_content_from_log_records_equals_content_from_span_attributes(name: str) -> None:
    """openai-v2 2.4 with event_only puts the attributes on a log record; before 2.4 one event per message."""
    with pytest.warns(ConversionWarning):
        spans = from_otel(DATA / "openai-agent.jsonl")
        logs = from_otel(DATA / f"{name}.jsonl")
    assert [e.request.body for e in spans.entries] == [e.request.body for e in logs.entries]
    assert [e.response.body for e in spans.entries] == [e.response.body for e in logs.entries]
    assert [e.request_hash for e in spans.entries] == [e.request_hash for e in logs.entries]


@pytest.mark.parametrize(
    ("name", "switch"),
    [
        ("anthropic-content-off", "TRACELOOP_TRACE_CONTENT=true"),
        ("openai-content-off", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only"),
    ],
)
def test_a_trace_without_content_is_an_error_saying_how_to_turn_it_on(name: str, switch: str) -> None:
    with pytest.raises(CassetteFormatError, match="without message content") as raised:
        from_otel(DATA / f"{name}.jsonl")
    assert switch in str(raised.value) and name in str(raised.value)


def test_trace_and_span_ids_go_to_the_metadata_and_the_two_spans_of_a_call_merge() -> None:
    spans, _ = read_export(DATA / "anthropic-agent.jsonl")
    cassette = strictly("anthropic-agent")
    meta = cassette.metadata["otel"]
    assert meta["trace_ids"] == list({s["traceId"] for s in spans})
    chat = [s for s in spans if s["name"] == "anthropic.chat"]
    sdk = [s for s in spans if s["name"] == "anthropic.messages.create"]
    assert [c["span_id"] for c in meta["calls"]] == [s["spanId"] for s in chat]
    assert [c["spans"][1] for c in meta["calls"]] == [s["spanId"] for s in sdk]  # the SDK's own span, merged
    # the SDK span's request id (not in the instrumentation's span) reaches the response headers
    assert [e.response.headers["request-id"] for e in cassette.entries] == [
        s["attributes"]["anthropic.request.id"] for s in sdk
    ]
    assert [e.response.body["usage"]["input_tokens"] for e in cassette.entries] == [78, 155]


def test_a_streamed_call_is_paced_by_its_span() -> None:
    spans, _ = read_export(DATA / "anthropic-agent-stream.jsonl")
    cassette = strictly("anthropic-agent-stream")
    chat = [s for s in spans if s["name"] == "anthropic.chat"]
    sdk = [s for s in spans if s["name"] == "anthropic.messages.create"]
    for entry, span, own in zip(cassette.entries, chat, sdk, strict=True):
        times = [event["t"] for event in entry.response.stream or []]
        assert times == sorted(times)
        assert times[0] == round(own["attributes"]["gen_ai.response.time_to_first_chunk"] * 1000, 1)
        duration = (int(span["endTimeUnixNano"]) - int(span["startTimeUnixNano"])) / 1e6
        assert times[-1] == pytest.approx(duration, abs=0.2)


def test_one_document_a_list_of_documents_and_json_lines_read_alike(tmp_path: Path) -> None:
    documents = [json.loads(line) for line in (DATA / "anthropic-agent.jsonl").read_text().splitlines()]
    single = tmp_path / "trace.json"
    single.write_text(json.dumps(documents[0], indent=2))
    lines = strictly("anthropic-agent")
    for source in (single, documents, documents[0]):
        cassette = from_otel(source)
        assert [e.request_hash for e in cassette.entries] == [e.request_hash for e in lines.entries]


def test_several_traces_merge_with_a_warning_and_trace_id_picks_one() -> None:
    documents = [
        json.loads(line)
        for name in ("anthropic-agent", "anthropic-agent-stream")
        for line in (DATA / f"{name}.jsonl").read_text().splitlines()
    ]
    with pytest.warns(ConversionWarning, match="2 traces"):
        both = from_otel(documents)
    assert len(both) == 4
    wanted = both.metadata["otel"]["trace_ids"][1]
    one = from_otel(documents, trace_id=wanted)
    assert len(one) == 2 and one.metadata["otel"]["trace_ids"] == [wanted]
    assert all(e.request.body.get("stream") for e in one.entries)


def test_not_an_export_is_a_format_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.json"
    path.write_text('{"hello": 1}')
    assert not is_otlp(path) and not is_otlp(tmp_path / "missing.json")
    assert all(is_otlp(p) for p in DATA.glob("*.jsonl"))
    with pytest.raises(CassetteFormatError, match="not an OTLP JSON export"):
        from_otel(path)
    path.write_text('{"resourceSpans": []}\nnot json\n')
    with pytest.raises(CassetteFormatError, match="line 2"):
        from_otel(path)


def test_replay_speed_plays_a_stream_at_the_pace_of_its_spans(
    server: LLMServer, no_network: list[Any]
) -> None:
    cassette = strictly("anthropic-agent-stream")
    recorded = sum((e.response.stream or [])[-1]["t"] for e in cassette.entries) / 1000
    client = anthropic.Anthropic(api_key=ANTHROPIC_SENTINEL, base_url=server.url, max_retries=0)
    started = time.perf_counter()
    answer = replay(
        cassette, client, lambda c: anthropic_agent(c, streamed=True), server, no_network, replay_speed=1.0
    )
    assert answer == ANSWER
    assert time.perf_counter() - started >= recorded * 0.9


def test_a_failed_call_replays_as_the_same_sdk_error(server: LLMServer, no_network: list[Any]) -> None:
    """The production session ended in a 529: the replay ends in the SDK's own OverloadedError."""
    with pytest.warns(ConversionWarning, match=r"entry 1 .*failed \(529\)"):
        cassette = from_otel(DATA / "anthropic-overloaded.jsonl")
    assert [e.response.status for e in cassette.entries] == [200, 529]
    assert len(cassette.metadata["otel"]["calls"][1]["spans"]) == 2  # the SDK's span had no response id
    client = anthropic.Anthropic(api_key=ANTHROPIC_SENTINEL, base_url=server.url, max_retries=0)
    with pytest.raises(anthropic.APIStatusError, match="Overloaded") as raised:
        replay(
            cassette, client, lambda c: anthropic_agent(c, tool_result="__status_529__"), server, no_network
        )
    assert raised.value.status_code == 529 and type(raised.value).__name__ == "OverloadedError"


# -- the dialects real instrumentations write (versions in versions.json) -------------------------
# name: (provider, the instrumentation scopes of each call)
DIALECTS = {
    "traceloop-legacy-anthropic": ("anthropic", ["opentelemetry.instrumentation.anthropic 0.47.5"]),
    "traceloop-legacy-anthropic-stream": ("anthropic", ["opentelemetry.instrumentation.anthropic 0.47.5"]),
    "traceloop-legacy-openai": ("openai", ["opentelemetry.instrumentation.openai.v1 0.47.5"]),
    "traceloop-legacy-openai-stream": ("openai", ["opentelemetry.instrumentation.openai.v1 0.47.5"]),
    "traceloop-openai": ("openai", ["opentelemetry.instrumentation.openai.v1 0.62.4"]),
    "traceloop-openai-stream": ("openai", ["opentelemetry.instrumentation.openai.v1 0.62.4"]),
    "openinference-openai": ("openai", ["openinference.instrumentation.openai 0.1.66"]),
    "openinference-openai-stream": ("openai", ["openinference.instrumentation.openai 0.1.66"]),
    "openinference-anthropic": ("anthropic", ["openinference.instrumentation.anthropic 3.1.0"]),
    "openinference-anthropic-stream": ("anthropic", ["openinference.instrumentation.anthropic 3.1.0"]),
    "logfire-openai": ("openai", ["logfire.openai 5.4.0"]),
    "logfire-openai-stream": ("openai", ["logfire.openai 5.4.0"]),
    "logfire-anthropic": ("anthropic", ["logfire.anthropic 5.4.0"]),
    "logfire-anthropic-stream": ("anthropic", ["logfire.anthropic 5.4.0"]),
}


def agent_of(provider: str, server: LLMServer, streamed: bool) -> tuple[Any, Any]:
    """The real SDK client at the loopback server, and the agent that drives it."""
    if provider == "anthropic":
        client: Any = anthropic.Anthropic(api_key=ANTHROPIC_SENTINEL, base_url=server.url, max_retries=0)
        return client, lambda c: anthropic_agent(c, streamed=streamed)
    client = openai.OpenAI(api_key=OPENAI_SENTINEL, base_url=server.url + "/v1", max_retries=0)
    return client, lambda c: openai_agent(c, streamed=streamed)


@pytest.mark.parametrize("name", list(DIALECTS))
def test_each_dialect_replays_its_agent_strictly(name: str, server: LLMServer, no_network: list[Any]) -> None:
    """traceloop's gen_ai.prompt.N, OpenInference's llm.input_messages.N and Logfire's streamed calls
    become the requests the agent sends, byte for byte in what the fingerprint covers, streamed or not
    as the trace says."""
    provider, scopes = DIALECTS[name]
    streamed = name.endswith("stream")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cassette = from_otel(DATA / f"{name}.jsonl")
    assert not [w for w in caught if "whether this call was streamed" in str(w.message)]
    assert [e.provider for e in cassette.entries] == [provider, provider]
    assert [e.response.stream is not None for e in cassette.entries] == [streamed, streamed]
    assert [bool(e.request.body.get("stream")) for e in cassette.entries] == [streamed, streamed]
    assert [c["scopes"][0] for c in cassette.metadata["otel"]["calls"]] == [scopes[0]] * 2
    client, agent = agent_of(provider, server, streamed)
    assert replay(cassette, client, agent, server, no_network) == ANSWER


@pytest.mark.parametrize("name", ["openinference-anthropic", "traceloop-legacy-anthropic"])
def test_the_anthropic_instrumentations_content_is_read_not_called_missing(name: str) -> None:
    """Both hold the content beside the anthropic SDK's own (content-less) spans: no capture error."""
    cassette = from_otel(DATA / f"{name}.jsonl")
    first, second = (e.request.body for e in cassette.entries)
    assert first["system"] == "You are a weather bot." and first["max_tokens"] == 256
    assert first["messages"] == [{"role": "user", "content": "What is the weather in Paris?"}]
    assert second["messages"][2]["content"][0]["tool_use_id"] == second["messages"][1]["content"][1]["id"]
    calls = cassette.metadata["otel"]["calls"]
    assert all(len(c["spans"]) == 2 and c["scopes"][1].startswith("com.anthropic.sdk.python") for c in calls)


def test_traceloops_oldest_names_read_alike(tmp_path: Path) -> None:
    """Before gen_ai.prompt.N, traceloop wrote the same attributes as llm.prompts.N / llm.completions.N."""
    path = tmp_path / "oldest.jsonl"
    text = (DATA / "traceloop-legacy-openai.jsonl").read_text()
    path.write_text(
        text.replace('"gen_ai.prompt.', '"llm.prompts.').replace('"gen_ai.completion.', '"llm.completions.')
    )
    assert "gen_ai.prompt." not in path.read_text()
    oldest, legacy = from_otel(path), from_otel(DATA / "traceloop-legacy-openai.jsonl")
    assert [e.request for e in oldest.entries] == [e.request for e in legacy.entries]
    assert [e.response for e in oldest.entries] == [e.response for e in legacy.entries]


def test_openinference_keeps_the_request_body_the_sdk_was_given() -> None:
    spans, _ = read_export(DATA / "openinference-openai-stream.jsonl")
    given = [json.loads(s["attributes"]["input.value"]) for s in spans if "input.value" in s["attributes"]]
    cassette = strictly("openinference-openai-stream")
    assert [e.request.body for e in cassette.entries] == given
    assert given[0]["stream_options"] == {"include_usage": True}


def test_the_anthropic_sdks_own_spans_in_content_mode_are_a_trace() -> None:
    """anthropic 2.17 with ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE=content: messages, no tools."""
    with pytest.warns(ConversionWarning, match="tool definitions"):
        cassette = from_otel(DATA / "anthropic-sdk-only.jsonl")
    assert [e.response.stream for e in cassette.entries] == [None, None]  # the SDK says: not streamed
    assert cassette.entries[1].response.body["content"][0]["text"] == ANSWER
    assert cassette.metadata["otel"]["calls"][0]["scopes"] == ["com.anthropic.sdk.python 2.17.0"]


def test_a_session_mixing_plain_and_streamed_calls_keeps_each_as_it_was(
    server: LLMServer, no_network: list[Any]
) -> None:
    """No all-or-nothing stream=: each call is written as its own span says."""
    documents = [
        json.loads(line)
        for name in ("openinference-openai", "openinference-openai-stream")
        for line in (DATA / f"{name}.jsonl").read_text().splitlines()
    ]
    with pytest.warns(ConversionWarning, match="2 traces"):
        cassette = from_otel(documents)
    assert [e.response.stream is not None for e in cassette.entries] == [False, False, True, True]
    client = openai.OpenAI(api_key=OPENAI_SENTINEL, base_url=server.url + "/v1", max_retries=0)
    replaying = llmvcr.create_replay_adapter(cassette, client)
    assert openai_agent(replaying) == openai_agent(replaying, streamed=True) == ANSWER
    assert no_network == []
    # stream= still overrides every call
    with pytest.warns(ConversionWarning):
        every = from_otel(documents, stream=True)
    assert all(e.response.stream for e in every.entries)


# -- google-genai ----------------------------------------------------------------------------------
def test_google_genai_spans_become_gemini_entries() -> None:
    """opentelemetry-instrumentation-google-genai: generateContent and its stream, as the SDK sends them."""
    plain = strictly("google-agent")
    streamed = strictly("google-agent-stream")
    for cassette, method in ((plain, "generateContent"), (streamed, "streamGenerateContent")):
        assert [e.provider for e in cassette.entries] == ["google", "google"]
        assert {e.request.path for e in cassette.entries} == {f"/v1beta/models/gemini-2.5-flash:{method}"}
    assert [e.request.query for e in streamed.entries] == [(("alt", "sse"),)] * 2
    first, second = (e.request.body for e in plain.entries)
    # what google-genai 2.34 sent for the agent's two calls (tools left out: see below)
    assert first["contents"] == [{"parts": [{"text": "What is the weather in Paris?"}], "role": "user"}]
    assert second["contents"][1:] == [
        {"parts": [{"functionCall": {"args": {"city": "Paris"}, "name": "get_weather"}}], "role": "model"},
        {
            "parts": [{"functionResponse": {"name": "get_weather", "response": {"result": "18C, sunny"}}}],
            "role": "user",
        },
    ]
    assert first["systemInstruction"] == {"parts": [{"text": "You are a weather bot."}], "role": "user"}
    assert first["generationConfig"] == {"maxOutputTokens": 256}
    assert first["tools"][0]["functionDeclarations"][0]["name"] == "get_weather"
    call = plain.entries[0].response.body["candidates"][0]
    assert call["content"]["parts"] == [{"functionCall": {"args": {"city": "Paris"}, "name": "get_weather"}}]
    events = streamed.entries[1].response.stream or []
    text = "".join(p["text"] for e in events for p in e["data"]["candidates"][0]["content"]["parts"])
    assert text == 'The tool said: {"result": "18C, sunny"}'
    assert events[-1]["data"]["candidates"][0]["finishReason"] == "STOP"
    assert events[-1]["data"]["usageMetadata"]["promptTokenCount"] == 149


def test_a_google_genai_trace_replays_through_google_genai(
    server: LLMServer, no_network: list[Any], tmp_path: Path
) -> None:
    """The traces were made with google-genai 2.34 (its instrumentation takes < 3), which calls
    /v1beta; 3.x calls /v1: replayed in sequence, plain and streamed."""
    from google import genai
    from google.genai import types

    client = genai.Client(api_key="placeholder", http_options=types.HttpOptions(base_url=server.url))
    for name in ("google-agent", "google-agent-stream"):
        path = tmp_path / f"{name}.yaml"
        llmvcr.save_cassette(path, strictly(name))
        before = server.request_count
        with llmvcr.use_cassette(path, record_mode="none", mode="sequential"):
            answer = google_agent(client, streamed=name.endswith("stream"))
        assert answer == 'The tool said: {"result": "18C, sunny"}'
        assert server.request_count == before and no_network == []


# -- a trace without content, or without a model call, is an error that says what was seen ---------
@pytest.mark.parametrize(
    ("name", "scope", "switch"),
    [
        (
            "anthropic-content-off",
            "opentelemetry.instrumentation.anthropic 0.62.4",
            "TRACELOOP_TRACE_CONTENT=true",
        ),
        (
            "anthropic-content-off",
            "com.anthropic.sdk.python 2.16.0",
            "ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE",
        ),
        (
            "openai-content-off",
            "opentelemetry.util.genai.handler 1.1b0",
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only",
        ),
        (
            "google-content-off",
            "opentelemetry.instrumentation.google_genai 1.3b0",
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only",
        ),
        (
            "openinference-content-off",
            "openinference.instrumentation.openai 0.1.66",
            "OPENINFERENCE_HIDE_INPUTS",
        ),
        (
            "traceloop-legacy-content-off",
            "opentelemetry.instrumentation.openai.v1 0.47.5",
            "TRACELOOP_TRACE_CONTENT=true",
        ),
    ],
)
def test_the_content_capture_error_names_the_instrumentation_and_its_switch(
    name: str, scope: str, switch: str
) -> None:
    with pytest.raises(CassetteFormatError, match="without message content") as raised:
        from_otel(DATA / f"{name}.jsonl")
    assert f"{scope}: {switch}" in str(raised.value) and name in str(raised.value)


def test_a_trace_of_no_model_call_is_an_error_naming_what_it_held(tmp_path: Path) -> None:
    documents = [json.loads(line) for line in (DATA / "openai-agent.jsonl").read_text().splitlines()]
    for resource in documents[0]["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            scope["spans"] = [s for s in scope["spans"] if s["name"] == "handle /ask"]
    path = tmp_path / "web.jsonl"
    path.write_text(json.dumps(documents[0]) + "\n")
    with pytest.raises(CassetteFormatError, match="no model call") as raised:
        from_otel(path)
    assert str(path) in str(raised.value) and "1 spans from weather-agent" in str(raised.value)


def unsupported_trace(tmp_path: Path) -> Path:
    """The google-genai trace with its provider renamed to one llmvcr does not replay."""
    path = tmp_path / "bedrock.jsonl"
    path.write_text((DATA / "google-agent.jsonl").read_text().replace('"gemini"', '"aws.bedrock"'))
    return path


def test_a_trace_of_unsupported_calls_is_an_error_not_an_empty_cassette(tmp_path: Path) -> None:
    path = unsupported_trace(tmp_path)
    with pytest.warns(ConversionWarning, match="not supported"), pytest.raises(CassetteFormatError) as raised:
        from_otel(path)
    message = str(raised.value)
    assert str(path) in message and "'aws.bedrock'" in message
    assert "opentelemetry.instrumentation.google_genai 1.3b0" in message and "3 spans" in message


def test_the_cli_fails_on_a_trace_that_yields_nothing_and_converts_gemini(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from llmvcr.cli import main

    out = tmp_path / "out.yaml"
    status = main(
        ["convert", str(unsupported_trace(tmp_path)), "--from", "otel", "--to", "llmvcr-yaml", "-o", str(out)]
    )
    err = capsys.readouterr().err
    assert status != 0 and "bedrock.jsonl" in err and "no" in err and not out.exists()
    status = main(
        ["convert", str(DATA / "google-agent.jsonl"), "--from", "otel", "--to", "llmvcr-yaml", "-o", str(out)]
    )
    assert status == 0 and "2 entries" in capsys.readouterr().out
    assert [e.provider for e in llmvcr.load_cassette(out).entries] == ["google", "google"]


# -- execute_tool spans -> tool entries (the live run of pydantic-ai's instrumentation, which writes
# them, is tests/frameworks/test_otel_tools.py; here spans in its shape join a fixture's trace) -------
def _tool_span(
    trace_id: str, start: int, attributes: dict[str, str], *, error: str | None = None
) -> dict[str, Any]:
    span: dict[str, Any] = {
        "traceId": trace_id,
        "spanId": f"{start:016x}"[-16:],
        "name": f"execute_tool {attributes.get('gen_ai.tool.name')}",
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 1000),
        "attributes": [
            {"key": k, "value": {"stringValue": v}}
            for k, v in {"gen_ai.operation.name": "execute_tool", **attributes}.items()
        ],
    }
    if error is not None:
        span["status"] = {"code": 2, "message": error}
        span["events"] = [
            {
                "name": "exception",
                "attributes": [
                    {"key": "exception.type", "value": {"stringValue": "ValueError"}},
                    {"key": "exception.message", "value": {"stringValue": error}},
                ],
            }
        ]
    return span


def test_execute_tool_spans_become_tool_entries_in_their_place() -> None:
    document = json.loads((DATA / "anthropic-agent.jsonl").read_text().splitlines()[0])
    chats = [
        s
        for r in document["resourceSpans"]
        for ss in r["scopeSpans"]
        for s in ss["spans"]
        if s["name"] == "anthropic.chat"
    ]
    trace_id, between = chats[0]["traceId"], int(chats[0]["endTimeUnixNano"]) + 1
    spans = [
        _tool_span(
            trace_id,
            between,
            {
                "gen_ai.tool.name": "get_weather",
                "gen_ai.tool.call.arguments": '{"city": "Paris"}',
                "gen_ai.tool.call.result": "18C, sunny",
            },
        ),
        _tool_span(
            trace_id,
            between + 10,
            {
                "gen_ai.tool.name": "lookup",
                "tool_arguments": '{"q": "x"}',
                "tool_response": '{"hits": [1, 2]}',
            },
        ),
        _tool_span(
            trace_id,
            between + 20,
            {"gen_ai.tool.name": "get_time", "gen_ai.tool.call.arguments": "{}"},
            error="no clock",
        ),
        _tool_span(trace_id, between + 30, {"gen_ai.tool.name": "hidden"}),  # content capture off
    ]
    document["resourceSpans"].append({"scopeSpans": [{"scope": {"name": "pydantic-ai"}, "spans": spans}]})
    with pytest.warns(
        ConversionWarning,
        match=r"tool hidden: the span holds no arguments \(content capture is off\); left out",
    ):
        cassette = from_otel([document], tools=True)
    assert [e.provider for e in cassette.entries] == ["anthropic", "tool", "tool", "tool", "anthropic"]
    weather, lookup, clock = (cassette.entry(i) for i in (1, 2, 3))
    assert (weather.request.path, weather.request.body) == ("get_weather", {"arguments": {"city": "Paris"}})
    assert weather.response.body == {"return": "18C, sunny"}
    assert lookup.response.body == {"return": {"hits": [1, 2]}}  # a JSON result comes back as itself
    assert clock.response.status == 500
    assert clock.response.body == {"error": {"type": "builtins:ValueError", "message": "no clock"}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConversionWarning)
        assert [e.provider for e in from_otel([document]).entries] == [
            "anthropic",
            "anthropic",
        ]  # tools=False
