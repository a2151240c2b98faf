"""llmvcr cassettes <-> regista traces, checked with regista itself (its loader, hash and strict replay)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import anthropic
import pytest
import regista
from regista.providers import AnthropicProvider, ModelRequest
from regista.trace.reader import Trace

import llmvcr
from llmvcr.cassette import Cassette, Entry, Response
from llmvcr.convert import ConversionWarning
from llmvcr.convert.regista import canonical_hash

TASK = "What is the weather in Paris?"
SYSTEM = "You are a weather bot."
TOOL = {
    "name": "get_weather",
    "description": "Weather for a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
OPENAI_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": TOOL["input_schema"],
    },
}


def anthropic_loop(client: Any, *, streamed: bool = False) -> str:
    """A plain agent loop through the anthropic SDK: ask, run the tool, answer."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
    while True:
        kwargs = {
            "model": "claude-sonnet-4-5",
            "max_tokens": 256,
            "system": SYSTEM,
            "messages": messages,
            "tools": [TOOL],
        }
        if streamed:
            with client.messages.stream(**kwargs) as stream:
                reply = stream.get_final_message()
        else:
            reply = client.messages.create(**kwargs)
        messages.append({"role": "assistant", "content": [b.model_dump() for b in reply.content]})
        if reply.stop_reason != "tool_use":
            return "".join(b.text for b in reply.content if b.type == "text")
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": b.id, "content": "18C, sunny"}
                    for b in reply.content
                    if b.type == "tool_use"
                ],
            }
        )


def openai_loop(client: Any, *, streamed: bool = False) -> str:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": TASK},
    ]
    while True:
        if streamed:
            with client.chat.completions.stream(
                model="gpt-4o-mini", messages=messages, tools=[OPENAI_TOOL]
            ) as stream:
                completion = stream.get_final_completion()
        else:
            completion = client.chat.completions.create(
                model="gpt-4o-mini", messages=messages, tools=[OPENAI_TOOL]
            )
        choice = completion.choices[0]
        messages.append(choice.message.model_dump(exclude_none=True, exclude={"parsed"}))
        if choice.finish_reason != "tool_calls":
            return str(choice.message.content)
        for call in choice.message.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": "18C, sunny"})


def events_of(path: Path | str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def hashes(path: Path | str) -> list[str]:
    return [e["request_hash"] for e in events_of(path) if e["type"] == "llm.request"]


async def assert_strict_replay(trace: str, tmp_path: Path, output: str) -> None:
    """regista.replay in strict mode: completes, costs $0, and rebuilds the same hash chain."""
    result = await regista.replay(trace, mode="strict", trace_dir=tmp_path / "replays")
    assert result.stop_reason == "completed" and result.error is None
    assert result.cost_usd == 0.0
    assert result.output == output
    assert hashes(result.trace_path) == hashes(trace)
    replayed = [e for e in events_of(result.trace_path) if e["type"] == "llm.response"]
    assert replayed and all(e["replayed"] and e["cost_usd"] == 0.0 for e in replayed)


@pytest.mark.parametrize("streamed", [False, True], ids=["create", "stream"])
async def test_anthropic_agent_loop_replays_strictly_in_regista(
    anthropic_client: Any, tmp_path: Path, streamed: bool
) -> None:
    with llmvcr.recording("agent") as cassette:
        output = anthropic_loop(anthropic_client, streamed=streamed)
    assert len(cassette) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConversionWarning)
        trace = llmvcr.to_regista_trace(cassette.path, tmp_path / "trace.jsonl")  # from the file on disk
    events = events_of(trace)
    assert [e["type"] for e in events] == [
        "session.start",
        "llm.request",
        "llm.response",
        "tool.call",
        "permission.decision",
        "tool.result",
        "llm.request",
        "llm.response",
        "session.end",
    ]
    assert [e["seq"] for e in events] == list(range(9)) and len({e["session_id"] for e in events}) == 1
    start = events[0]
    assert (start["task"], start["instructions"], start["provider"]) == (TASK, SYSTEM, "anthropic")
    first = events[2]["response"]
    assert first["stop_reason"] == "tool_use"
    assert [b["type"] for b in first["message"]["content"]] == ["text", "tool_use"]  # the stream, accumulated
    assert events[5]["content"] == "18C, sunny"
    assert events[-1]["final_output"] == output == "The tool said: 18C, sunny"
    await assert_strict_replay(trace, tmp_path, output)


@pytest.mark.parametrize("streamed", [False, True], ids=["create", "stream"])
async def test_openai_agent_loop_replays_strictly_in_regista(
    openai_client: Any, tmp_path: Path, streamed: bool
) -> None:
    with llmvcr.recording("openai-agent") as cassette:
        output = openai_loop(openai_client, streamed=streamed)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConversionWarning)
        trace = llmvcr.to_regista_trace(cassette, tmp_path / "trace.jsonl")
    events = events_of(trace)
    assert events[0]["provider"] == "openai_compat" and events[0]["instructions"] == SYSTEM
    call = events[2]["response"]["message"]["content"][0]
    assert call["type"] == "tool_use" and call["input"] == {"city": "Paris"}  # arguments parsed from JSON
    assert events[2]["response"]["request_id"].startswith("chatcmpl-")
    await assert_strict_replay(trace, tmp_path, output)


def test_request_hash_is_regista_own(anthropic_client: Any, tmp_path: Path) -> None:
    # The documented example of regista's canonical form, then every request of a converted loop.
    minimal = ModelRequest.model_validate(
        {"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}
    )
    assert (
        canonical_hash(minimal.model_dump(mode="json"))
        == minimal.request_hash()
        == "141d77bea168deca47a95a8937efdb4b596b16df44f7e5fa635167d901f18031"
    )
    with llmvcr.recording("agent") as cassette:
        anthropic_loop(anthropic_client)
    trace = llmvcr.to_regista_trace(cassette, tmp_path)  # a folder: <session_id>.jsonl inside it
    assert (
        Path(trace).parent == tmp_path and Path(trace).name.endswith(".jsonl") and len(Path(trace).stem) == 26
    )
    loaded = Trace.load(trace)
    for request, _ in loaded.llm_calls():
        model = ModelRequest.model_validate(request.request)
        assert model.model_dump(mode="json") == request.request  # every default written
        assert model.request_hash() == request.request_hash
    assert loaded.summary().tool_calls == 1 and loaded.end is not None and loaded.end.turns == 2


def test_a_cassette_that_is_not_one_conversation_still_loads_and_warns(
    anthropic_client: Any, openai_client: Any, tmp_path: Path
) -> None:
    with llmvcr.recording("mixed") as cassette:
        anthropic_client.messages.create(
            model="claude-test", max_tokens=32, messages=[{"role": "user", "content": "one"}]
        )
        anthropic_client.messages.create(
            model="claude-test", max_tokens=32, messages=[{"role": "user", "content": "two"}]
        )
        openai_client.embeddings.create(model="text-embedding-test", input="three")
    with pytest.warns(ConversionWarning) as caught:
        trace = llmvcr.to_regista_trace(cassette, tmp_path / "mixed.jsonl")
    text = " ".join(str(w.message) for w in caught)
    assert "not one regista conversation" in text and "follows a final answer" in text
    assert "embeddings" in text and "left out" in text
    loaded = Trace.load(trace)  # regista's own loader accepts every line
    assert len(loaded.llm_calls()) == 2 and loaded.start.task == "one"


def test_a_retried_failure_is_an_error_event_and_still_replays(anthropic_client: Any, tmp_path: Path) -> None:
    with llmvcr.recording("agent") as recorded:
        output = anthropic_loop(anthropic_client)
    first = recorded.entry(0)
    failed = Entry(
        first.provider,
        first.request,
        Response(
            429,
            {"content-type": "application/json"},
            body={"type": "error", "error": {"type": "rate_limit_error", "message": "Rate limit exceeded"}},
        ),
        first.request_hash,
    )
    cassette = Cassette()
    for entry in (failed, *recorded.entries):
        cassette.append(entry)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConversionWarning)
        trace = llmvcr.to_regista_trace(cassette, tmp_path / "retried.jsonl")
    error = events_of(trace)[1]
    assert (
        error["type"] == "error"
        and error["retried"] is True
        and "429: Rate limit exceeded" in error["message"]
    )
    import asyncio

    asyncio.run(assert_strict_replay(trace, tmp_path, output))


def test_a_final_failure_ends_the_session_in_error(anthropic_client: Any, tmp_path: Path) -> None:
    with llmvcr.recording("fails") as cassette, pytest.raises(anthropic.RateLimitError):
        anthropic_client.messages.create(
            model="claude-test", max_tokens=32, messages=[{"role": "user", "content": "__status_429__"}]
        )
    trace = llmvcr.to_regista_trace(cassette, tmp_path / "fails.jsonl")
    types = [e["type"] for e in events_of(trace)]
    assert types == ["session.start", "llm.request", "error", "session.end"]
    loaded = Trace.load(trace)
    assert loaded.end is not None and loaded.end.stop_reason == "error" and loaded.llm_calls() == []


# -- regista -> llmvcr -------------------------------------------------------------------------------
@regista.tool
def get_weather(city: str) -> str:
    """Weather for a city.

    Args:
        city: the city to look up
    """
    return "18C, sunny"


def weather_agent(server: Any, trace_dir: Path) -> regista.Agent:
    provider = AnthropicProvider("claude-sonnet-4-5", api_key="test", base_url=server.url, max_retries=0)
    return regista.Agent(provider=provider, instructions=SYSTEM, tools=[get_weather], trace_dir=trace_dir)


async def test_a_trace_regista_wrote_replays_through_the_anthropic_sdk(
    server: Any, tmp_path: Path, anthropic_client: Any, request: Any
) -> None:
    original = await weather_agent(server, tmp_path / "traces").run(TASK)
    assert original.stop_reason == "completed" and original.turns == 2
    cassette = llmvcr.from_regista_trace(original.trace_path)
    assert len(cassette) == 2 and cassette.metadata["regista"]["task"] == TASK
    path = tmp_path / "from-regista.yaml"
    llmvcr.save_cassette(path, cassette)
    before = server.request_count
    blocked = request.getfixturevalue("no_network")
    # regista's own agent, its provider on the anthropic SDK, served by llmvcr in strict mode
    with llmvcr.recording(path, record_mode="none") as replaying:
        again = await weather_agent(server, tmp_path / "again").run(TASK)
    assert replaying.unplayed == []
    assert again.output == original.output == "The tool said: 18C, sunny"
    assert hashes(again.trace_path) == hashes(original.trace_path)
    recorded = [e["response"] for e in events_of(original.trace_path) if e["type"] == "llm.response"]
    served = [e["response"] for e in events_of(again.trace_path) if e["type"] == "llm.response"]
    assert served == recorded  # message, stop reason, usage, model and request id all survive
    # ... and a direct SDK call with the same body gets the same message
    body = cassette.entry(1).request.body
    with llmvcr.recording(path, record_mode="none", mode="sequential", allow_playback_repeats=True):
        anthropic_client.messages.create(**cassette.entry(0).request.body)
        reply = anthropic_client.messages.create(**body)
    assert reply.content[0].text == original.output and reply._request_id == recorded[1]["request_id"]
    assert server.request_count == before and blocked == []
    # regista's own replay of the session writes a trace too; it reads into the same calls
    replayed = await regista.replay(original.trace_path, trace_dir=tmp_path / "replays")
    from_replay = llmvcr.from_regista_trace(replayed.trace_path)
    assert from_replay.metadata["regista"]["replay_of"] == original.session_id
    assert [(e.request, e.response) for e in from_replay.entries] == [
        (e.request, e.response) for e in cassette.entries
    ]


async def test_a_trace_as_streamed_calls(server: Any, tmp_path: Path, request: Any) -> None:
    original = await weather_agent(server, tmp_path / "traces").run(TASK)
    path = tmp_path / "streamed.yaml"
    llmvcr.save_cassette(path, llmvcr.from_regista_trace(original.trace_path, stream=True))
    request.getfixturevalue("no_network")
    with llmvcr.recording(path, record_mode="none"):
        events = [e async for e in weather_agent(server, tmp_path / "again").stream(TASK)]
    final = events[-1].result
    assert final.output == original.output and hashes(final.trace_path) == hashes(original.trace_path)
    assert any(type(e).__name__ == "TextDelta" for e in events)


def test_from_regista_as_openai_calls(server: Any, tmp_path: Path, openai_client: Any, request: Any) -> None:
    import asyncio

    original = asyncio.run(weather_agent(server, tmp_path / "traces").run(TASK))
    cassette = llmvcr.from_regista_trace(original.trace_path, provider="openai")
    path = tmp_path / "openai.json"
    llmvcr.save_cassette(path, cassette)
    request.getfixturevalue("no_network")
    with llmvcr.recording(path, record_mode="none"):
        replies = [openai_client.chat.completions.create(**e.request.body) for e in cassette.entries]
    assert replies[0].choices[0].message.tool_calls[0].function.name == "get_weather"
    assert replies[1].choices[0].message.content == original.output


def test_trace_round_trip_keeps_every_request_and_the_seed(anthropic_client: Any, tmp_path: Path) -> None:
    with llmvcr.recording("agent", seed="bug-repro-#427") as cassette:
        anthropic_loop(anthropic_client)
    cassette.metadata["ticket"] = "BUG-427"
    first = llmvcr.to_regista_trace(cassette, tmp_path / "first.jsonl")
    start = events_of(first)[0]
    assert start["llmvcr"]["seed"] == "bug-repro-#427" and start["llmvcr"]["metadata"] == {
        "ticket": "BUG-427"
    }
    assert start["llmvcr"]["recorded_with"]["anthropic"] == cassette.recorded_with["anthropic"]
    assert Trace.load(first).start.task == TASK  # regista's loader takes the extra key in its stride
    back = llmvcr.from_regista_trace(first)
    assert back.seed == "bug-repro-#427" and back.metadata["ticket"] == "BUG-427"
    assert back.recorded_with["anthropic"] == cassette.recorded_with["anthropic"]
    second = llmvcr.to_regista_trace(back, tmp_path / "second.jsonl")
    assert hashes(second) == hashes(first)
    strip = {"session_id", "ts", "regista_version", "latency_ms", "cost_usd", "wall_time_ms", "llmvcr"}
    assert [{k: v for k, v in e.items() if k not in strip} for e in events_of(second)] == [
        {k: v for k, v in e.items() if k not in strip} for e in events_of(first)
    ]
    assert events_of(second)[0]["llmvcr"]["seed"] == "bug-repro-#427"


def test_bad_traces_are_format_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "llm.request"}\n')
    with pytest.raises(llmvcr.CassetteFormatError, match="begins with a session.start"):
        llmvcr.from_regista_trace(bad)
    bad.write_text("not json\n")
    with pytest.raises(llmvcr.CassetteFormatError, match="line 1 is not JSON"):
        llmvcr.from_regista_trace(bad)
    bad.write_text('{"schema_version": 2, "type": "session.start"}\n')
    with pytest.raises(llmvcr.CassetteFormatError, match="newer"):
        llmvcr.from_regista_trace(bad)


# -- tool execution: trace events <-> tool entries -------------------------------------------------------
RAN: list[str] = []


@llmvcr.tool(name="get_weather")  # the name the model calls it by, as the trace records it
def _weather_run(city: str) -> str:
    RAN.append(city)
    return "18C, sunny"


@regista.tool(name="get_weather", description="Weather for a city.")
def recorded_weather(city: str) -> str:
    """Weather for a city.

    Args:
        city: the city to look up
    """
    return _weather_run(city)


async def test_tool_events_become_tool_entries_that_serve_the_tool(
    server: Any, tmp_path: Path, request: Any
) -> None:
    provider = AnthropicProvider("claude-sonnet-4-5", api_key="test", base_url=server.url, max_retries=0)

    def agent(trace_dir: Path) -> regista.Agent:
        return regista.Agent(
            provider=provider, instructions=SYSTEM, tools=[recorded_weather], trace_dir=trace_dir
        )

    RAN.clear()
    original = await agent(tmp_path / "traces").run(TASK)  # regista's own run: no cassette open
    assert RAN == ["Paris"]
    cassette = llmvcr.from_regista_trace(original.trace_path, tools=True)
    assert [e.provider for e in cassette.entries] == ["anthropic", "tool", "anthropic"]
    tool = cassette.entry(1)
    assert (tool.request.method, tool.request.path) == ("tool", "get_weather")
    assert tool.request.body == {"arguments": {"city": "Paris"}}
    assert tool.response.body == {"return": "18C, sunny"}
    path = tmp_path / "with-tools.yaml"
    llmvcr.save_cassette(path, cassette)
    request.getfixturevalue("no_network")
    with llmvcr.recording(path, record_mode="none") as replaying:
        again = await agent(tmp_path / "again").run(TASK)
    assert again.output == original.output and replaying.unplayed == []
    assert RAN == ["Paris"]  # served: the tool body never ran again
    # and back: the tool entry is the tool.call / tool.result of the trace, not an entry left out
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConversionWarning)
        trace = llmvcr.to_regista_trace(cassette, tmp_path / "back.jsonl")
    kinds = [e["type"] for e in events_of(trace)]
    assert kinds.count("tool.call") == 1 and kinds.count("tool.result") == 1


def test_a_denied_tool_call_has_no_tool_entry(server: Any, tmp_path: Path) -> None:
    import asyncio

    from regista.policy.permissions import Deny

    provider = AnthropicProvider("claude-sonnet-4-5", api_key="test", base_url=server.url, max_retries=0)
    RAN.clear()
    agent = regista.Agent(
        provider=provider,
        instructions=SYSTEM,
        tools=[recorded_weather],
        policy=lambda _: Deny("weather is off limits"),
        trace_dir=tmp_path / "traces",
    )
    result = asyncio.run(agent.run(TASK))
    assert RAN == []
    events = events_of(result.trace_path)
    assert [e["decision"] for e in events if e["type"] == "permission.decision"] == ["deny"]
    cassette = llmvcr.from_regista_trace(result.trace_path, tools=True)
    assert [e.provider for e in cassette.entries] == ["anthropic", "anthropic"]  # nothing ran: no tool entry
    denial = next(e for e in events if e["type"] == "tool.result")["content"]
    sent = cassette.entry(1).request.body["messages"][-1]["content"][0]["content"]
    assert sent == denial  # the denial the model saw, byte for byte


def test_a_tool_entry_the_next_request_never_carried_becomes_its_tool_result(
    anthropic_client: Any, tmp_path: Path
) -> None:
    weather = {
        "name": "get_weather",
        "description": "Weather for a city.",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }
    RAN.clear()

    @llmvcr.tool(name="get_weather")
    def get_weather_tool(city: str) -> str:
        return _weather_run(city)

    with llmvcr.recording("cut", record_mode="all") as cassette:  # the recording stops after the tool ran
        reply = anthropic_client.messages.create(
            model="claude-sonnet-4-5",
            max_tokens=64,
            system=SYSTEM,
            tools=[weather],
            messages=[{"role": "user", "content": TASK}],
        )
        use = next(b for b in reply.content if b.type == "tool_use")
        get_weather_tool(**use.input)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trace = llmvcr.to_regista_trace(cassette, tmp_path / "cut.jsonl")
    assert not any("left out" in str(w.message) for w in caught)
    result = next(e for e in events_of(trace) if e["type"] == "tool.result")
    assert result["tool_use_id"] == use.id and result["content"] == "18C, sunny" and not result["is_error"]
