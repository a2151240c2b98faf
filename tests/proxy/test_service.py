"""``llmvcr serve`` left running as a service: every run replays, the token holds off loopback, no file
that is not a cassette is written, every error is the provider's own, and it stays bounded.

Raw sockets and the real SDKs against the loopback LLM server; the browser cases are in
``test_browser.py``.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anthropic
import pytest
import yaml
from conftest import ANTHROPIC_SENTINEL
from llm_server import LLMServer

from llmvcr.cassette import Served
from llmvcr.cli.serve import token_of
from llmvcr.proxy import ProxyServer, instructions
from llmvcr.proxy.routes import ERROR_STATUS

PROMPT = [{"role": "user", "content": "the same question"}]


@pytest.fixture
def upstreams(server: LLMServer) -> dict[str, str]:
    return {"anthropic": server.url, "openai": server.url, "google": server.url}


def raw(port: int, request: bytes, timeout: float = 30) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 request as bytes over a socket; the status, headers and body (read to the close)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, body


def post(
    port: int, path: str, body: Any, *, host: str = "127.0.0.1", **headers: str
) -> tuple[int, dict[str, str], Any]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    head = {"host": host, "content-type": "application/json", "connection": "close", **headers}
    head["content-length"] = str(len(data))
    text = "".join(f"{k}: {v}\r\n" for k, v in head.items())
    status, got, answer = raw(port, f"POST {path} HTTP/1.1\r\n{text}\r\n".encode() + data)
    try:
        return status, got, json.loads(answer)
    except ValueError:
        return status, got, answer


MESSAGE = {"model": "claude-test", "max_tokens": 8, "messages": PROMPT}
ANTHROPIC_HEADERS = {"anthropic-version": "2023-06-01", "x-api-key": ANTHROPIC_SENTINEL}


def ask(base: str) -> str:
    client = anthropic.Anthropic(api_key=ANTHROPIC_SENTINEL, base_url=base, max_retries=0)
    block = client.messages.create(model="claude-test", max_tokens=8, messages=PROMPT).content[0]
    assert block.type == "text"
    return block.text


# -- 1. every run replays ---------------------------------------------------------------------------
def record(cassette_dir: Path, upstreams: dict[str, str], name: str, times: int = 1) -> str:
    with ProxyServer(cassette_dir, upstreams=upstreams) as recording:
        answers = [ask(recording.base_url(name)) for _ in range(times)]
    return answers[0]


@pytest.mark.slow
def test_a_cassette_no_client_opened_answers_64_clients_and_every_later_run(
    cassette_dir: Path, upstreams: dict[str, str], server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    live = record(cassette_dir, upstreams, "shared")
    monkeypatch.setenv("CI", "true")  # replay only: a call the cassette lacks is an error
    told: list[str] = []
    before = server.request_count
    with ProxyServer(cassette_dir, upstreams=upstreams, report=told.append) as proxy:
        base = proxy.base_url("shared")
        for _run in range(2):  # a second `npm test`, a retry, watch mode: the same cassette again
            with ThreadPoolExecutor(16) as pool:
                answers = list(pool.map(lambda _: ask(base), range(64)))
            assert answers == [live] * 64
        status, _headers, body = post(
            proxy.port, "/cassettes/shared/v1/messages", {**MESSAGE, "max_tokens": 9}, **ANTHROPIC_HEADERS
        )
        assert status == ERROR_STATUS and body["error"]["type"] == "llmvcr_replay_divergence"
    assert server.request_count == before
    assert told == []  # its one entry served: nothing unplayed to tell


def test_repeated_calls_get_their_recorded_sequence_in_turn(
    cassette_dir: Path, upstreams: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with ProxyServer(cassette_dir, upstreams=upstreams) as recording:
        client = anthropic.Anthropic(api_key=ANTHROPIC_SENTINEL, base_url=recording.base_url("turns"))
        first = client.messages.create(model="claude-test", max_tokens=8, messages=PROMPT).id
        client.messages.create(model="claude-test", max_tokens=8, messages=PROMPT)
    path = cassette_dir / "turns.yaml"
    document = yaml.safe_load(path.read_text())
    assert len(document["entries"]) == 2
    document["entries"][1]["response"]["body"]["id"] = second = "msg_the_second_answer"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    monkeypatch.setenv("CI", "true")
    with ProxyServer(cassette_dir, upstreams=upstreams) as proxy:
        client = anthropic.Anthropic(api_key=ANTHROPIC_SENTINEL, base_url=proxy.base_url("turns"))
        ids = [
            client.messages.create(model="claude-test", max_tokens=8, messages=PROMPT).id for _ in range(5)
        ]
    assert ids == [first, second, first, second, first]


def test_a_cassette_opened_through_the_control_api_stays_strict_per_test(
    cassette_dir: Path, upstreams: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    live = record(cassette_dir, upstreams, "strict")
    monkeypatch.setenv("CI", "true")
    with ProxyServer(cassette_dir, upstreams=upstreams) as proxy:
        assert post(proxy.port, "/_llmvcr/cassettes/strict", {})[0] == 200
        assert ask(proxy.base_url("strict")) == live
        with pytest.raises(anthropic.APIStatusError) as again:
            ask(proxy.base_url("strict"))
        assert again.value.status_code == ERROR_STATUS and "already played" in str(again.value)


def test_the_server_tells_each_cassettes_unplayed_entries_as_it_stops(
    cassette_dir: Path, upstreams: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with ProxyServer(cassette_dir, upstreams=upstreams) as recording:
        client = anthropic.Anthropic(api_key=ANTHROPIC_SENTINEL, base_url=recording.base_url("two"))
        client.messages.create(model="claude-test", max_tokens=8, messages=PROMPT)
        client.messages.create(model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "b"}])
    monkeypatch.setenv("CI", "true")
    told: list[str] = []
    with ProxyServer(cassette_dir, upstreams=upstreams, report=told.append) as proxy:
        ask(proxy.base_url("two"))
    assert told[0].endswith("two.yaml: 1 recorded entries no call used:")
    assert told[1:] == ["  anthropic POST /v1/messages"]


def test_served_holds_each_entry_once_however_many_calls() -> None:
    served = Served()
    entries = [object(), object()]
    for n in range(100_000):
        served.add(n % 2, entries[n % 2])  # type: ignore[arg-type]
    assert served.kept == 2 and len(served) == 100_000
    assert sum(1 for e in served if e is entries[0]) == 50_000


def test_a_session_under_the_proxy_keeps_one_served_entry_for_many_replays(
    cassette_dir: Path, upstreams: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    record(cassette_dir, upstreams, "many")
    monkeypatch.setenv("CI", "true")
    with ProxyServer(cassette_dir, upstreams=upstreams) as proxy:
        for _ in range(300):
            assert post(proxy.port, "/cassettes/many/v1/messages", MESSAGE, **ANTHROPIC_HEADERS)[0] == 200
        session = proxy.app.cassettes.only()
        assert session is not None
        assert session.session.served.kept == 1 and len(session.session.served) == 300


# -- 2. the token ---------------------------------------------------------------------------------
def test_an_empty_token_is_refused_everywhere(
    cassette_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ValueError, match="empty"):
        ProxyServer(cassette_dir, host="0.0.0.0", token="")
    args = type("Args", (), {"token": None, "token_file": None})
    monkeypatch.setenv("LLMVCR_TOKEN", "")
    with pytest.raises(Exception, match=r"\$LLMVCR_TOKEN is empty"):
        token_of(args)
    monkeypatch.setenv("LLMVCR_TOKEN", "from-env")
    assert token_of(args) == "from-env"
    (tmp_path / "token").write_text("from-file\n")
    args.token_file = str(tmp_path / "token")
    assert token_of(args) == "from-file"
    done = subprocess.run(
        [sys.executable, "-m", "llmvcr", "serve", "--host", "0.0.0.0", "--token", "", "--cassette-dir", "c"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0 and "--token is empty" in done.stderr, done.stderr


@pytest.fixture
def wide(cassette_dir: Path, upstreams: dict[str, str]) -> Iterator[ProxyServer]:
    """Bound off loopback (only 127.0.0.1 is contacted) with a token the user gave."""
    with ProxyServer(cassette_dir, host="0.0.0.0", upstreams=upstreams, token="T0ken-given") as running:
        yield running


def test_off_loopback_every_call_needs_the_token_which_is_never_forwarded(
    wide: ProxyServer, cassette_dir: Path, server: LLMServer
) -> None:
    before = server.request_count
    status, headers, body = post(wide.port, "/cassettes/net/v1/messages", MESSAGE, **ANTHROPIC_HEADERS)
    assert status == 401 and headers["x-should-retry"] == "false" and body["type"] == "error"
    assert server.request_count == before and not (cassette_dir / "net.yaml").exists()
    got = post(
        wide.port,
        "/cassettes/net/v1/messages",
        MESSAGE,
        host=f"0.0.0.0:{wide.port}",  # the bound address, as the URL it prints names it
        **ANTHROPIC_HEADERS,
        **{"x-llmvcr-token": "T0ken-given", "authorization": "Bearer T0ken-given"},
    )
    assert got[0] == 200
    # an SDK that takes only a base URL: the token is a path segment of it
    base = f"http://127.0.0.1:{wide.port}/token/T0ken-given/cassettes/net"
    assert ask(base)
    assert all("T0ken-given" not in json.dumps(r.headers) + r.path for r in server.requests[before:])
    assert "T0ken-given" not in (cassette_dir / "net.yaml").read_text()


def test_a_token_the_user_gave_is_never_printed(wide: ProxyServer, cassette_dir: Path) -> None:
    shown = instructions(wide)
    assert "T0ken-given" not in shown and "/token/$LLMVCR_TOKEN" in shown
    assert "T0ken-given" in wide.env()["ANTHROPIC_BASE_URL"]  # what a command it runs is given
    with ProxyServer(cassette_dir, host="0.0.0.0") as made:
        assert made.token and made.token in instructions(made)


def test_a_foreign_host_is_refused(cassette_dir: Path) -> None:
    def get(port: int, host: str) -> tuple[int, dict[str, str], bytes]:
        return raw(
            port, f"GET /_llmvcr/cassettes HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\n\r\n".encode()
        )

    with ProxyServer(cassette_dir) as proxy:
        status, _, body = get(proxy.port, "rebind.attacker.example")
        assert status == 403 and b"rebind.attacker.example" in body
        assert get(proxy.port, "localhost:1")[0] == 200
        assert get(proxy.port, "llmvcr:8765")[0] == 403
    with ProxyServer(cassette_dir, allow_hosts=("llmvcr",)) as named:
        assert get(named.port, "llmvcr:8765")[0] == 200


# -- 3. no file that is not a cassette is written ---------------------------------------------------
@pytest.mark.parametrize("name", ["notes.yaml", "config.json"])
def test_record_mode_all_never_overwrites_a_file_that_is_not_a_cassette(
    name: str, cassette_dir: Path, upstreams: dict[str, str], server: LLMServer
) -> None:
    cassette_dir.mkdir(parents=True, exist_ok=True)
    mine = cassette_dir / name
    mine.write_text('{"important": true}\n' if name.endswith(".json") else "todo: [buy milk]\n")
    before, seen = mine.read_bytes(), server.request_count
    with ProxyServer(cassette_dir, upstreams=upstreams) as proxy:
        status, _, body = post(
            proxy.port,
            "/v1/messages",
            MESSAGE,
            **ANTHROPIC_HEADERS,
            **{"x-llmvcr-cassette": name, "x-llmvcr-record-mode": "all"},
        )
    assert status == ERROR_STATUS and "never overwrites" in body["error"]["message"]
    assert mine.read_bytes() == before and server.request_count == seen


@pytest.mark.filterwarnings("ignore::llmvcr.errors.EmptyRecordingWarning")
def test_two_spellings_of_one_name_are_one_cassette(cassette_dir: Path, upstreams: dict[str, str]) -> None:
    with ProxyServer(cassette_dir, upstreams=upstreams) as proxy:
        assert post(proxy.port, "/_llmvcr/cassettes/suite", {"record_mode": "all"})[0] == 200
        status, _, body = post(
            proxy.port, "/_llmvcr/cassettes/.%2Fsuite", {"record_mode": "all", "prune": True}
        )
        assert status == 400 and "already open" in body["error"]
        assert len(proxy.app.cassettes.names()) == 1


# -- 4. every error is the provider's own ---------------------------------------------------------
def test_a_cassette_name_under_a_file_is_a_provider_error(
    cassette_dir: Path, upstreams: dict[str, str]
) -> None:
    cassette_dir.mkdir(parents=True, exist_ok=True)
    (cassette_dir / "afile.yaml").write_text("x: 1\n")
    with ProxyServer(cassette_dir, upstreams=upstreams) as proxy:
        status, headers, body = post(
            proxy.port, "/cassettes/afile.yaml%2Fx/v1/messages", MESSAGE, **ANTHROPIC_HEADERS
        )
    assert status == ERROR_STATUS and headers["x-should-retry"] == "false"
    assert body["error"]["type"] == "llmvcr_error" and "afile.yaml" in body["error"]["message"]


@pytest.mark.parametrize(
    "options", [{"ignore": 5}, {"replay_speed": "fast"}, {"prune": "yes"}, {"match_on": [1]}], ids=str
)
def test_a_control_body_of_the_wrong_kind_is_a_clear_400(options: dict[str, Any], cassette_dir: Path) -> None:
    with ProxyServer(cassette_dir) as proxy:
        status, headers, body = post(proxy.port, "/_llmvcr/cassettes/typed", options)
    assert status == 400 and headers["content-type"] == "application/json"
    assert f"option {next(iter(options))} needs" in body["error"]


class EarlyClose:
    """An upstream that promises 500 bytes of JSON, sends 13 and closes."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                head, _, body = data.partition(b"\r\n\r\n")
                length = int(re.search(rb"content-length: *(\d+)", head, re.I).group(1))  # type: ignore[union-attr]
                while len(body) < length:  # read it all: a close with unread bytes is a reset
                    body += conn.recv(65536)
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 500\r\n\r\n"
                    b'{"id": "msg_1'
                )


def test_an_upstream_that_closes_early_drops_the_connection_never_a_500(cassette_dir: Path) -> None:
    early = EarlyClose()
    with ProxyServer(cassette_dir, upstreams={"anthropic": early.url}) as proxy:
        data = json.dumps(MESSAGE).encode()
        head = "".join(f"{k}: {v}\r\n" for k, v in ANTHROPIC_HEADERS.items())
        request = (
            f"POST /cassettes/early/v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
            f"{head}content-length: {len(data)}\r\n\r\n"
        ).encode() + data
        status, _headers, body = raw(proxy.port, request)
    early.sock.close()
    assert status == 200 and b"Internal Server Error" not in body  # base: uvicorn's text/plain 500
    assert b'{"id": "msg_1' in body and not body.endswith(b"0\r\n\r\n")  # cut: no final chunk
    recorded = yaml.safe_load((cassette_dir / "early.yaml").read_text())["entries"][0]["response"]
    assert recorded["body"] == '{"id": "msg_1' and "RemoteProtocolError" in recorded["failure"]


def test_the_502_shows_no_key_and_no_upstream_password(cassette_dir: Path) -> None:
    upstreams = {"google": "http://user:S3cretUpstreamPass@127.0.0.1:9"}
    with ProxyServer(cassette_dir, upstreams=upstreams) as proxy:
        status, _, body = post(
            proxy.port,
            "/cassettes/g/v1beta/models/gemini-test:generateContent?key=AIzaSy-SENTINEL-key-0123456789abcdef",
            {"contents": [{"parts": [{"text": "hi"}]}]},
        )
    text = json.dumps(body)
    assert status == 502 and "could not reach its upstream http://127.0.0.1:9/v1beta" in text
    assert "S3cretUpstreamPass" not in text and "AIzaSy" not in text and "key=" not in text


# -- 5. bounded -------------------------------------------------------------------------------------
def test_a_body_over_the_limit_is_a_provider_shaped_413(cassette_dir: Path, server: LLMServer) -> None:
    upstreams, before = {"anthropic": server.url}, server.request_count
    with ProxyServer(cassette_dir, upstreams=upstreams, max_body=2**20) as proxy:
        big = {**MESSAGE, "messages": [{"role": "user", "content": "x" * 2**21}]}
        status, headers, body = post(proxy.port, "/cassettes/big/v1/messages", big, **ANTHROPIC_HEADERS)
        assert status == 413 and headers["x-should-retry"] == "false"
        assert body["type"] == "error" and "--max-body-mb" in body["error"]["message"]
        control = post(proxy.port, "/_llmvcr/cassettes/big", {"seed": "x" * 2**21})
        assert control[0] == 413
    assert server.request_count == before


def test_a_connection_that_sends_no_headers_is_closed(cassette_dir: Path) -> None:
    with ProxyServer(cassette_dir, header_timeout=0.5) as proxy:
        silent = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
        drip = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
        drip.sendall(b"GET /_llmvcr/health HTTP/1.1\r\n")
        started = time.monotonic()
        for sock in (silent, drip):
            with sock:
                assert sock.recv(100) == b""  # closed by the proxy (a timeout here raises instead)
        assert time.monotonic() - started < 5
        status, _, _body = raw(
            proxy.port, b"GET /_llmvcr/health HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n"
        )
        assert status == 200
