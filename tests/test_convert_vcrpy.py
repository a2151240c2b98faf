"""vcrpy cassettes -> llmvcr: record with vcrpy itself, import, replay through the SDKs offline."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any

import pytest
import vcr
import yaml
from conftest import ANTHROPIC_SENTINEL, OPENAI_SENTINEL

import llmvcr
from llmvcr.convert import ConversionWarning
from llmvcr.matching import default_request_hash

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
    assert json.loads(source.read_text())["interactions"]
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
    with pytest.warns(ConversionWarning, match="example.com/health.*left out"):
        assert len(llmvcr.from_vcrpy(source)) == 0
    source.write_text("entries: []\n")
    with pytest.raises(llmvcr.CassetteFormatError, match="not a vcrpy cassette"):
        llmvcr.from_vcrpy(source)
    source.write_text("interactions: [\n")
    with pytest.raises(llmvcr.CassetteFormatError, match="not a readable vcrpy cassette"):
        llmvcr.from_vcrpy(source)


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


def test_brotli_response_is_named_not_silently_kept(tmp_path: Path) -> None:
    cassette = tmp_path / "br.yaml"
    interaction = {
        "request": {
            "body": json.dumps({"model": "claude-x", "max_tokens": 5, "messages": []}),
            "headers": {"content-type": ["application/json"]},
            "method": "POST",
            "uri": "https://api.anthropic.com/v1/messages",
        },
        "response": {
            "body": {"base64_string": base64.b64encode(b"\x8b\x02\x80not-json").decode()},
            "headers": {"content-type": ["application/json"], "content-encoding": ["br"]},
            "status": {"code": 200, "message": "OK"},
        },
    }
    cassette.write_text(yaml.safe_dump({"interactions": [interaction], "version": 1}))
    with pytest.warns(
        ConversionWarning, match=r"interaction 0: response body is br-compressed.*pip install brotli"
    ):
        llmvcr.from_vcrpy(cassette)
