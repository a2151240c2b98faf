"""llmvcr cassettes <-> agentskit replay cassettes: loader rules, strict fingerprints, round trips, replay."""

from __future__ import annotations

import json
import math
from datetime import datetime
from pathlib import Path
from typing import Any

import anthropic
import pytest

import llmvcr
from llmvcr.convert import ConversionWarning

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


# -- agentskit's own rules, re-typed from packages/eval/src/replay/cassette.ts --------------------------
def parse_cassette(document: Any) -> None:
    """``parseCassette``: raises AssertionError where agentskit raises ConfigError AK_CONFIG_INVALID."""
    assert isinstance(document, dict), "root object"
    assert document.get("version") == 1, "Unsupported cassette version"
    assert isinstance(document.get("entries"), list), "entries missing"
    if "seed" in document:
        seed = document["seed"]
        assert isinstance(seed, str) or (
            isinstance(seed, (int, float)) and not isinstance(seed, bool) and math.isfinite(seed)
        ), "seed"
    if "metadata" in document:
        assert isinstance(document["metadata"], dict), "metadata"
    for entry in document["entries"]:
        assert isinstance(entry, dict) and isinstance(entry.get("request"), dict), "request"
        assert isinstance(entry["request"].get("messages"), list), "request.messages"
        for message in entry["request"]["messages"]:
            assert isinstance(message.get("content"), str), "message content"
            created = message.get("createdAt")
            assert isinstance(created, str), "createdAt"
            try:
                datetime.fromisoformat(created.replace("Z", "+00:00"))
            except ValueError:
                raise AssertionError("createdAt: Date.parse gives NaN") from None
        assert isinstance(entry.get("chunks"), list), "chunks"
        assert all(isinstance(c, dict) and isinstance(c.get("type"), str) for c in entry["chunks"]), (
            "chunk type"
        )


def parse_cassette_strictly(document: Any) -> None:
    """The stricter checks some agentskit releases add: known roles, statuses and chunk types, and
    well-formed tool calls, usage and metadata."""
    parse_cassette(document)
    for entry in document["entries"]:
        for message in entry["request"]["messages"]:
            assert isinstance(message.get("id"), str), "message id"
            assert message.get("role") in ("user", "assistant", "system", "tool"), "message role"
            assert message.get("status") in ("pending", "streaming", "complete", "error"), "message status"
        for chunk in entry["chunks"]:
            assert chunk["type"] in (
                "text",
                "tool_call",
                "tool_result",
                "reasoning",
                "usage",
                "error",
                "done",
            ), "type"
            assert isinstance(chunk.get("metadata", {}), dict), "chunk metadata"
            if chunk["type"] in ("text", "reasoning", "error"):
                assert isinstance(chunk.get("content", ""), str), "chunk content"
            if chunk["type"] in ("tool_call", "tool_result"):
                call = chunk.get("toolCall")
                assert isinstance(call, dict) and all(
                    isinstance(call.get(k), str) for k in ("id", "name", "args")
                )
            if chunk["type"] == "usage":
                u = chunk.get("usage")
                assert isinstance(u, dict) and all(
                    isinstance(u.get(k), int) and u[k] >= 0
                    for k in ("promptTokens", "completionTokens", "totalTokens")
                )


def _js(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)  # JSON.stringify(1.0) === "1"
    if isinstance(value, list):
        return [_js(v) for v in value]
    if isinstance(value, dict):
        return {k: _js(v) for k, v in value.items()}
    return value


def fingerprint(request: dict[str, Any]) -> str:
    """``fingerprintRequest``: messages as ``role:content|...``, ``::``, then JSON of {s, t, m, tn}."""
    messages = "|".join(f"{m['role']}:{m.get('content') or ''}" for m in request["messages"])
    context = request.get("context")
    if context is None:
        return f"{messages}::"
    tools = context.get("tools")
    names = (
        sorted((t["name"] for t in tools), key=lambda s: s.encode("utf-16-be")) if tools is not None else None
    )
    part = {
        "s": context.get("systemPrompt"),
        "t": context.get("temperature"),
        "m": context.get("maxTokens"),
        "tn": names,
    }
    return f"{messages}::" + json.dumps(_js(part), separators=(",", ":"), ensure_ascii=False)


def test_the_fingerprint_helper_matches_agentskit() -> None:
    request = {
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
        "context": {
            "systemPrompt": "Be brief.",
            "maxTokens": 256,
            "tools": [{"name": "search"}, {"name": "add"}],
        },
    }
    assert (
        fingerprint(request)
        == 'system:Be brief.|user:hi::{"s":"Be brief.","t":null,"m":256,"tn":["add","search"]}'
    )
    assert fingerprint({"messages": [], "context": {}}) == '::{"s":null,"t":null,"m":null,"tn":null}'
    assert fingerprint({"messages": []}) == "::"


# -- recording what we export ----------------------------------------------------------------------------
def anthropic_loop(client: Any, task: str, *, streamed: bool = False) -> str:
    messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
    while True:
        kwargs = {
            "model": "claude-test",
            "max_tokens": 256,
            "system": "You are a weather bot.",
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
                    {"type": "tool_result", "tool_use_id": b.id, "content": "18C"}
                    for b in reply.content
                    if b.type == "tool_use"
                ],
            }
        )


def openai_loop(client: Any, task: str, *, streamed: bool = False) -> str:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": task},
    ]
    while True:
        extra = {"stream": True, "stream_options": {"include_usage": True}} if streamed else {}
        result = client.chat.completions.create(
            model="gpt-test", messages=messages, tools=[OPENAI_TOOL], temperature=0.5, **extra
        )
        if streamed:
            chunks = list(result)
            text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
            calls = [t for c in chunks if c.choices for t in c.choices[0].delta.tool_calls or []]
            if not calls:
                return text
            call_id = calls[0].id
            arguments = "".join(t.function.arguments or "" for t in calls)
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": arguments},
                        }
                    ],
                }
            )
        else:
            message = result.choices[0].message
            if not message.tool_calls:
                return str(message.content)
            call_id = message.tool_calls[0].id
            messages.append(message.model_dump(exclude_none=True))
        messages.append({"role": "tool", "tool_call_id": call_id, "content": "18C"})


def record_everything(anthropic_client: Any, openai_client: Any) -> tuple[llmvcr.Cassette, list[str]]:
    with llmvcr.recording("everything", seed="bug-repro-#427") as cassette:
        outputs = [
            anthropic_loop(anthropic_client, "What is the weather in Paris?"),
            anthropic_loop(anthropic_client, "And the weather in Paris, streamed?", streamed=True),
            openai_loop(openai_client, "What is the weather in Paris, OpenAI?"),
            openai_loop(openai_client, "Stream the weather in Paris, OpenAI?", streamed=True),
        ]
        with pytest.raises(anthropic.RateLimitError):
            anthropic_client.messages.create(
                model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "__status_429__"}]
            )
        openai_client.embeddings.create(model="text-embedding-test", input="not a chat")
    return cassette, outputs


def test_exported_cassettes_follow_the_loader_rules_and_fingerprint_uniquely(
    anthropic_client: Any, openai_client: Any, tmp_path: Path
) -> None:
    cassette, outputs = record_everything(anthropic_client, openai_client)
    with pytest.warns(ConversionWarning, match="embeddings.*left out"):
        path = llmvcr.to_agentskit(cassette, tmp_path / "bug-427.cassette.json")
    document = json.loads(Path(path).read_text())
    parse_cassette_strictly(document)
    assert document["seed"] == "bug-repro-#427" and len(document["entries"]) == 9  # 8 calls + the 429
    keys = [fingerprint(e["request"]) for e in document["entries"]]
    assert len(set(keys)) == len(keys)  # unique per entry...
    with pytest.warns(ConversionWarning):
        again = llmvcr.to_agentskit(cassette, tmp_path / "again.cassette.json")
    assert Path(again).read_bytes() == Path(path).read_bytes()  # ...and stable
    assert [fingerprint(e["request"]) for e in json.loads(Path(again).read_text())["entries"]] == keys
    first = document["entries"][0]["request"]
    assert keys[0] == (
        "system:You are a weather bot.|user:What is the weather in Paris?::"
        '{"s":"You are a weather bot.","t":null,"m":256,"tn":["get_weather"]}'
    )
    assert keys[4].endswith('::{"s":"Be brief.","t":0.5,"m":null,"tn":["get_weather"]}')
    assert first["context"]["tools"] == [
        {"name": "get_weather", "description": "Weather for a city", "schema": TOOL["input_schema"]}
    ]
    for entry in document["entries"]:
        for message in entry["request"]["messages"]:
            assert set(message) >= {"id", "role", "content", "status", "createdAt"}
            assert (
                message["role"] in ("system", "user", "assistant", "tool") and message["status"] == "complete"
            )
        chunks = entry["chunks"]
        assert [c["type"] for c in chunks].count("done") + [c["type"] for c in chunks].count("error") == 1
        assert chunks[-1]["type"] in ("done", "error")
        for chunk in chunks:
            assert chunk["type"] in ("text", "reasoning", "tool_call", "usage", "error", "done")
            if chunk["type"] == "tool_call":
                call = chunk["toolCall"]
                assert isinstance(call["args"], str) and json.loads(call["args"]) == {"city": "Paris"}
            if chunk["type"] == "usage":
                u = chunk["usage"]
                assert set(u) == {"promptTokens", "completionTokens", "totalTokens"}
                assert u["totalTokens"] == u["promptTokens"] + u["completionTokens"] and u["promptTokens"] > 0
    # the second call of the first loop carries the tool result, linked to the assistant's call
    follow = document["entries"][1]["request"]["messages"]
    assert [m["role"] for m in follow] == ["system", "user", "assistant", "tool"]
    assert follow[2]["toolCalls"][0]["args"] == {"city": "Paris"}
    assert follow[3]["toolCallId"] == follow[2]["toolCalls"][0]["id"] and follow[3]["content"] == "18C"
    # a stream keeps its deltas; joined they are the answer
    streamed = document["entries"][3]["chunks"]
    texts = [c["content"] for c in streamed if c["type"] == "text"]
    assert len(texts) > 1 and "".join(texts) == outputs[1]
    failed = document["entries"][8]["chunks"]
    assert (
        failed[0]["type"] == "error"
        and "429" in failed[0]["content"]
        and failed[0]["metadata"]["status"] == 429
    )


def test_round_trip(anthropic_client: Any, openai_client: Any, tmp_path: Path, request: Any) -> None:
    cassette, outputs = record_everything(anthropic_client, openai_client)
    with pytest.warns(ConversionWarning):
        first = llmvcr.to_agentskit(cassette, tmp_path / "first.json")
    back = llmvcr.from_agentskit(first)
    assert back.seed == "bug-repro-#427" and len(back) == 9
    second = llmvcr.to_agentskit(back, tmp_path / "second.json")
    assert json.loads(Path(second).read_text()) == json.loads(Path(first).read_text())
    # the imported cassette replays the same conversations through the SDKs
    path = tmp_path / "back.yaml"
    llmvcr.save_cassette(path, back)
    request.getfixturevalue("no_network")
    with llmvcr.recording(path, record_mode="none", mode="sequential"):
        again = [
            anthropic_loop(anthropic_client, "What is the weather in Paris?"),
            anthropic_loop(anthropic_client, "And the weather in Paris, streamed?", streamed=True),
            openai_loop(openai_client, "What is the weather in Paris, OpenAI?"),
            openai_loop(openai_client, "Stream the weather in Paris, OpenAI?", streamed=True),
        ]
        with pytest.raises(anthropic.RateLimitError):
            anthropic_client.messages.create(
                model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "__status_429__"}]
            )
    assert again == outputs


SEED_DOC = {
    "version": 1,
    "seed": "bug-repro-#427",
    "entries": [
        {
            "request": {
                "messages": [
                    {
                        "id": "msg-1-0",
                        "role": "system",
                        "content": "Be brief.",
                        "status": "complete",
                        "createdAt": "2026-01-01T00:00:00.000Z",
                    },
                    {
                        "id": "msg-1-1",
                        "role": "user",
                        "content": "hi",
                        "status": "complete",
                        "createdAt": "2026-01-01T00:00:00.000Z",
                    },
                ],
                "context": {
                    "systemPrompt": "Be brief.",
                    "maxTokens": 256,
                    "tools": [{"name": "search", "description": "x", "schema": {"type": "object"}}],
                },
            },
            "chunks": [
                {"type": "text", "content": "Hel"},
                {"type": "text", "content": "lo"},
                {"type": "tool_call", "toolCall": {"id": "t1", "name": "search", "args": '{"q":"x"}'}},
                {"type": "usage", "usage": {"promptTokens": 10, "completionTokens": 5, "totalTokens": 15}},
                {"type": "done"},
            ],
        }
    ],
}


def test_an_agentskit_recording_replays_strictly_through_the_sdks(
    tmp_path: Path, anthropic_client: Any, openai_client: Any, request: Any
) -> None:
    source = tmp_path / "bug-427.cassette.json"
    source.write_text(json.dumps(SEED_DOC))
    parse_cassette(SEED_DOC)
    request.getfixturevalue("no_network")
    llmvcr.save_cassette(tmp_path / "a.yaml", llmvcr.from_agentskit(source, model="claude-test"))
    with (
        llmvcr.recording(tmp_path / "a.yaml", record_mode="none"),
        anthropic_client.messages.stream(  # strict
            model="claude-test",
            max_tokens=256,
            system="Be brief.",
            messages=[{"role": "user", "content": "hi"}],
            tools=[{"name": "search", "description": "x", "input_schema": {"type": "object"}}],
        ) as stream,
    ):
        deltas = list(stream.text_stream)
        message = stream.get_final_message()
    assert deltas == ["Hel", "lo"]
    assert [b.type for b in message.content] == ["text", "tool_use"] and message.content[1].input == {
        "q": "x"
    }
    assert (message.usage.input_tokens, message.usage.output_tokens, message.stop_reason) == (
        10,
        5,
        "tool_use",
    )
    llmvcr.save_cassette(
        tmp_path / "o.yaml", llmvcr.from_agentskit(source, provider="openai", model="gpt-test")
    )
    with llmvcr.recording(tmp_path / "o.yaml", record_mode="none"):
        chunks = list(
            openai_client.chat.completions.create(
                model="gpt-test",
                max_tokens=256,
                stream=True,
                messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
                tools=[
                    {
                        "type": "function",
                        "function": {"name": "search", "description": "x", "parameters": {"type": "object"}},
                    }
                ],
            )
        )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Hello"
    call = next(t for c in chunks if c.choices for t in c.choices[0].delta.tool_calls or [])
    assert (call.id, call.function.name, call.function.arguments) == ("t1", "search", '{"q":"x"}')
    assert chunks[-1].usage.total_tokens == 15


def test_non_streamed_import_and_errors(tmp_path: Path, anthropic_client: Any) -> None:
    doc = json.loads(json.dumps(SEED_DOC))
    doc["entries"].append(
        {
            "request": {
                "messages": [
                    {
                        "id": "m",
                        "role": "user",
                        "content": "boom",
                        "status": "complete",
                        "createdAt": "2026-01-01T00:00:00Z",
                    }
                ]
            },
            "chunks": [{"type": "error", "content": "Overloaded"}],
        }
    )
    source = tmp_path / "c.json"
    source.write_text(json.dumps(doc))
    cassette = llmvcr.from_agentskit(source, stream=False)
    assert cassette.entry(0).response.body["content"][0] == {"type": "text", "text": "Hello"}
    assert cassette.entry(1).response.stream[-1]["event"] == "error"  # an in-stream error needs a stream
    llmvcr.save_cassette(tmp_path / "c.yaml", cassette)
    with llmvcr.recording(tmp_path / "c.yaml", record_mode="none", mode="sequential"):
        anthropic_client.messages.create(
            model="agentskit", max_tokens=256, messages=[{"role": "user", "content": "hi"}]
        )
        with pytest.raises(anthropic.APIStatusError, match="Overloaded"):
            list(
                anthropic_client.messages.create(
                    model="agentskit",
                    max_tokens=8,
                    stream=True,
                    messages=[{"role": "user", "content": "boom"}],
                )
            )


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d.update(version=2), "version"),
        (lambda d: d.pop("entries"), "entries"),
        (lambda d: d["entries"][0]["request"]["messages"][0].pop("createdAt"), "createdAt"),
        (lambda d: d["entries"][0]["request"]["messages"][0].update(content=None), "content"),
        (lambda d: d["entries"][0]["chunks"].append({"content": "x"}), "chunks"),
    ],
)
def test_the_loader_rules_are_enforced(tmp_path: Path, mutate: Any, field: str) -> None:
    doc = json.loads(json.dumps(SEED_DOC))
    mutate(doc)
    with pytest.raises(AssertionError):
        parse_cassette(doc)
    source = tmp_path / "bad.json"
    source.write_text(json.dumps(doc))
    with pytest.raises(llmvcr.CassetteFormatError, match=field):
        llmvcr.from_agentskit(source)


def test_a_responses_call_comes_back_as_a_chat_call(openai_client: Any, tmp_path: Path, request: Any) -> None:
    with llmvcr.recording("responses") as cassette:
        answer = openai_client.responses.create(
            model="gpt-test", instructions="Be brief.", input="hello responses"
        )
    path = llmvcr.to_agentskit(cassette, tmp_path / "responses.json")
    document = json.loads(Path(path).read_text())
    parse_cassette_strictly(document)
    assert (
        fingerprint(document["entries"][0]["request"])
        == 'system:Be brief.|user:hello responses::{"s":"Be brief.","t":null,"m":null,"tn":null}'
    )
    assert (
        "".join(c["content"] for c in document["entries"][0]["chunks"] if c["type"] == "text")
        == answer.output_text
    )
    with pytest.warns(
        ConversionWarning, match="entry 0 was an 'openai-responses' call.*chat.completions.create"
    ):
        back = llmvcr.from_agentskit(path)
    entry = back.entry(0)
    assert (entry.provider, entry.request.path) == (
        "openai",
        "/v1/chat/completions",
    )  # the endpoint of its body
    llmvcr.save_cassette(tmp_path / "back.yaml", back)
    request.getfixturevalue("no_network")
    with llmvcr.recording(tmp_path / "back.yaml", record_mode="none"):
        reply = openai_client.chat.completions.create(**entry.request.body)
    assert reply.choices[0].message.content == answer.output_text
