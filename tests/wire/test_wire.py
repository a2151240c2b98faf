"""``llmvcr.wire``: one description of each provider's calls, and the check that an answer fits its
question before it is served, through the real SDKs over the loopback server."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import openai
import pytest
from google.genai import types

import llmvcr
from llmvcr import wire
from llmvcr.cassette.entries import Entry, Request, Response
from llmvcr.cassette.schema import entry_from_mapping, entry_to_mapping
from llmvcr.proxy.routes import default_upstreams, error_body, meaning_headers
from llmvcr.wire.headers import CREDENTIAL_HEADERS, REQUEST_HEADERS

HELLO = [{"role": "user", "content": "hello there"}]


def _as_asked(path: Any, cassette: Any) -> None:
    """The cassette again, each answer marked ``as_asked`` (as a trace-made one is)."""
    out = llmvcr.Cassette()
    for e in cassette.entries:
        response = Response(e.response.status, e.response.headers, body=e.response.body, as_asked=True)
        out.append(Entry(e.provider, e.request, response, e.request_hash))
    llmvcr.save_cassette(path, out)


# -- finding 1: a plain entry for a stream, or a stream entry for a plain call ----------------------
def test_a_plain_entry_served_to_a_streamed_call_is_an_error_naming_the_entry(openai_client: Any) -> None:
    with llmvcr.recording("plain"):
        openai_client.chat.completions.create(model="gpt-test", messages=HELLO)
    with llmvcr.recording("plain", record_mode="none", mode="sequential"):
        with pytest.raises(
            llmvcr.AnswerShapeError, match=r"plain\.yaml: entry 0 .*asks for a stream.*plain body"
        ):
            list(openai_client.chat.completions.create(model="gpt-test", messages=HELLO, stream=True))


def test_a_stream_entry_served_to_a_plain_call_is_an_error_naming_the_entry(anthropic_client: Any) -> None:
    with llmvcr.recording("streamed"):
        with anthropic_client.messages.stream(model="claude-test", max_tokens=32, messages=HELLO) as s:
            s.get_final_message()
    with llmvcr.recording("streamed", record_mode="none", mode="sequential"):
        with pytest.raises(
            llmvcr.AnswerShapeError, match=r"streamed\.yaml: entry 0 .*plain answer.*stream of events"
        ):
            anthropic_client.messages.create(model="claude-test", max_tokens=32, messages=HELLO)


def test_a_hand_edit_and_rehash_that_pair_a_stream_with_a_plain_answer_are_refused(
    openai_client: Any, cassette_dir: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's way to add an entry (copy, edit, ``llmvcr rehash``) can turn a plain call's entry
    into a streamed call's: the replay refuses it instead of serving an empty stream."""
    from llmvcr.cli import main

    with llmvcr.recording("edited"):
        openai_client.chat.completions.create(model="gpt-test", messages=HELLO)
    path = cassette_dir / "edited.yaml"
    path.write_text(
        path.read_text().replace("      model: gpt-test\n", "      model: gpt-test\n      stream: true\n", 1)
    )
    assert main(["rehash", str(path)]) == 0
    capsys.readouterr()
    with llmvcr.recording("edited", record_mode="none"):
        with pytest.raises(llmvcr.AnswerShapeError, match=r"edited\.yaml: entry 0 .*re-record it"):
            list(openai_client.chat.completions.create(model="gpt-test", messages=HELLO, stream=True))


def test_an_error_answer_fits_a_streamed_call() -> None:
    """The API answers a failed streamed call with a plain JSON error: that is no mismatch."""
    request = Request("POST", "/v1/messages", {"model": "m", "stream": True})
    error = Response(
        529, {}, body={"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}
    )
    assert wire.fit("anthropic", request, error) is error
    assert wire.error_message("anthropic", error.body) == "busy"


# -- an entry whose source did not say whether the call streamed ------------------------------------
def test_an_as_asked_entry_serves_each_sdk_the_shape_it_asks_for(
    openai_client: Any, anthropic_client: Any, google_client: Any, cassette_dir: Any
) -> None:
    gemini = "gemini-2.5-flash"
    with llmvcr.recording("plain-calls") as recorded:
        chat = openai_client.chat.completions.create(model="gpt-test", messages=HELLO)
        message = anthropic_client.messages.create(model="claude-test", max_tokens=32, messages=HELLO)
        answer = openai_client.responses.create(model="gpt-test", input="hello there")
        gem = google_client.models.generate_content(model=gemini, contents="hello there")
    _as_asked(cassette_dir / "as-asked.yaml", recorded)
    with llmvcr.recording("as-asked", record_mode="none", allow_playback_repeats=True):
        assert openai_client.chat.completions.create(model="gpt-test", messages=HELLO) == chat
        chunks = list(openai_client.chat.completions.create(model="gpt-test", messages=HELLO, stream=True))
        assert (
            "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
            == chat.choices[0].message.content
        )
        with openai_client.chat.completions.stream(model="gpt-test", messages=HELLO) as s:
            assert s.get_final_completion().choices[0].message.content == chat.choices[0].message.content
        with anthropic_client.messages.stream(model="claude-test", max_tokens=32, messages=HELLO) as s:
            final = s.get_final_message()
        assert [b.text for b in final.content] == [b.text for b in message.content]  # type: ignore[union-attr]
        assert final.stop_reason == message.stop_reason and final.usage == message.usage
        streamed = list(openai_client.responses.create(model="gpt-test", input="hello there", stream=True))
        assert streamed[-1].type == "response.completed"
        assert streamed[-1].response.output_text == answer.output_text
        with openai_client.responses.stream(model="gpt-test", input="hello there") as s:
            assert s.get_final_response().output_text == answer.output_text
        pieces = [
            c.text for c in google_client.models.generate_content_stream(model=gemini, contents="hello there")
        ]
        assert "".join(pieces) == gem.text
        assert google_client.models.generate_content(model=gemini, contents="hello there").text == gem.text


def test_as_asked_is_written_only_when_set() -> None:
    request = Request("POST", "/v1/messages", {"model": "m"})
    plain = Entry("anthropic", request, Response(200, {}, body={"id": "x"}), "sha256:0")
    marked = Entry("anthropic", request, Response(200, {}, body={"id": "x"}, as_asked=True), "sha256:0")
    assert "as_asked" not in entry_to_mapping(plain)["response"]
    assert entry_to_mapping(marked)["response"]["as_asked"] is True
    assert entry_from_mapping(entry_to_mapping(marked), "f.yaml", 0) == marked
    bad = entry_to_mapping(marked)
    bad["response"]["as_asked"] = "yes"
    with pytest.raises(llmvcr.CassetteFormatError, match="response.as_asked"):
        entry_from_mapping(bad, "f.yaml", 0)


# -- the descriptions ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("headers", "host", "path", "provider"),
    [
        ({"user-agent": "Anthropic/Python 0.21.3"}, "proxy.local", "/x", "anthropic"),
        ({"user-agent": "AsyncOpenAI/Python 1.40"}, "proxy.local", "/x", "openai"),
        ({}, "api.anthropic.com", "/v1/messages", "anthropic"),
        ({}, "my.openai.azure.com", "/openai/deployments/d/chat/completions", "openai"),
        ({}, "generativelanguage.googleapis.com", "/v1beta/models/gemini-pro:generateContent", "google"),
        ({}, "localhost", "/v1beta/models/gemini-pro:streamGenerateContent", "google"),
        ({}, "localhost", "/v1/models/text-embedding-004:batchEmbedContents", "google"),
        ({"x-goog-api-client": "genai-py/0.8.3"}, "localhost", "/x", "google"),
        ({"anthropic-version": "2023-06-01"}, "localhost", "/proxy", "anthropic"),
        ({}, "localhost", "/v1/embeddings", "openai"),
        ({}, "example.com", "/v1/search", None),
    ],
)
def test_provider_of_reads_every_description(
    headers: dict[str, str], host: str, path: str, provider: Any
) -> None:
    assert wire.provider_of(headers, host, path) == provider


def test_a_stream_is_told_from_its_body_when_its_headers_are_gone() -> None:
    assert wire.response_streams({}, b'data: {"a": 1}\n\n')
    assert wire.response_streams({}, b"event: message_start\ndata: {}\n\n")
    assert wire.response_streams({"content-type": "text/event-stream; charset=utf-8"}, b"")
    assert not wire.response_streams({}, b'{"data": 1}')
    assert not wire.response_streams({"content-type": "application/json"}, b"data: x\n\n")


@pytest.mark.parametrize(
    ("provider", "events", "done"),
    [
        ("openai", [{"data": {"choices": []}}, {"data": "[DONE]"}], True),
        ("openai", [{"data": {"choices": []}}], False),
        ("openai", [{"event": "response.completed", "data": {"type": "response.completed"}}], True),
        ("anthropic", [{"event": "message_stop", "data": {"type": "message_stop"}}], True),
        ("anthropic", [{"event": "message_start", "data": {"type": "message_start"}}], False),
        ("google", [{"data": {"candidates": [{"finishReason": "STOP"}]}}], True),
        ("google", [{"data": {"candidates": [{"content": {}}]}}], False),
    ],
)
def test_each_grammar_knows_its_terminal_event(provider: str, events: list[Any], done: bool) -> None:
    assert wire.stream_finished(events, provider) is done


def test_sdk_types_come_back_from_a_synthesised_stream(openai_client: Any) -> None:
    """Built streams parse as the SDK's own types (the SDK, not llmvcr, builds the objects)."""
    with llmvcr.recording("typed") as recorded:
        openai_client.chat.completions.create(model="gpt-test", messages=HELLO)
    fmt = wire.lookup("openai")
    assert fmt is not None
    events = fmt.events_of(recorded.entries[0].request, recorded.entries[0].response.body)
    assert events[-1] == {"data": "[DONE]"}
    chunks = [openai.types.chat.ChatCompletionChunk.model_validate(e["data"]) for e in events[:-1]]
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "Echo: hello there"


def test_a_gemini_answer_is_synthesised_as_the_sdks_chunks() -> None:
    body = {"candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]}, "finishReason": "STOP"}]}
    request = Request("POST", "/v1beta/models/g:streamGenerateContent", {}, (("alt", "sse"),))
    served = wire.fit("google", request, Response(200, {}, body=body, as_asked=True))
    assert isinstance(served, Response) and served.stream is not None
    assert types.GenerateContentResponse.model_validate(served.stream[0]["data"]).text == "hi"
    as_array = wire.fit(
        "google", Request("POST", request.path, {}), Response(200, {}, body=body, as_asked=True)
    )
    assert isinstance(as_array, Response) and as_array.body == [body]  # no alt=sse: one JSON array


def test_anthropic_synthesised_events_parse_as_the_sdks_events() -> None:
    body = {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "m", "stop_reason": "end_turn",
        "content": [{"type": "text", "text": "hi"}, {"type": "tool_use", "id": "t", "name": "f", "input": {"a": 1}}],
        "usage": {"input_tokens": 3, "output_tokens": 2},
    }  # fmt: skip
    fmt = wire.lookup("anthropic")
    assert fmt is not None
    events = fmt.events_of(Request("POST", "/v1/messages", {"stream": True}), body)
    assert events[0]["event"] == "message_start" and events[-1]["event"] == "message_stop"
    assert fmt.finished(events) and not fmt.finished(events[:-1])


# -- one description of a provider: every consumer reads the registered formats ---------------------
def test_the_kept_and_the_credential_headers_are_the_formats_own() -> None:
    formats = wire.formats()
    assert {f.name for f in formats} >= {"anthropic", "openai", "google"}
    assert {"content-type"}.union(*(f.meaning_headers for f in formats)) == REQUEST_HEADERS
    assert {"anthropic-version", "anthropic-beta", "openai-beta"} <= REQUEST_HEADERS
    for name in ("x-goog-api-key", "openai-organization", "openai-project", "anthropic-user-profile-id"):
        assert name in CREDENTIAL_HEADERS


def test_each_provider_writes_its_error_body_once_and_reads_it_back() -> None:
    anthropic = wire.error_body("anthropic", 529, "overloaded_error", "busy")
    assert anthropic == {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}
    google = wire.error_body("google", 429, "rate_limit_error", "slow down")
    assert google == {"error": {"code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}}
    unknown = wire.error_body("groq", 400, "invalid_request_error", "no")  # OpenAI's shape, most read it
    assert unknown == wire.error_body("openai", 400, "invalid_request_error", "no")
    assert unknown["error"]["code"] == "invalid_request_error"
    for provider, body in (("anthropic", anthropic), ("google", google), ("openai", unknown)):
        assert wire.error_message(provider, body) in ("busy", "slow down", "no")


def test_a_registered_format_reaches_the_proxy_the_prices_and_the_model() -> None:
    openai_format = wire.lookup("openai")
    assert openai_format is not None
    groq = replace(
        openai_format, name="groq", hosts=("groq.com",), api_host="api.groq.com", meaning_headers=("groq-x",)
    )
    wire.register(groq)
    try:
        assert default_upstreams()["groq"] == "https://api.groq.com"
        assert meaning_headers("groq") == ("groq-x",)
        assert b'"code":"llmvcr_no_cassette"' in error_body("groq", "m", "llmvcr_no_cassette")
        assert wire.usage_keys("groq", "/v1/chat/completions") == (("chat",), "model", "usage")
        assert wire.model_of("groq", Request("POST", "/v1/chat/completions", {"model": "llama"})) == "llama"
    finally:
        del wire._FORMATS["groq"]
    assert "groq" not in default_upstreams()
    assert wire.usage_keys("groq", "/v1/chat/completions") == (("chat", "default"), "model", "usage")
    assert wire.usage_keys("google", "/v1beta/models/g:generateContent") == (
        ("default",),
        "modelVersion",
        "usageMetadata",
    )
    gemini = Request("POST", "/v1beta/models/gemini-x:generateContent", {})
    assert wire.model_of("google", gemini) == "gemini-x"
