"""Secrets never reach disk, whatever place a key was put in."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

import llmvcr
from llmvcr.redaction import Redactor, find_secrets

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


@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
def test_sentinels_in_every_place_never_reach_disk(server: Any, cassette_dir: Path) -> None:
    a = anthropic.Anthropic(
        api_key=SENTINELS["anthropic_key"],
        base_url=server.url,
        default_query={"key": SENTINELS["query_key"]},
        max_retries=0,
        default_headers={"x-custom-auth": SENTINELS["header_token"]},
    )
    odd = anthropic.Anthropic(api_key=SENTINELS["odd_key"], base_url=server.url, max_retries=0)
    o = openai.OpenAI(
        api_key=SENTINELS["openai_key"],
        base_url=server.url + "/v1",
        organization=SENTINELS["org"],
        project=SENTINELS["project"],
        max_retries=0,
    )
    az = openai.AzureOpenAI(
        api_key=SENTINELS["azure_key"],
        azure_endpoint=server.url,
        api_version="2024-10-21",
        azure_deployment="dep",
        max_retries=0,
    )
    leak = f"my keys are {SENTINELS['anthropic_key']} and {SENTINELS['jwt']} and {SENTINELS['aws']}"
    with llmvcr.recording("secrets") as cassette:
        a.messages.create(model="claude-test", max_tokens=8, messages=[{"role": "user", "content": leak}])
        odd.messages.create(
            model="claude-test",
            max_tokens=8,
            messages=[{"role": "user", "content": f"echo {SENTINELS['odd_key']}"}],
        )
        o.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": "hi"}])
        list(
            o.chat.completions.create(
                model="gpt-test", messages=[{"role": "user", "content": leak}], stream=True
            )
        )
        az.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": "azure"}])
    data = written_bytes(cassette_dir)
    assert len(cassette.entries) == 5 and data
    for name, value in SENTINELS.items():
        assert value.encode() not in data, f"{name} leaked"
    assert b"SENTINEL" not in data
    for header in (
        b"authorization",
        b"x-api-key",
        b"api-key",
        b"openai-organization",
        b"openai-project",
        b"x-custom-auth",
        b"cookie",
    ):
        assert header + b":" not in data.lower()
    assert b"<REDACTED:" in data
    # the server really received them: the test would be empty otherwise
    seen = b"".join(str(r.headers).encode() + r.body for r in server.requests)
    assert SENTINELS["header_token"].encode() in seen and SENTINELS["org"].encode() in seen
    # and the redacted cassette still replays (redaction happens before fingerprinting)
    with llmvcr.recording("secrets", record_mode="none") as again:
        a.messages.create(model="claude-test", max_tokens=8, messages=[{"role": "user", "content": leak}])
        odd.messages.create(
            model="claude-test",
            max_tokens=8,
            messages=[{"role": "user", "content": f"echo {SENTINELS['odd_key']}"}],
        )
    assert len(again.played) == 2


def test_user_redaction_hooks(anthropic_client: Any, cassette_dir: Path) -> None:
    def drop_or_mark(entry: llmvcr.Entry) -> llmvcr.Entry | None:
        text = entry.request.body["messages"][0]["content"]
        return None if "drop me" in text else entry

    with llmvcr.recording(
        "hooks", redact=[r"customer-\d+"], before_record=drop_or_mark, ignore=["metadata.user_id"]
    ) as cassette:
        anthropic_client.messages.create(
            model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "about customer-12345"}]
        )
        anthropic_client.messages.create(
            model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "drop me"}]
        )
    data = written_bytes(cassette_dir)
    assert b"customer-12345" not in data and b"<REDACTED:custom>" in data
    assert b"drop me" not in data and len(cassette.entries) == 1
    with llmvcr.recording("hooks", redact=[r"customer-\d+"], record_mode="none"):
        anthropic_client.messages.create(
            model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "about customer-12345"}]
        )


def test_a_before_record_hook_that_rewrites_a_request_still_replays_it(
    anthropic_client: Any, cassette_dir: Path, server: Any
) -> None:
    """A vcrpy-style scrub in before_record changes the stored request after it was hashed: replay
    still finds the entry by the request as sent, with no hand-edit warning, and rehash keeps it."""
    import dataclasses
    import warnings

    from llmvcr.cli import main as cli_main

    def scrub(entry: llmvcr.Entry) -> llmvcr.Entry:
        body = {**entry.request.body, "metadata": {"user_id": "<scrubbed>"}}
        return dataclasses.replace(entry, request=dataclasses.replace(entry.request, body=body))

    def ask() -> Any:
        return anthropic_client.messages.create(
            model="claude-test",
            max_tokens=8,
            metadata={"user_id": "u-42"},
            messages=[{"role": "user", "content": "hi"}],
        )

    with llmvcr.recording("scrubbed", before_record=scrub):
        live = ask()
    data = written_bytes(cassette_dir)
    assert b"u-42" not in data and b"<scrubbed>" in data and b"hashed_as_sent: true" in data
    path = next(cassette_dir.rglob("scrubbed.yaml"))
    assert cli_main(["rehash", str(path)]) == 0  # rehash leaves a hook-scrubbed entry as it is
    before = server.request_count
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no EditedCassetteWarning: nothing was edited by hand
        with llmvcr.recording("scrubbed", record_mode="none") as again:
            assert ask().content[0].text == live.content[0].text
    assert len(again.played) == 1 and server.request_count == before


def test_redactor_patterns_and_scan() -> None:
    r = Redactor()
    r.learn("Bearer weird-shaped-secret")
    text = r.text("k=sk-ant-abcdefgh12345678 b=Bearer abc.def.ghi123 w=weird-shaped-secret g=AIza" + "x" * 35)
    assert "sk-ant-" not in text and "weird-shaped-secret" not in text and "AIza" not in text
    assert re.findall(r"<REDACTED:([a-z-]+)>", text) == ["anthropic-key", "bearer", "api-key", "gcp-api-key"]
    found = list(
        find_secrets(
            {
                "entries": [
                    {"request": {"headers": {"authorization": "Bearer x"}, "body": "sk-proj-" + "a" * 20}}
                ]
            }
        )
    )
    assert {kind for _, kind, _ in found} == {"credential-header", "openai-key"}


MORE = {
    "auth_token": "SENTINEL-auth-token-4444",
    "env_anthropic": "sk-ant-api03-SENTINELenv0000000000",
    "env_openai": "SENTINEL-env-openai-5555",
    "base_url_query": "SENTINEL-base-url-6666",
    "extra_header": "SENTINEL-extra-header-7777",
    "extra_query": "SENTINEL-extra-query-8888",
    "azure_ad_token": "SENTINEL-azure-ad-9999",
    "azure_key_echoed": "SENTINEL-azure-echo-1212",
    "gcp": "AIzaSENTINEL" + "x" * 27,
    "bearer_in_prompt": "Bearer SENTINEL.bearer.token.3434",
    "private_key": "-----BEGIN RSA PRIVATE KEY-----",
}


def test_more_places_a_key_can_be_put(
    server: Any, cassette_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", MORE["env_anthropic"])
    monkeypatch.setenv("OPENAI_API_KEY", MORE["env_openai"])
    from_env_a = anthropic.Anthropic(base_url=server.url, max_retries=0)
    from_env_o = openai.OpenAI(base_url=server.url + "/v1", max_retries=0)
    token = anthropic.Anthropic(auth_token=MORE["auth_token"], base_url=server.url, max_retries=0)
    in_url = openai.OpenAI(
        api_key="sk-proj-placeholder-key-000000000",
        max_retries=0,
        base_url=f"{server.url}/v1?key={MORE['base_url_query']}",
    )
    ad = openai.AzureOpenAI(
        azure_ad_token=MORE["azure_ad_token"],
        azure_endpoint=server.url,
        api_version="2024-10-21",
        azure_deployment="dep",
        max_retries=0,
    )
    az = openai.AzureOpenAI(
        api_key=MORE["azure_key_echoed"],
        azure_endpoint=server.url,
        api_version="2024-10-21",
        azure_deployment="dep",
        max_retries=0,
    )
    user = [{"role": "user", "content": "hi"}]
    leak = " ".join(MORE[k] for k in ("gcp", "bearer_in_prompt", "private_key", "env_openai"))
    with llmvcr.recording("more-secrets") as cassette:
        from_env_a.messages.create(
            model="claude-test",
            max_tokens=8,
            messages=[{"role": "user", "content": f"env key {MORE['env_anthropic']}"}],
        )
        from_env_o.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": leak}])
        token.messages.create(
            model="claude-test",
            max_tokens=8,
            messages=user,
            extra_headers={"x-custom-key": MORE["extra_header"]},
            extra_query={"api_key": MORE["extra_query"]},
        )
        with pytest.raises(
            openai.NotFoundError
        ):  # the SDK cannot join a base_url that has a query; still recorded
            in_url.chat.completions.create(model="gpt-test", messages=user)
        ad.chat.completions.create(model="gpt-test", messages=user)
        # the Azure key, whatever its shape, is scrubbed from bodies too once the client has sent it
        az.chat.completions.create(model="gpt-test", messages=user)
        az.chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": MORE["azure_key_echoed"]}]
        )
    assert len(cassette.entries) == 7
    data = written_bytes(cassette_dir)
    for name, value in MORE.items():
        assert value.encode() not in data, f"{name} leaked"
    assert b"SENTINEL" not in data
    # each really left the client (in a header, the URL or the body), or the test would prove nothing
    seen = b"".join(
        str(r.headers).encode() + str(getattr(r, "path", "")).encode() + r.body for r in server.requests
    )
    for name in (
        "auth_token",
        "env_anthropic",
        "env_openai",
        "extra_header",
        "azure_ad_token",
        "azure_key_echoed",
    ):
        assert MORE[name].encode() in seen, name
    assert {
        "<REDACTED:query>",
        "<REDACTED:gcp-api-key>",
        "<REDACTED:bearer>",
        "<REDACTED:private-key>",
        "<REDACTED:api-key>",
    } <= set(re.findall(r"<REDACTED:[a-z-]+>", data.decode()))


def test_filter_headers_drops_allowlisted_headers(
    anthropic_client: Any, openai_client: Any, cassette_dir: Path
) -> None:
    with llmvcr.recording(
        "filtered", filter_headers=["Request-Id", "anthropic-version", "x-request-id"]
    ) as cassette:
        anthropic_client.messages.create(
            model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "a"}]
        )
        openai_client.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": "b"}])
    with llmvcr.recording("unfiltered") as plain:
        anthropic_client.messages.create(
            model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "a"}]
        )
    assert "request-id" in plain.entries[0].response.headers  # kept by default: the filter is what drops it
    assert "anthropic-version" in plain.entries[0].request.headers
    a, o = cassette.entries
    assert "request-id" not in a.response.headers and "anthropic-version" not in a.request.headers
    assert "x-request-id" not in o.response.headers
    assert a.response.headers.get("content-type") == "application/json"  # the rest of the allowlist stays
    text = (cassette_dir / "filtered.yaml").read_text()
    assert "request-id" not in text and "anthropic-version" not in text


def test_redact_json_paths_and_regexes_before_fingerprinting(
    anthropic_client: Any, cassette_dir: Path, server: Any
) -> None:
    options = {"redact": ["$.metadata.user_id", "$.content[*].citations", r"cust-\d+"]}

    def ask(user: str, order: str) -> Any:
        return anthropic_client.messages.create(
            model="claude-test",
            max_tokens=16,
            metadata={"user_id": user},
            messages=[{"role": "user", "content": f"where is {order}?"}],
        )

    with llmvcr.recording("paths", **options) as cassette:
        live = ask("user-private-42", "cust-1234")
    written = written_bytes(cassette_dir)
    assert b"user-private-42" not in written and b"cust-1234" not in written
    body = cassette.entries[0].request.body
    assert body["metadata"] == {"user_id": "<REDACTED:path>"}
    assert body["messages"][0]["content"] == "where is <REDACTED:custom>?"
    before = server.request_count
    with llmvcr.recording("paths", record_mode="none", **options):
        again = ask("someone-else", "cust-9999")  # redacted the same way, so it fingerprints the same
    assert server.request_count == before
    assert live.content[0].text == "Echo: where is cust-1234?"
    assert again.content[0].text == "Echo: where is <REDACTED:custom>?"  # the echo was redacted on disk too
    with pytest.raises(ValueError, match=r"'\$metadata' is not a JSON path"):
        llmvcr.use_cassette("x", redact=["$metadata"])
    with pytest.raises(ValueError, match="not a valid regular expression"):
        llmvcr.use_cassette("x", redact=["(unclosed"])


def test_redact_paths_reach_response_bodies_and_stream_events() -> None:
    from llmvcr.redaction import compile_paths

    redactor = Redactor(paths=compile_paths(["$.id", "$.items[2]"]))
    assert redactor.body({"id": "msg_1", "items": [1, 2, 3], "keep": "x"}) == {
        "id": "<REDACTED:path>",
        "items": [1, 2, "<REDACTED:path>"],
        "keep": "x",
    }
    events = [{"event": "message_start", "data": {"id": "msg_1", "n": 1}}, {"data": "[DONE]"}]
    assert redactor.events(events) == [
        {"event": "message_start", "data": {"id": "<REDACTED:path>", "n": 1}},
        {"data": "[DONE]"},
    ]


def test_prose_about_keys_is_not_redacted_and_a_key_is_reported_once() -> None:
    from llmvcr.redaction import Redactor, find_secrets

    prose = "Explain Bearer authentication and the sk-learn-pipeline-examples repo"
    assert Redactor().text(prose) == prose  # replay must send what live sent
    key = "sk-ant-api03-SENTINEL-anthropic-key-0123456789"
    assert [kind for _, kind, _ in find_secrets({"body": key})] == ["anthropic-key"]
    assert key not in Redactor().text(f"Authorization: Bearer {key}")


def test_redact_keep_lets_key_shaped_text_that_is_not_a_key_through(
    cassette_dir: Path, anthropic_client: Any
) -> None:
    fake = "sk-proj-EXAMPLE-from-the-docs-0000000000"
    with llmvcr.recording("keep", redact_keep=[r"sk-proj-EXAMPLE-[\w-]+"]):
        anthropic_client.messages.create(
            model="claude-test", max_tokens=8, messages=[{"role": "user", "content": f"explain {fake}"}]
        )
    text = (cassette_dir / "keep.yaml").read_text()
    assert fake in text  # kept as the user said
    with llmvcr.recording("keep", record_mode="none", redact_keep=[r"sk-proj-EXAMPLE-[\w-]+"]):
        anthropic_client.messages.create(
            model="claude-test", max_tokens=8, messages=[{"role": "user", "content": f"explain {fake}"}]
        )
    with pytest.raises(ValueError, match="redact_keep"):
        llmvcr.use_cassette("x", redact_keep=["("])


@pytest.mark.slow
def test_a_key_never_reaches_a_seed_a_file_name_or_a_parameter_id(
    cassette_dir: Path, anthropic_client: Any, pytester: pytest.Pytester, server: Any
) -> None:
    key = "sk-ant-api03-SENTINEL-seed-key-0123456789"
    with llmvcr.recording("seeded", seed=f"bug with {key}"):
        anthropic_client.messages.create(
            model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
        )
    text = (cassette_dir / "seeded.yaml").read_text()
    assert key not in text and "seed: bug with <REDACTED:anthropic-key>" in text
    with pytest.raises(ValueError, match="shaped like a key"):
        llmvcr.use_cassette(f"bug-{key}")
    pytester.makepyfile(
        test_param=f"""
import anthropic, os, pytest
@pytest.mark.parametrize("token", ["{key}"])
@pytest.mark.llmvcr
def test_with(token):
    client = anthropic.Anthropic(api_key="sk-ant-x-000000000", base_url=os.environ["LLM_URL"], max_retries=0)
    client.messages.create(model="claude-test", max_tokens=8, messages=[{{"role": "user", "content": "hi"}}])
"""
    )
    import os

    os.environ["LLM_URL"] = server.url
    try:
        pytester.runpytest_subprocess(
            "-p", "no:cacheprovider", "-p", "no:recording", timeout=120
        ).assert_outcomes(passed=1)
    finally:
        del os.environ["LLM_URL"]
    names = [str(p.relative_to(pytester.path)) for p in pytester.path.rglob("*.yaml")]
    assert names == ["cassettes/test_param/test_with[REDACTED-anthropic-key].yaml"], names


def test_find_secrets_reads_list_valued_headers_as_vcrpy_stores_them() -> None:
    tree = {
        "response": {
            "headers": {"set-cookie": ["session=abc123; Path=/", "other=x"], "x-api-key": ["sk-ant-zzz"]}
        }
    }
    found = {(path, kind) for path, kind, _ in find_secrets(tree)}
    assert (".response.headers.set-cookie[0]", "credential-header") in found
    assert (".response.headers.set-cookie[1]", "credential-header") in found
    assert (".response.headers.x-api-key[0]", "credential-header") in found
