"""vcrpy cassettes -> llmvcr: record with vcrpy itself, import, replay through the SDKs offline."""

from __future__ import annotations

import asyncio
import base64
import gzip
import inspect
import json
import sys
import warnings
import zlib
from pathlib import Path
from typing import Any

import anthropic
import brotli
import openai
import pytest
import vcr
import yaml
import zstandard
from conftest import ANTHROPIC_SENTINEL, OPENAI_SENTINEL
from google import genai
from google.genai import errors, types

import llmvcr
from llmvcr.convert import ConversionWarning
from llmvcr.convert.vcrpy import FORMATS
from llmvcr.errors import ForeignCassetteError
from llmvcr.matching.rules import default_request_hash

USER = [{"role": "user", "content": "hello there"}]
TOOL = {
    "name": "get_weather",
    "description": "Weather for a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def dump(value: Any) -> Any:
    return value.model_dump() if hasattr(value, "model_dump") else value


def calls(a: Any, o: Any) -> list[Any]:
    """A bit of everything: JSON and SSE bodies, tools, helpers, both SDKs, an error, embeddings."""
    out: list[Any] = [dump(a.messages.create(model="claude-test", max_tokens=64, messages=USER))]
    out.append(
        [dump(e) for e in a.messages.create(model="claude-test", max_tokens=64, messages=USER, stream=True)]
    )
    with a.messages.stream(
        model="claude-test", max_tokens=64, messages=[{"role": "user", "content": "weather?"}], tools=[TOOL]
    ) as stream:
        out.append(dump(stream.get_final_message()))
    out.append(dump(o.chat.completions.create(model="gpt-test", messages=USER)))
    out.append(
        [
            dump(c)
            for c in o.chat.completions.create(
                model="gpt-test", messages=USER, stream=True, stream_options={"include_usage": True}
            )
        ]
    )
    out.append(dump(o.responses.create(model="gpt-test", input="hello responses")))
    out.append(dump(o.embeddings.create(model="text-embedding-test", input=["one", "two"])))
    with pytest.raises(Exception) as info:
        o.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": "__status_429__"}])
    out.append([type(info.value).__name__, info.value.status_code, info.value.body])  # type: ignore[attr-defined]
    return out


def record_with_vcrpy(path: Path, a: Any, o: Any, **config: Any) -> list[Any]:
    with vcr.VCR(**config).use_cassette(str(path), record_mode="all"):
        return calls(a, o)


def replay_offline(
    converted: llmvcr.Cassette, path: Path, a: Any, o: Any, request: Any, server: Any
) -> list[Any]:
    llmvcr.save_cassette(path, converted)
    before = server.request_count
    blocked = request.getfixturevalue("no_network")
    with llmvcr.recording(path, record_mode="none") as replayed:
        again = calls(a, o)
    assert server.request_count == before and blocked == [] and replayed.unplayed == []
    return again


def test_a_vcrpy_cassette_replays_through_llmvcr(
    tmp_path: Path, anthropic_client: Any, openai_client: Any, request: Any, server: Any
) -> None:
    source = tmp_path / "vcr" / "test_chat.yaml"
    live = record_with_vcrpy(source, anthropic_client, openai_client)
    text = source.read_text()
    assert ANTHROPIC_SENTINEL in text and OPENAI_SENTINEL in text  # vcrpy keeps the keys
    converted = llmvcr.from_vcrpy(source)
    assert len(converted) == 8
    assert [e.provider for e in converted.entries] == ["anthropic"] * 3 + ["openai"] * 5
    assert converted.recorded_with["anthropic"] and converted.recorded_with["openai"]
    assert converted.metadata == {
        "converted_from": {"format": "vcrpy", "file": "test_chat.yaml"}
    }  # no local path
    first = converted.entry(0)
    assert first.request.path == "/v1/messages" and first.request.headers == {
        "anthropic-version": first.request.headers["anthropic-version"]
    }
    assert first.request_hash == default_request_hash(first.request.normalised())
    assert converted.entry(1).response.stream[0]["event"] == "message_start"
    assert converted.entry(4).response.stream[-1]["data"] == "[DONE]"
    target = tmp_path / "converted.yaml"
    again = replay_offline(converted, target, anthropic_client, openai_client, request, server)
    assert again == live
    written = target.read_text()
    for needle in ("SENTINEL", "authorization", "x-api-key", "set-cookie", "__cf_bm", "x-stainless"):
        assert needle not in written


def _compress(document: dict[str, Any], how: str) -> dict[str, Any]:
    for interaction in document["interactions"]:
        response = interaction["response"]
        data = response["body"]["string"]
        data = data if isinstance(data, bytes) else data.encode()
        if how == "gzip":
            response["body"]["string"] = gzip.compress(data)
            response["headers"]["content-encoding"] = ["gzip"]
        elif how == "bytes":
            response["body"]["string"] = data  # written as !!binary
            interaction["request"]["body"] = (interaction["request"]["body"] or "").encode()
        else:
            response["body"] = {"base64_string": base64.b64encode(data).decode()}
    return document


@pytest.mark.parametrize("how", ["gzip", "bytes", "base64"])
def test_compressed_and_binary_bodies(
    tmp_path: Path, anthropic_client: Any, openai_client: Any, how: str, request: Any, server: Any
) -> None:
    source = tmp_path / "plain.yaml"
    live = record_with_vcrpy(source, anthropic_client, openai_client)
    document = yaml.load(source.read_text(), Loader=yaml.SafeLoader)
    variant = tmp_path / f"{how}.yaml"
    variant.write_text(yaml.dump(_compress(document, how)))
    if how != "base64":
        assert "!!binary" in variant.read_text()
    plain, converted = llmvcr.from_vcrpy(source), llmvcr.from_vcrpy(variant)
    assert [(e.request, e.response) for e in converted.entries] == [
        (e.request, e.response) for e in plain.entries
    ]
    assert (
        replay_offline(converted, tmp_path / "out.yaml", anthropic_client, openai_client, request, server)
        == live
    )


def test_vcrpy_json_serializer_and_decoded_responses(
    tmp_path: Path, anthropic_client: Any, openai_client: Any, request: Any, server: Any
) -> None:
    source = tmp_path / "cassette.json"
    live = record_with_vcrpy(
        source,
        anthropic_client,
        openai_client,
        serializer="json",
        decode_compressed_response=True,
        filter_headers=["authorization", "x-api-key"],
    )
    assert list(json.loads(source.read_text())) == ["version", "interactions"]
    assert len(llmvcr.load_cassette(source)) == 8  # read in place too, "version" first or not
    minified = tmp_path / "minified.json"
    minified.write_text(json.dumps(json.loads(source.read_text())))  # one line: found once parsed
    assert len(llmvcr.load_cassette(minified)) == 8
    with pytest.raises(ForeignCassetteError), llmvcr.use_cassette(minified, record_mode="all"):
        pass  # "all" rewrites without reading: refused all the same
    converted = llmvcr.from_vcrpy(source)
    assert (
        replay_offline(converted, tmp_path / "out.json", anthropic_client, openai_client, request, server)
        == live
    )


def test_other_hosts_are_left_out_and_bad_files_named(tmp_path: Path) -> None:
    source = tmp_path / "mixed.yaml"
    source.write_text(
        yaml.dump(
            {
                "version": 1,
                "interactions": [
                    {
                        "request": {
                            "method": "GET",
                            "uri": "https://example.com/health?x=1",
                            "body": None,
                            "headers": {},
                        },
                        "response": {
                            "status": {"code": 200, "message": "OK"},
                            "headers": {},
                            "body": {"string": "ok"},
                        },
                    }
                ],
            }
        )
    )
    with pytest.raises(
        llmvcr.CassetteFormatError,
        match=r"none of its 1 interaction\(s\) is a call of a provider llmvcr knows.*example\.com",
    ):
        llmvcr.from_vcrpy(source)  # nothing to replay is an error, never an empty cassette
    source.write_text("entries: []\n")
    with pytest.raises(llmvcr.CassetteFormatError, match="not a vcrpy cassette"):
        llmvcr.from_vcrpy(source)
    source.write_text("interactions: [\n")
    with pytest.raises(llmvcr.CassetteFormatError, match="not a readable vcrpy cassette"):
        llmvcr.from_vcrpy(source)


@pytest.mark.filterwarnings("ignore::llmvcr.errors.ConversionWarning")
def test_pydantic_ai_parsed_body_is_read_not_dropped(tmp_path: Path) -> None:
    cassette = tmp_path / "pai.yaml"
    cassette.write_text(
        yaml.safe_dump(
            {
                "interactions": [
                    {
                        "request": {
                            "headers": {"content-type": ["application/json"]},
                            "method": "POST",
                            "uri": "https://api.anthropic.com/v1/messages",
                            "parsed_body": {"model": "claude-x", "max_tokens": 5, "messages": []},
                        },
                        "response": {
                            "headers": {"content-type": ["application/json"]},
                            "status": {"code": 200, "message": "OK"},
                            "parsed_body": {"id": "msg_1", "content": [{"type": "text", "text": "hi"}]},
                        },
                    }
                ],
                "version": 1,
            }
        )
    )
    converted = llmvcr.from_vcrpy(cassette)
    (entry,) = converted.entries
    assert entry.request.body == {"model": "claude-x", "max_tokens": 5, "messages": []}
    assert entry.response.body == {"id": "msg_1", "content": [{"type": "text", "text": "hi"}]}


def test_old_anthropic_beta_query_is_dropped_with_a_warning(tmp_path: Path) -> None:
    cassette = tmp_path / "beta.yaml"
    interaction = {
        "request": {
            "body": json.dumps({"model": "claude-x", "max_tokens": 5, "messages": []}),
            "headers": {"content-type": ["application/json"]},
            "method": "POST",
            "uri": "https://api.anthropic.com/v1/messages?beta=true",
        },
        "response": {
            "body": {"string": json.dumps({"id": "msg_1"})},
            "headers": {"content-type": ["application/json"]},
            "status": {"code": 200, "message": "OK"},
        },
    }
    cassette.write_text(yaml.safe_dump({"interactions": [interaction], "version": 1}))
    with pytest.warns(
        ConversionWarning, match=r"interaction 0: old anthropic SDK query '\?beta=true' dropped"
    ):
        converted = llmvcr.from_vcrpy(cassette)
    (entry,) = converted.entries
    assert entry.request.query == ()


REAL = Path(__file__).parent.parent / "data" / "vcrpy_real"
ANSWER = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x", "content": []}


def one(request: dict[str, Any] | None = None, response: dict[str, Any] | None = None) -> dict[str, Any]:
    """A vcrpy document of one Anthropic interaction, parts replaced as given."""
    return {
        "interactions": [
            {
                "request": request
                or {
                    "body": json.dumps({"model": "claude-x", "max_tokens": 5, "messages": USER}),
                    "headers": {"content-type": ["application/json"]},
                    "method": "POST",
                    "uri": "https://api.anthropic.com/v1/messages",
                },
                "response": response
                or {
                    "body": {"string": json.dumps(ANSWER)},
                    "headers": {"content-type": ["application/json"]},
                    "status": {"code": 200, "message": "OK"},
                },
            }
        ],
        "version": 1,
    }


def write(tmp_path: Path, document: Any, name: str = "c.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(document))
    return path


def compressed(coding: str, data: bytes) -> bytes:
    if coding == "gzip":
        return gzip.compress(data)
    if coding == "deflate":
        return zlib.compress(data)
    if coding == "raw-deflate":
        packer = zlib.compressobj(wbits=-zlib.MAX_WBITS)
        return packer.compress(data) + packer.flush()
    if coding == "br":
        return bytes(brotli.compress(data))
    return bytes(zstandard.ZstdCompressor().compress(data))


@pytest.mark.filterwarnings("ignore::llmvcr.errors.ConversionWarning")
@pytest.mark.parametrize("coding", ["gzip", "deflate", "raw-deflate", "br", "zstd", "gzip, br"])
def test_every_content_coding_is_read(tmp_path: Path, coding: str) -> None:
    data = json.dumps(ANSWER).encode()
    for one_coding in coding.split(", "):  # "gzip, br": br applied last
        data = compressed(one_coding, data)
    header = coding.replace("raw-deflate", "deflate")
    response = {
        "body": {"string": data},
        "headers": {"content-type": ["application/json"], "content-encoding": [header]},
        "status": {"code": 200, "message": "OK"},
    }
    (entry,) = llmvcr.from_vcrpy(write(tmp_path, one(response=response))).entries
    assert entry.response.body == ANSWER


@pytest.mark.parametrize("coding", ["gzip", "deflate", "raw-deflate", "br", "zstd"])
def test_a_cut_compressed_body_is_named_not_read_short(tmp_path: Path, coding: str) -> None:
    """The importer and the live recorder undo content codings with one decoder, which checks that
    the compressed stream reached its end: a body cut short is an error naming file and interaction."""
    data = compressed(
        coding, json.dumps({**ANSWER, "content": [{"type": "text", "text": "x" * 4000}]}).encode()
    )
    response = {
        "body": {"string": data[: len(data) * 2 // 3]},
        "headers": {"content-type": ["application/json"], "content-encoding": [coding.replace("raw-", "")]},
        "status": {"code": 200, "message": "OK"},
    }
    with pytest.raises(
        llmvcr.CassetteFormatError, match=r"c\.yaml, entry 0: the response body does not decode as"
    ):
        llmvcr.from_vcrpy(write(tmp_path, one(response=response)))


@pytest.mark.filterwarnings("ignore::llmvcr.errors.ConversionWarning")
def test_a_gzip_body_of_several_members_is_read_whole(tmp_path: Path) -> None:
    text = json.dumps(ANSWER).encode()
    response = {
        "body": {"string": gzip.compress(text[:20]) + gzip.compress(text[20:])},
        "headers": {"content-type": ["application/json"], "content-encoding": ["gzip"]},
        "status": {"code": 200, "message": "OK"},
    }
    (entry,) = llmvcr.from_vcrpy(write(tmp_path, one(response=response))).entries
    assert entry.response.body == ANSWER


@pytest.mark.parametrize(
    ("coding", "module", "extra"), [("br", "brotli", "brotli"), ("zstd", "zstandard", "zstd")]
)
def test_a_missing_optional_decoder_names_its_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, coding: str, module: str, extra: str
) -> None:
    for name in (module, "brotlicffi", "compression.zstd"):
        monkeypatch.setitem(sys.modules, name, None)  # an import of it fails, as when not installed
    response = {
        "body": {"string": compressed(coding, b"{}")},
        "headers": {"content-type": ["application/json"], "content-encoding": [coding]},
        "status": {"code": 200, "message": "OK"},
    }
    path = write(tmp_path, one(response=response))
    with pytest.raises(
        llmvcr.CassetteFormatError,
        match=rf"c\.yaml, entry 0: .*{coding}-compressed and {module} is not installed; "
        rf"pip install 'llmvcr\[{extra}\]'",
    ):
        llmvcr.from_vcrpy(path)


def test_nothing_unreadable_is_dropped_in_silence(tmp_path: Path) -> None:
    ok = {"content-type": ["application/json"]}
    cases = {
        "no response body": (
            {"headers": ok, "status": {"code": 200, "message": "OK"}},
            "the response has no body",
        ),
        "unknown serializer": (
            {"body": {"text": "{}"}, "headers": ok, "status": {"code": 200, "message": "OK"}},
            "response body has none of 'string', 'base64_string' .*a serializer llmvcr does not know",
        ),
        "corrupt gzip": (
            {
                "body": {"string": b"\x1f\x8b\x08\x00garbage"},
                "headers": {**ok, "content-encoding": ["gzip"]},
                "status": {"code": 200, "message": "OK"},
            },
            "the response body does not decode as gzip .*restore the file from version control or re-record it",
        ),
        "unknown coding": (
            {
                "body": {"string": b"\x00\x01"},
                "headers": {**ok, "content-encoding": ["compress"]},
                "status": {"code": 200, "message": "OK"},
            },
            "the response body has an unknown content-encoding 'compress'; decode it first",
        ),
    }
    for name, (response, message) in cases.items():
        path = write(tmp_path, one(response=response), f"{name.replace(' ', '-')}.yaml")
        with pytest.raises(
            llmvcr.CassetteFormatError, match=rf"{name.replace(' ', '-')}\.yaml, entry 0: {message}"
        ):
            llmvcr.from_vcrpy(path)
    no_request_body = {"headers": {}, "method": "POST", "uri": "https://api.anthropic.com/v1/messages"}
    path = write(tmp_path, one(request=no_request_body), "no-request-body.yaml")
    with pytest.raises(
        llmvcr.CassetteFormatError, match=r"entry 0: the request \(POST /v1/messages\) has no body"
    ):
        llmvcr.from_vcrpy(path)
    typed = one()
    typed["interactions"][0]["request"]["body"] = {"type": "json", "content": {"model": "claude-x"}}
    typed["interactions"][0]["response"] = {"status": 200, "body": {"type": "protobuf", "content": "x"}}
    with pytest.raises(llmvcr.CassetteFormatError, match=r"entry 0: the response body type is 'protobuf'"):
        llmvcr.from_vcrpy(write(tmp_path, typed, "typed.yaml"))


@pytest.mark.filterwarnings("ignore::llmvcr.errors.ConversionWarning")
def test_one_request_answered_twice_replays_in_recorded_order(tmp_path: Path, no_network: list[Any]) -> None:
    document = one()
    second = json.loads(json.dumps(document["interactions"][0]))
    second["response"]["body"]["string"] = json.dumps({**ANSWER, "id": "msg_2"})
    document["interactions"].append(second)
    path = write(tmp_path, document)
    client = anthropic.Anthropic(api_key="sk-ant-placeholder", max_retries=0)
    for source in (path, tmp_path / "converted.yaml"):
        if source != path:
            llmvcr.save_cassette(source, llmvcr.from_vcrpy(path))
        with llmvcr.use_cassette(source, record_mode="none"):
            ids = [client.messages.create(model="claude-x", max_tokens=5, messages=USER).id for _ in range(2)]
        assert ids == ["msg_1", "msg_2"]
    assert no_network == []


def test_an_sdk_default_the_recording_lacks_is_added_and_said(tmp_path: Path) -> None:
    source = REAL / "otel-contrib" / "test_embeddings_with_content.yaml"
    with pytest.warns(
        ConversionWarning, match=r"interaction 0: encoding_format='base64' added to the request"
    ):
        (entry,) = llmvcr.from_vcrpy(source).entries
    assert entry.request.body == {
        "input": "This is a test for embeddings",
        "model": "text-embedding-3-small",
        "encoding_format": "base64",
    }
    assert isinstance(entry.response.body["data"][0]["embedding"][0], float)  # the answer as recorded
    document = yaml.safe_load(source.read_text())
    request = document["interactions"][0]["request"]
    request["body"] = json.dumps({**json.loads(request["body"]), "encoding_format": "float"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (entry,) = llmvcr.from_vcrpy(write(tmp_path, document)).entries
    assert entry.request.body["encoding_format"] == "float"  # the caller's choice, untouched


def test_langchain_gzip_layout_and_its_failures(tmp_path: Path) -> None:
    source = REAL / "langchain-layout" / "test_anthropic_message_create_legacy.yaml.gz"
    cassette = llmvcr.from_vcrpy(source)
    assert cassette.metadata["converted_from"]["format"] == "langchain-gz" and len(cassette) == 1
    lopsided = tmp_path / "lopsided.yaml.gz"
    document = yaml.safe_load(gzip.decompress(source.read_bytes()))
    document["responses"].append(document["responses"][0])
    lopsided.write_bytes(gzip.compress(yaml.safe_dump(document).encode()))
    with pytest.raises(llmvcr.CassetteFormatError, match=r"1 requests but 2 responses: they must pair up"):
        llmvcr.from_vcrpy(lopsided)
    other = tmp_path / "other.yaml.gz"
    other.write_bytes(gzip.compress(b"entries: []\n"))
    with pytest.raises(llmvcr.CassetteFormatError, match="without LangChain's 'requests' and 'responses'"):
        llmvcr.from_vcrpy(other)


def test_each_layout_is_named(tmp_path: Path) -> None:
    layouts = {
        "pydantic-ai/test_run_stream_sync_streams_real_model.yaml": "pydantic-ai",
        "pydantic-ai/test_openai_instructions.yaml": "cassetter",
        "llm/test_responses_basic_non_streaming.yaml": "vcrpy",
    }
    for name, layout in layouts.items():
        assert llmvcr.from_vcrpy(REAL / name).metadata["converted_from"]["format"] == layout
    assert {*layouts.values(), "langchain-gz"} == set(FORMATS)


def test_the_importer_reads_a_request_as_the_live_seam_does(
    tmp_path: Path, openai_client: Any, request: Any, server: Any
) -> None:
    """One translation of wire requests: a body orjson cannot hold (an integer past 64 bits) and a
    percent-escaped path convert to the request the SDK sends again, so the replay matches."""
    source = tmp_path / "vcr" / "big.yaml"

    def call() -> Any:
        return dump(
            openai_client.chat.completions.create(
                model="gpt-test", messages=USER, seed=2**70, extra_query={"tag": "a b"}
            )
        )

    with vcr.VCR().use_cassette(str(source), record_mode="all"):
        live = call()
    converted = llmvcr.from_vcrpy(source)
    assert converted.entry(0).request.body["seed"] == 2**70
    target = tmp_path / "converted.yaml"
    llmvcr.save_cassette(target, converted)
    before = server.request_count
    blocked = request.getfixturevalue("no_network")
    with llmvcr.recording(target, record_mode="none") as replayed:
        assert call() == live
    assert server.request_count == before and blocked == [] and replayed.unplayed == []


# -- streams stored without headers, and Gemini ---------------------------------------------------
CHUNK = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-x"}
SSE_BODY = "".join(
    f"data: {json.dumps({**CHUNK, 'choices': [{'index': 0, 'delta': delta, 'finish_reason': finish}]})}\n\n"
    for delta, finish in [({"role": "assistant", "content": ""}, None), ({"content": "Hel"}, None),
                          ({"content": "lo"}, None), ({}, "stop")]
) + "data: [DONE]\n\n"  # fmt: skip


@pytest.mark.parametrize("how", ["in_place", "converted"])
def test_a_stream_stored_without_headers_is_read_as_a_stream(tmp_path: Path, how: str) -> None:
    """Serializers that drop every header (openinference's, LangChain's) keep no content type: the
    body's ``data:`` lines say it is a stream, and it replays whole, not as an empty stream."""
    body = {"model": "gpt-x", "messages": USER, "stream": True}
    request = {
        "body": json.dumps(body),
        "headers": {},
        "method": "POST",
        "uri": "https://api.openai.com/v1/chat/completions",
    }
    response = {"body": {"string": SSE_BODY}, "headers": {}, "status": {"code": 200, "message": "OK"}}
    path = write(tmp_path, one(request, response))
    entry = llmvcr.from_vcrpy(path).entries[0]
    assert entry.response.stream is not None and entry.response.stream[-1]["data"] == "[DONE]"
    if how == "converted":
        path = tmp_path / "converted.yaml"
        llmvcr.save_cassette(path, llmvcr.from_vcrpy(tmp_path / "c.yaml"))
    client = openai.OpenAI(api_key=OPENAI_SENTINEL, max_retries=0)
    with llmvcr.use_cassette(path, record_mode="none"):
        chunks = list(client.chat.completions.create(model="gpt-x", messages=USER, stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "Hello"


def test_gemini_calls_in_a_cassetter_file_replay_through_google_genai(tmp_path: Path) -> None:
    """cassetter's typed bodies around Gemini calls: generateContent, its SSE stream, an error."""

    def reply(text: str, last: bool) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": text}]}, "index": 0}
        return {"candidates": [{**candidate, "finishReason": "STOP"} if last else candidate]}

    base = "https://generativelanguage.googleapis.com/v1beta/models/gemini-x"
    question = {"contents": [{"parts": [{"text": "hi"}], "role": "user"}]}
    sse = "".join(f"data: {json.dumps(reply(t, t == 'lo'))}\r\n\r\n" for t in ("Hel", "lo"))
    error = {"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}}
    document = {"interactions": [
        {"request": {"method": "POST", "uri": f"{base}:generateContent", "headers": {}, "body": {"type": "json", "content": question}},
         "response": {"status": 200, "headers": {"content-type": ["application/json"]}, "body": {"type": "json", "content": reply("Hello", True)}}},
        {"request": {"method": "POST", "uri": f"{base}:streamGenerateContent?alt=sse", "headers": {}, "body": {"type": "json", "content": question}},
         "response": {"status": 200, "headers": {}, "body": {"type": "text", "content": sse}}},
        {"request": {"method": "POST", "uri": f"{base}:countTokens", "headers": {}, "body": {"type": "json", "content": question}},
         "response": {"status": 429, "headers": {}, "body": {"type": "json", "content": error}}},
    ]}  # fmt: skip
    path = write(tmp_path, document)
    cassette = llmvcr.from_vcrpy(path)
    assert [e.provider for e in cassette.entries] == ["google"] * 3
    assert cassette.metadata["converted_from"]["format"] == "cassetter"
    options = types.HttpOptions(api_version="v1beta", retry_options=types.HttpRetryOptions(attempts=1))
    client = genai.Client(api_key="gemini-placeholder", http_options=options)
    with llmvcr.use_cassette(path, record_mode="none"):
        assert client.models.generate_content(model="gemini-x", contents="hi").text == "Hello"
        assert [c.text for c in client.models.generate_content_stream(model="gemini-x", contents="hi")] == [
            "Hel",
            "lo",
        ]
        with pytest.raises(errors.ClientError, match="quota") as raised:
            client.models.count_tokens(model="gemini-x", contents="hi")
    assert raised.value.code == 429


BAD_KEY = "__status_400__ (the server answers as to a key it does not take)"


def _raised(start: Any) -> list[Any]:
    """What a streamed call that the server refused raised: the SDK's class, status, message, body
    and the content type its response said."""
    with pytest.raises(Exception) as info:
        result = start()
        if inspect.isawaitable(result):
            asyncio.run(_drain(result))
        else:
            list(result)
    error: Any = info.value
    status = error.code if isinstance(error, errors.APIError) else error.status_code
    body = error.details if isinstance(error, errors.APIError) else error.body
    return [type(error).__name__, status, str(error), body, error.response.headers.get("content-type")]


async def _drain(stream: Any) -> None:
    async for _ in await stream:
        pass


def _refused_streams(a: Any, o: Any, google: Any) -> dict[str, Any]:
    ask = [{"role": "user", "content": BAD_KEY}]
    return {
        "gemini streamGenerateContent": lambda: google.models.generate_content_stream(
            model="gemini-x", contents=BAD_KEY
        ),
        "gemini async streamGenerateContent": lambda: google.aio.models.generate_content_stream(
            model="gemini-x", contents=BAD_KEY
        ),
        "anthropic messages stream": lambda: a.messages.create(
            model="claude-test", max_tokens=16, messages=ask, stream=True
        ),
        "openai chat stream": lambda: o.chat.completions.create(model="gpt-test", messages=ask, stream=True),
        "openai responses stream": lambda: o.responses.create(model="gpt-test", input=BAD_KEY, stream=True),
    }


@pytest.mark.parametrize("headers", ["kept", "dropped"])
def test_a_refused_stream_replays_the_error_the_live_call_raised(
    tmp_path: Path,
    anthropic_client: Any,
    openai_client: Any,
    google_client: Any,
    headers: str,
    request: Any,
    server: Any,
) -> None:
    """A streamed call the server refused (Gemini's 400 for a key it does not take, its JSON error
    labelled ``text/event-stream``, and the others' 400s) replays, in place, converted and recorded by
    llmvcr, as the same SDK error: class, status, message, body and content type. Serializers that drop every header (openinference's, LangChain's) keep no content
    type: the body is still the JSON error, and aiohttp (google-genai's async transport) reads it as
    JSON only when the response says so."""
    calls = _refused_streams(anthropic_client, openai_client, google_client)
    source = tmp_path / "refused.yaml"
    drop = {"before_record_response": lambda r: {**r, "headers": {}}} if headers == "dropped" else {}
    with vcr.VCR(**drop).use_cassette(str(source), record_mode="all"):  # type: ignore[arg-type]
        live = {name: _raised(start) for name, start in calls.items()}
    converted = tmp_path / "converted.yaml"
    llmvcr.save_cassette(converted, llmvcr.from_vcrpy(source))
    recorded = tmp_path / "recorded.yaml"  # and recorded by llmvcr itself
    with llmvcr.use_cassette(recorded, record_mode="all"):
        assert {name: _raised(start) for name, start in calls.items()} == live
    before, blocked = server.request_count, request.getfixturevalue("no_network")
    for path in (source, converted, recorded):
        with llmvcr.use_cassette(path, record_mode="none"):
            replayed = {name: _raised(start) for name, start in calls.items()}
        if headers == "dropped" and path != recorded:  # the label is lost: served as the JSON it is
            sent = {n: live["gemini streamGenerateContent" if "gemini" in n else n][3] for n in live}
            assert {n: [*r[:2], r[3]] for n, r in replayed.items()} == {
                n: [*live[n][:2], sent[n]] for n in live
            }, path.name
            assert {r[4] for r in replayed.values()} == {"application/json"}, path.name
        else:
            assert replayed == live, path.name
    gemini = live["gemini streamGenerateContent"]
    assert gemini[1] == 400 and gemini[3]["error"]["message"] == "Gemini error 400"
    assert gemini[4] == "text/event-stream"  # the JSON error, labelled as the stream it refused
    assert server.request_count == before and blocked == []
