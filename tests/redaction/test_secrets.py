"""A key never reaches disk, whatever place it was put in and whatever form the server echoes it in.

Each place puts a sentinel where a key can hide (a custom auth header, a signed query, the URL's
userinfo, a gateway path, a prompt, an uploaded file) and asks the loopback server to echo what
the request carried (``x-echo``) in a reply body, an error body, a stream event or a response
header, raw, percent-encoded and in base64. Then every file under the test's folder, and every
file name, is searched for the sentinel in each of those forms.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import anthropic
import openai
import pytest
import yaml

import llmvcr
from llmvcr.providers import unregister_provider
from llmvcr.redaction import Redactor, find_secrets

HEADER = "SENTINEL+hdr/Tok=9z"
SIG = "SENTINEL+sig/AbC9=="
QUERY_KEY = "SENTINEL+qkey/77="
API_KEY = "SENTINEL+api/Key=42"
BEARER = "SENTINEL+bearer/Key=42"
PASSWORD = "SENTINEL+pass/Word=1"
USERNAME = "SENTINEL-user-token-5"
GATEWAY = "sk-ant-api03-SENTINEL-gateway-0123456789"
UPLOAD_KEY = "SENTINEL-upload-key-77"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/SENTINELbPxRfiCYz9"
AWS_ID = "AKIASENTINEL0000AWS1"
SHAPED = "sk-ant-api03-SENTINEL-upload-0123456789"
assert len(AWS_SECRET) == 40 and len(AWS_ID) == 20


def basic(user: str, password: str) -> str:
    return base64.b64encode(f"{user}:{password}".encode()).decode()


def forms(secret: str) -> list[bytes]:
    """The sentinel as a server may echo it: raw, percent-encoded, base64 at any byte alignment."""
    raw = secret.encode()
    out = {raw, quote(secret, safe="").encode(), quote(secret).encode(), quote_plus(secret).encode()}
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        out.add(encode(raw).rstrip(b"="))
        for k in (1, 2):  # inside a longer base64 text the secret's bytes may start mid-group
            text = encode(b"\0" * k + raw)
            out.add(text[-(-8 * k // 6) : 8 * (k + len(raw)) // 6])
    return sorted(out)


def leaks(folder: Path, secrets: list[str]) -> list[str]:
    """Each (secret form, where) found in a file's bytes or in a file's name under ``folder``."""
    found = []
    files = [p for p in folder.rglob("*") if p.is_file()]
    assert files, f"nothing was written under {folder}"
    for secret in secrets:
        for form in forms(secret):
            for p in files:
                if form in p.read_bytes():
                    found.append(f"{form!r} in {p.name}")
                if form in str(p.relative_to(folder)).encode():
                    found.append(f"{form!r} in the name {p.relative_to(folder)}")
    return found


@dataclass(frozen=True)
class Place:
    """Where the key is put: the client that carries it, the secrets to look for, the SDK."""

    name: str
    client: Callable[[str], Any]  # server URL -> client
    secrets: tuple[str, ...]
    sdk: str = "anthropic"


def _anthropic(**kw: Any) -> Callable[[str], Any]:
    def make(url: str) -> Any:
        options = {"api_key": "sk-ant-api03-unrelated-0000000000", "base_url": url, "max_retries": 0, **kw}
        if "base_url" in kw:
            options["base_url"] = kw["base_url"](url)
        return anthropic.Anthropic(**options)

    return make


def _openai(**kw: Any) -> Callable[[str], Any]:
    def make(url: str) -> Any:
        options = {"api_key": "sk-proj-unrelated-000000000000000", "max_retries": 0, **kw}
        options["base_url"] = kw["base_url"](url) if "base_url" in kw else url + "/v1"
        return openai.OpenAI(**options)

    return make


def _userinfo(user: str, password: str, suffix: str = "") -> Callable[[str], str]:
    info = quote(user, safe="") + (":" + quote(password, safe="") if password else "")
    return lambda url: url.replace("http://", f"http://{info}@") + suffix


PLACES = [
    Place("custom-auth-header", _anthropic(default_headers={"X-Custom-Auth": HEADER}), (HEADER,)),
    Place("query-sig", _anthropic(default_query={"sig": SIG}), (SIG,)),
    Place("query-key-openai", _openai(default_query={"key": QUERY_KEY}), (QUERY_KEY,), "openai"),
    Place("x-api-key", _anthropic(api_key=API_KEY), (API_KEY,)),
    Place("bearer-openai", _openai(api_key=BEARER), (BEARER,), "openai"),
    Place(
        "url-userinfo",
        _anthropic(base_url=_userinfo("llmvcr-user", PASSWORD)),
        (PASSWORD, basic("llmvcr-user", PASSWORD)),
    ),
    Place(
        "url-userinfo-openai",
        _openai(base_url=_userinfo("llmvcr-user", PASSWORD, "/v1")),
        (PASSWORD, basic("llmvcr-user", PASSWORD)),
        "openai",
    ),
    Place(
        "url-username-token", _anthropic(base_url=_userinfo(USERNAME, "")), (USERNAME, basic(USERNAME, ""))
    ),
    Place("gateway-path", _anthropic(base_url=lambda url: f"{url}/gateway/{GATEWAY}"), (GATEWAY,)),
    Place(
        "gateway-path-openai",
        _openai(base_url=lambda url: f"{url}/gateway/{GATEWAY}/v1"),
        (GATEWAY,),
        "openai",
    ),
]
ECHOES = ["text", "error", "stream", "header"]


def _call(place: Place, client: Any, echo: str) -> None:
    prompt = "__status_400__ hello" if echo == "error" else "hello"
    extra = {"x-echo": "text" if echo == "stream" else echo}
    messages = [{"role": "user", "content": prompt}]
    error = anthropic.BadRequestError if place.sdk == "anthropic" else openai.BadRequestError
    try:
        if place.sdk == "anthropic":
            reply = client.messages.create(
                model="claude-test",
                max_tokens=8,
                messages=messages,
                stream=echo == "stream",
                extra_headers=extra,
            )
        else:
            reply = client.chat.completions.create(
                model="gpt-test", messages=messages, stream=echo == "stream", extra_headers=extra
            )
        if echo == "stream":
            list(reply)
    except error:
        assert echo == "error"
    else:
        assert echo != "error"


@pytest.mark.parametrize("echo", ECHOES)
@pytest.mark.parametrize("place", PLACES, ids=lambda p: p.name)
def test_a_learned_key_is_never_written_in_any_form(
    place: Place, echo: str, server: Any, tmp_path: Path, cassette_dir: Path
) -> None:
    client = place.client(server.url)
    with llmvcr.recording("echo") as cassette:
        _call(place, client, echo)
    assert len(cassette.entries) == 1
    seen = server.last_request
    echoed = b"".join(str(v).encode() for v in (seen.path, seen.query, *seen.headers.values()))
    assert any(s.encode() in echoed or quote(s, safe="").encode() in echoed for s in place.secrets), (
        "the server never received the sentinel: the test would prove nothing"
    )
    found = leaks(tmp_path, list(place.secrets))
    assert not found, "\n".join(found)
    # the redacted request still matches on replay, with no call leaving
    before = server.request_count
    with llmvcr.recording("echo", record_mode="none") as again:
        _call(place, place.client(server.url), echo)
    assert len(again.played) == 1 and server.request_count == before


def test_the_gateway_key_is_not_written_into_path(server: Any, cassette_dir: Path) -> None:
    client = _anthropic(base_url=lambda url: f"{url}/gateway/{GATEWAY}")(server.url)
    with llmvcr.recording("gateway"):
        client.messages.create(
            model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
        )
    assert server.last_request.path.startswith(f"/gateway/{GATEWAY}/")
    text = (cassette_dir / "gateway.yaml").read_text()
    assert "path: /gateway/<REDACTED:anthropic-key>/v1/messages" in text


# -- key shapes in what the user sends ------------------------------------------------------------

AWS_PROMPTS = {
    "env": f"export AWS_ACCESS_KEY_ID={AWS_ID}\nexport AWS_SECRET_ACCESS_KEY={AWS_SECRET}",
    "ini": f"[default]\naws_access_key_id = {AWS_ID}\naws_secret_access_key = {AWS_SECRET}",
    "json": f'{{"AccessKeyId": "{AWS_ID}", "SecretAccessKey": "{AWS_SECRET}", "Expiration": "x"}}',
    "prose": f"my aws secret is {AWS_SECRET}, please rotate it",
}


@pytest.mark.parametrize("echo", ["text", "stream"])
@pytest.mark.parametrize("prompt", AWS_PROMPTS.values(), ids=AWS_PROMPTS)
def test_an_aws_secret_access_key_is_never_written(
    prompt: str, echo: str, anthropic_client: Any, tmp_path: Path, cassette_dir: Path
) -> None:
    def call() -> None:
        reply = anthropic_client.messages.create(
            model="claude-test",
            max_tokens=8,
            messages=[{"role": "user", "content": prompt}],
            stream=echo == "stream",
        )
        if echo == "stream":
            list(reply)

    with llmvcr.recording("aws"):
        call()
    found = leaks(tmp_path, [AWS_SECRET, AWS_ID])
    assert not found, "\n".join(found)
    assert "<REDACTED:aws-secret-key>" in (cassette_dir / "aws.yaml").read_text()
    with llmvcr.recording("aws", record_mode="none") as again:
        call()
    assert len(again.played) == 1


def test_text_that_only_resembles_an_aws_secret_is_kept() -> None:
    kept = [
        "the secret commit is 3f786850e387550fdab836ed7e6dc881de23001b and nothing else",  # a hex digest
        "aws docs: docs.aws.amazon.com/IAM/latest/UserGuide/id_credentials_access-keys.html",
        "The secret to good bread is patience; aws lambda functions scale to zero.",
        "secret = ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGHIJKLMN",  # no digit, no lower case: a placeholder
        f"aws, then on a new line\n{AWS_SECRET}",  # the words name another line
    ]
    for text in kept:
        assert Redactor().text(text) == text
        assert list(find_secrets({"t": text})) == []
    assert [k for _, k, _ in find_secrets({"t": AWS_PROMPTS["ini"]})] == ["aws-access-key", "aws-secret-key"]


RANDOM = "Xk9vQ2mPz8LwR4tY7nBqSENTINEL"


@pytest.mark.parametrize(
    "prompt",
    [
        f"db password: {RANDOM}",
        f'{{"client_secret": "{RANDOM}"}}',
        f"export API_KEY={RANDOM}",
        f"token={RANDOM}",
    ],
)
def test_a_random_value_assigned_to_a_credential_word_is_never_written(
    prompt: str, anthropic_client: Any, tmp_path: Path, cassette_dir: Path
) -> None:
    with llmvcr.recording("assigned"):
        anthropic_client.messages.create(
            model="claude-test", max_tokens=8, messages=[{"role": "user", "content": prompt}], stream=True
        ).close()
    found = leaks(tmp_path, [RANDOM])
    assert not found, "\n".join(found)
    assert "<REDACTED:secret>" in (cassette_dir / "assigned.yaml").read_text()


def test_words_next_to_credential_words_that_are_not_random_are_kept(
    anthropic_client: Any, cassette_dir: Path
) -> None:
    kept = [
        "token: Authorization_Header_2",  # an identifier: too little entropy
        "auth = CredentialAuthCreateParam.model",  # a dotted name
        "api_key=YOUR_API_KEY_HERE_12345",  # a placeholder
        "secret: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaA1",
        "max_tokens: 1024, output_tokens: 12",
        "see task-budgets-2026-03-13 and risk-assessment-2024-01-01-v2",  # "sk-" inside a word
    ]
    for text in kept:
        assert Redactor().text(text) == text
        assert list(find_secrets({"t": text})) == []
    # a beta name the scanner once took for an OpenAI key is stored as sent
    with llmvcr.recording("beta"):
        anthropic_client.messages.create(
            model="claude-test",
            max_tokens=8,
            messages=[{"role": "user", "content": "hi"}],
            extra_headers={"anthropic-beta": "task-budgets-2026-03-13"},
        )
    assert "anthropic-beta: task-budgets-2026-03-13" in (cassette_dir / "beta.yaml").read_text()


def _recorded_conversations() -> list[Path]:
    root = Path(__file__).parent.parent.parent
    found = [*root.glob("cassettes/*.yaml"), *root.glob("llmvcr/cassettes/*.yaml")]
    found += [*root.glob("tests/cassettes/**/*.yaml"), *root.glob("tests/data/**/*.json*")]
    return sorted(found)


def _strings(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for k, v in node.items() for s in _strings(k) + _strings(v)]
    if isinstance(node, list):
        return [s for v in node for s in _strings(v)]
    return []


def test_no_recorded_conversation_in_the_project_is_redacted() -> None:
    """The false positives of the scanner, measured on every conversation the project keeps: none."""
    files = _recorded_conversations()
    assert len(files) >= 10
    strings = []
    for path in files:
        text = path.read_text()
        if path.suffix == ".jsonl":
            docs = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            docs = [json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)]
        strings += [s for doc in docs for s in _strings(doc)]
        for doc in docs:
            assert list(find_secrets(doc)) == [], path.name
    assert len(strings) > 5000
    changed = [s for s in strings if Redactor().text(s) != s]
    assert changed == []


# -- bodies that are not UTF-8 -------------------------------------------------------------------

UPLOADS = {
    "learned-key": (UPLOAD_KEY, b"\x89PNG\r\n\x1a\n\xff\xfe" + UPLOAD_KEY.encode() + b"\x00\xff"),
    "learned-key-base64": (UPLOAD_KEY, b"\xff\xfe\x00" + base64.b64encode(b"k=" + UPLOAD_KEY.encode())),
    "anthropic-shape": (SHAPED, b"\xff\xfe\x00config: " + SHAPED.encode() + b"\n\x00\xff"),
    "aws-shape": (AWS_SECRET, b"\xff\x00aws_secret_access_key=" + AWS_SECRET.encode() + b"\n\xfe"),
}


@pytest.mark.parametrize("sdk", ["openai", "anthropic"])
@pytest.mark.parametrize("upload", UPLOADS.values(), ids=UPLOADS)
def test_a_key_inside_an_uploaded_binary_file_is_never_written(
    upload: tuple[str, bytes], sdk: str, server: Any, tmp_path: Path, cassette_dir: Path
) -> None:
    secret, data = upload
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")  # stored as {"base64": ...}: never scanned as text before
    with llmvcr.recording("upload") as cassette:
        if sdk == "openai":
            client = openai.OpenAI(api_key=UPLOAD_KEY, base_url=server.url + "/v1", max_retries=0)
            client.files.create(
                file=("notes.bin", data), purpose="assistants", extra_headers={"x-echo": "text"}
            )
        else:
            client = anthropic.Anthropic(api_key=UPLOAD_KEY, base_url=server.url, max_retries=0)
            client.beta.files.upload(file=("notes.bin", data), extra_headers={"x-echo": "text"})
    assert server.last_request.body.count(data) == 1  # the server got the file as it was
    body = cassette.entries[0].request.body
    assert isinstance(body, dict) and set(body) == {"base64"}
    stored = base64.b64decode(body["base64"])
    assert b"<REDACTED:" in stored and stored.count(b"\xff") == data.count(b"\xff")  # only the key changed
    found = leaks(tmp_path, [secret])
    assert not found, "\n".join(found)


def test_a_compressed_body_with_a_key_inside_is_refused_naming_the_file_and_call(
    server: Any, cassette_dir: Path
) -> None:
    client = openai.OpenAI(api_key=UPLOAD_KEY, base_url=server.url + "/v1", max_retries=0)
    packed = gzip.compress(f"notes\n{SHAPED}\n".encode(), mtime=0)
    with pytest.raises(llmvcr.LLMVCRError) as raised:
        with llmvcr.recording("packed"):
            client.files.create(file=("notes.txt.gz", packed), purpose="assistants")
    message = str(raised.value)
    assert "packed.yaml" in message and "POST /v1/files" in message and "gzip" in message
    assert SHAPED not in message
    assert not (cassette_dir / "packed.yaml").exists()
    with llmvcr.recording("clean") as cassette:  # a compressed file without a key is kept as it is
        client.files.create(file=("notes.txt.gz", gzip.compress(b"notes", mtime=0)), purpose="assistants")
    body = cassette.entries[0].request.body
    assert gzip.compress(b"notes", mtime=0) in base64.b64decode(body["base64"])


# -- the forms a known secret is scrubbed in ------------------------------------------------------


def test_a_learned_secret_is_scrubbed_in_every_encoding_wherever_its_bytes_start() -> None:
    redactor = Redactor()
    redactor.learn(f"Basic {basic('alice-admin', PASSWORD)}")
    for prefix in (b"", b"x", b"xy", b"xyz"):
        out = redactor.text(base64.b64encode(prefix + PASSWORD.encode() + b"tail").decode())
        assert "<REDACTED:api-key>" in out and not [f for f in forms(PASSWORD) if f.decode() in out]
    for echoed in (
        PASSWORD,
        quote(PASSWORD, safe=""),
        re.sub("%[0-9A-F]{2}", lambda m: m.group(0).lower(), quote(PASSWORD, safe="")),
        quote_plus(PASSWORD),
    ):
        assert redactor.text(f"got {echoed}!") == "got <REDACTED:api-key>!"
    assert redactor.text("user alice-admin denied") == "user <REDACTED:api-key> denied"
    short = Redactor()
    short.learn("ab")  # too short to learn: it would blank ordinary words
    assert short.text("ab cd ab") == "ab cd ab"
    assert Redactor().text("Authorization: Basic is a scheme") == "Authorization: Basic is a scheme"


# -- a key a model spells out across stream events -----------------------------------------------

SPLIT = {
    "learned-anthropic": ("anthropic", API_KEY, "", "text"),
    "learned-openai": ("openai", BEARER, "", "text"),
    "shape-in-prompt-anthropic": ("anthropic", "sk-ant-api03-unrelated-0000000000", f"repeat {SHAPED}", ""),
    "shape-in-prompt-openai": ("openai", "sk-proj-unrelated-000000000000000", f"repeat {SHAPED}", ""),
}


@pytest.mark.parametrize("case", SPLIT.values(), ids=SPLIT)
def test_a_key_spelled_out_across_stream_events_is_never_written(
    case: tuple[str, str, str, str], server: Any, tmp_path: Path, cassette_dir: Path
) -> None:
    sdk, key, prompt, echo = case
    secret = SHAPED if prompt else key
    messages = [{"role": "user", "content": f"__split_stream__ {prompt}"}]
    headers = {"x-echo": echo} if echo else {}

    def streamed_text() -> str:
        if sdk == "anthropic":
            client: Any = anthropic.Anthropic(api_key=key, base_url=server.url, max_retries=0)
            with client.messages.stream(
                model="claude-test", max_tokens=8, messages=messages, extra_headers=headers
            ) as stream:
                return "".join(stream.text_stream)
        client = openai.OpenAI(api_key=key, base_url=server.url + "/v1", max_retries=0)
        chunks = client.chat.completions.create(
            model="gpt-test", messages=messages, stream=True, extra_headers=headers
        )
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)

    with llmvcr.recording("split"):
        live = streamed_text()
    assert secret in live  # the server did spell it out, four characters per event
    found = leaks(tmp_path, [secret])
    assert not found, "\n".join(found)
    with llmvcr.recording("split", record_mode="none"):
        replayed = streamed_text()
    assert not [f for f in forms(secret) if f.decode() in replayed], replayed
    assert "<REDACTED:" in replayed


def test_the_key_shapes_are_compiled_only_when_text_shows_a_sign_of_one() -> None:
    """A body with no sign of a key (most of them) is judged by one scan; the shapes wait."""
    from llmvcr.redaction import secret_shapes

    secret_shapes._shapes.cache_clear()
    assert not secret_shapes.may_hold_shape(b'{"max_tokens": 256, "messages": [{"content": "hi"}]}')
    assert secret_shapes._shapes.cache_info().currsize == 0
    assert secret_shapes.may_hold_shape(b'{"note": "sk-ant-api03-abc123def456ghi"}')
    assert secret_shapes._shapes.cache_info().currsize == 1


@pytest.mark.parametrize("offset", [0, 1, 2])
@pytest.mark.parametrize("encoding", ["b64", "b64url"])
def test_a_key_a_patched_function_returns_only_base64_encoded_is_never_written(
    cassette_dir: Path, encoding: str, offset: int
) -> None:
    import userlib

    token = userlib.minted_token(encoding, offset)
    assert ("+" in token or "/" in token) != (encoding == "b64url")  # the two alphabets differ here
    targets = ("userlib:minted_token", "userlib:minted_tokens")
    providers = [llmvcr.patch_function(target) for target in targets]
    try:
        with llmvcr.recording("minted", record_mode="all") as cassette:
            assert userlib.minted_token(encoding, offset) == token  # the caller gets the real value
            assert list(userlib.minted_tokens(encoding, offset)) == ["minting", token]
        assert len(cassette) == 2
    finally:
        for provider in providers:
            unregister_provider(provider.name)
    assert leaks(cassette_dir, [userlib.MINTED_KEY]) == []
    written = (cassette_dir / "minted.yaml").read_text()
    assert written.count("<REDACTED:anthropic-key>") == 2 and "minting" in written
