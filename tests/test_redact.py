"""Secrets never reach disk, whatever place a key was put in."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

import llmvcr
from llmvcr.redact import Redactor, find_secrets

SENTINELS = {
    "anthropic_key": "sk-ant-api03-SENTINELa1b2c3d4e5f6g7h8",
    "openai_key": "sk-proj-SENTINELz9y8x7w6v5u4t3s2r1q0",
    "odd_key": "SENTINEL-plainshape-42",
    "header_token": "SENTINEL-hdr-777",
    "query_key": "SENTINEL-query-888",
    "org": "org-SENTINEL-111",
    "project": "proj_SENTINEL_222",
    "azure_key": "SENTINEL-azure-333",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJTRU5USU5FTCJ9.c2lnbmF0dXJlU0VOVElORUw",
    "aws": "AKIASENTINEL00000000",
}


def written_bytes(directory: Path) -> bytes:
    return b"".join(p.read_bytes() for p in directory.rglob("*") if p.is_file())


def test_sentinels_in_every_place_never_reach_disk(server: Any, cassette_dir: Path) -> None:
    a = anthropic.Anthropic(api_key=SENTINELS["anthropic_key"], base_url=server.url, default_query={"key": SENTINELS["query_key"]},
                            max_retries=0, default_headers={"x-custom-auth": SENTINELS["header_token"]})
    odd = anthropic.Anthropic(api_key=SENTINELS["odd_key"], base_url=server.url, max_retries=0)
    o = openai.OpenAI(api_key=SENTINELS["openai_key"], base_url=server.url + "/v1", organization=SENTINELS["org"],
                      project=SENTINELS["project"], max_retries=0)
    az = openai.AzureOpenAI(api_key=SENTINELS["azure_key"], azure_endpoint=server.url, api_version="2024-10-21",
                            azure_deployment="dep", max_retries=0)
    leak = f"my keys are {SENTINELS['anthropic_key']} and {SENTINELS['jwt']} and {SENTINELS['aws']}"
    with llmvcr.recording("secrets") as cassette:
        a.messages.create(model="claude-test", max_tokens=8, messages=[{"role": "user", "content": leak}])
        odd.messages.create(model="claude-test", max_tokens=8,
                            messages=[{"role": "user", "content": f"echo {SENTINELS['odd_key']}"}])
        o.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": "hi"}])
        list(o.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": leak}], stream=True))
        az.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": "azure"}])
    data = written_bytes(cassette_dir)
    assert len(cassette.entries) == 5 and data
    for name, value in SENTINELS.items():
        assert value.encode() not in data, f"{name} leaked"
    assert b"SENTINEL" not in data
    for header in (b"authorization", b"x-api-key", b"api-key", b"openai-organization", b"openai-project",
                   b"x-custom-auth", b"cookie"):
        assert header + b":" not in data.lower()
    assert b"<REDACTED:" in data
    # the server really received them: the test would be empty otherwise
    seen = b"".join(str(r.headers).encode() + r.body for r in server.requests)
    assert SENTINELS["header_token"].encode() in seen and SENTINELS["org"].encode() in seen
    # and the redacted cassette still replays (redaction happens before fingerprinting)
    with llmvcr.recording("secrets", record_mode="none") as again:
        a.messages.create(model="claude-test", max_tokens=8, messages=[{"role": "user", "content": leak}])
        odd.messages.create(model="claude-test", max_tokens=8,
                            messages=[{"role": "user", "content": f"echo {SENTINELS['odd_key']}"}])
    assert len(again.played) == 2


def test_user_redaction_hooks(anthropic_client: Any, cassette_dir: Path) -> None:
    def drop_or_mark(entry: llmvcr.Entry) -> llmvcr.Entry | None:
        text = entry.request.body["messages"][0]["content"]
        return None if "drop me" in text else entry

    with llmvcr.recording("hooks", redact=[r"customer-\d+"], before_record=drop_or_mark,
                          ignore=["metadata.user_id"]) as cassette:
        anthropic_client.messages.create(model="claude-test", max_tokens=8,
                                         messages=[{"role": "user", "content": "about customer-12345"}])
        anthropic_client.messages.create(model="claude-test", max_tokens=8,
                                         messages=[{"role": "user", "content": "drop me"}])
    data = written_bytes(cassette_dir)
    assert b"customer-12345" not in data and b"<REDACTED:custom>" in data
    assert b"drop me" not in data and len(cassette.entries) == 1
    with llmvcr.recording("hooks", redact=[r"customer-\d+"], record_mode="none"):
        anthropic_client.messages.create(model="claude-test", max_tokens=8,
                                         messages=[{"role": "user", "content": "about customer-12345"}])


def test_redactor_patterns_and_scan() -> None:
    r = Redactor()
    r.learn("Bearer weird-shaped-secret")
    text = r.text("k=sk-ant-abcdefgh12345678 b=Bearer abc.def.ghi123 w=weird-shaped-secret g=AIza" + "x" * 35)
    assert "sk-ant-" not in text and "weird-shaped-secret" not in text and "AIza" not in text
    assert re.findall(r"<REDACTED:([a-z-]+)>", text) == ["anthropic-key", "bearer", "api-key", "gcp-api-key"]
    found = list(find_secrets({"entries": [{"request": {"headers": {"authorization": "Bearer x"}, "body": "sk-proj-" + "a" * 20}}]}))
    assert {kind for _, kind, _ in found} == {"credential-header", "openai-key"}
