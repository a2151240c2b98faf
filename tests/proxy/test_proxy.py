"""``llmvcr serve``: the real SDKs and curl record through the proxy against the loopback server, then
replay with the server seeing no request and every socket but the proxy's refused; the cassettes are
the in-process ones, both ways."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
import yaml
from conftest import ANTHROPIC_SENTINEL, OPENAI_SENTINEL
from llm_server import LLMServer
from test_record_replay import SYNC, _assert_no_secrets

import llmvcr
from llmvcr.proxy import ProxyServer
from llmvcr.proxy.fixture import llmvcr_proxy  # noqa: F401 - the fixture, as a conftest's pytest_plugins loads it
from llmvcr.proxy.routes import ERROR_STATUS, sdk_version

GEMINI_KEY = "AIzaSy-SENTINEL-gemini-key-0123456789abc"
ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.fixture
def upstreams(server: LLMServer) -> dict[str, str]:
    return {"anthropic": server.url, "openai": server.url, "google": server.url}


@pytest.fixture
def proxy(cassette_dir: Path, upstreams: dict[str, str]) -> Iterator[ProxyServer]:
    with ProxyServer(cassette_dir, upstreams=upstreams, loop="asyncio") as running:
        yield running


@pytest.fixture
def only_the_proxy(monkeypatch: pytest.MonkeyPatch) -> Callable[[ProxyServer], list[Any]]:
    """Refuse every socket connection but one to the proxy (the proxy's own upstream calls too:
    it runs in this process on asyncio, which connects through ``socket.connect``)."""
    attempts: list[Any] = []

    def install(running: ProxyServer) -> list[Any]:
        real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex

        def allowed(address: Any) -> bool:
            return isinstance(address, tuple) and address[1] == running.port

        def connect(self: socket.socket, address: Any) -> None:
            if not allowed(address):
                attempts.append(address)
                raise ConnectionRefusedError(f"network blocked: connect to {address!r}")
            real_connect(self, address)

        def connect_ex(self: socket.socket, address: Any) -> int:
            if not allowed(address):
                attempts.append(address)
                raise ConnectionRefusedError(f"network blocked: connect to {address!r}")
            return real_connect_ex(self, address)

        monkeypatch.setattr(socket.socket, "connect", connect)
        monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
        return attempts

    return install


def clients(base: str) -> tuple[Any, Any]:
    a = anthropic.Anthropic(api_key=ANTHROPIC_SENTINEL, base_url=base, max_retries=0)
    o = openai.OpenAI(api_key=OPENAI_SENTINEL, base_url=base + "/v1", max_retries=0)
    return a, o


def gemini(base: str, **headers: str) -> Any:
    from google import genai
    from google.genai import types

    options = types.HttpOptions(
        base_url=base, headers=headers or None, retry_options=types.HttpRetryOptions(attempts=1)
    )
    return genai.Client(api_key=GEMINI_KEY, http_options=options)


def g_calls(g: Any) -> Any:
    plain = g.models.generate_content(model="gemini-test", contents="hello gemini")
    streamed = [c.text for c in g.models.generate_content_stream(model="gemini-test", contents="hi stream")]
    embedded = g.models.embed_content(model="text-embedding-test", contents=["one", "two"])
    no_http = {"sdk_http_response"}  # the HTTP headers the SDK saw (a date, a server name)
    return [plain.model_dump(exclude=no_http), streamed, embedded.model_dump(exclude=no_http)]


def _no_keys(folder: Path) -> None:
    _assert_no_secrets(folder)
    for path in folder.rglob("*.yaml"):
        assert GEMINI_KEY not in path.read_text()


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")
@pytest.mark.parametrize("scenario", SYNC, ids=lambda f: f.__name__)
def test_python_sdks_record_through_the_proxy_and_replay_with_no_network(
    scenario: Callable[..., Any],
    cassette_dir: Path,
    upstreams: dict[str, str],
    server: LLMServer,
    only_the_proxy: Callable[[ProxyServer], list[Any]],
) -> None:
    name = scenario.__name__
    with ProxyServer(cassette_dir, upstreams=upstreams) as recording:
        live = scenario(*clients(recording.base_url(name)))
    assert (cassette_dir / f"{name}.yaml").exists()
    _no_keys(cassette_dir)
    before = server.request_count
    with ProxyServer(cassette_dir, upstreams=upstreams, loop="asyncio") as replaying:
        refused = only_the_proxy(replaying)
        again = scenario(*clients(replaying.base_url(name)))
    assert again == live
    assert server.request_count == before and refused == []


def test_gemini_records_and_replays_through_the_proxy(
    proxy: ProxyServer,
    cassette_dir: Path,
    upstreams: dict[str, str],
    server: LLMServer,
    only_the_proxy: Callable[[ProxyServer], list[Any]],
) -> None:
    g = gemini(proxy.url, **{"x-llmvcr-cassette": "gemini"})
    live = g_calls(g)
    proxy.stop()
    _no_keys(cassette_dir)
    recorded = yaml.safe_load((cassette_dir / "gemini.yaml").read_text())
    assert [e["request"]["path"].rsplit(":", 1)[1] for e in recorded["entries"]] == [
        "generateContent",
        "streamGenerateContent",
        "batchEmbedContents",
    ]
    before = server.request_count
    with ProxyServer(cassette_dir, upstreams=upstreams, loop="asyncio") as replaying:
        refused = only_the_proxy(replaying)
        g = gemini(replaying.base_url("gemini"))
        assert g_calls(g) == live
    assert server.request_count == before and refused == []


def test_a_cassette_recorded_through_the_proxy_replays_in_process_and_back(
    proxy: ProxyServer, cassette_dir: Path, anthropic_client: Any, openai_client: Any, server: LLMServer
) -> None:
    a, o = clients(proxy.base_url("both-ways"))
    streamed = [
        e.model_dump()
        for e in a.messages.create(
            model="claude-test", max_tokens=64, messages=[{"role": "user", "content": "hi"}], stream=True
        )
    ]
    chat = o.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": "hi"}])
    assert (
        server.last_request.headers["authorization"] == f"Bearer {OPENAI_SENTINEL}"
    )  # the caller's key went on
    proxy.stop()
    assert OPENAI_SENTINEL not in (cassette_dir / "both-ways.yaml").read_text()  # and was not written
    before = server.request_count
    with llmvcr.use_cassette(cassette_dir / "both-ways.yaml", record_mode="none"):
        again = anthropic_client.messages.create(
            model="claude-test", max_tokens=64, messages=[{"role": "user", "content": "hi"}], stream=True
        )
        assert [e.model_dump() for e in again] == streamed
        in_process = openai_client.chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "hi"}]
        )
        assert in_process.model_dump() == chat.model_dump()
    assert server.request_count == before

    with llmvcr.use_cassette(cassette_dir / "in-process.yaml"):
        made = anthropic_client.messages.create(
            model="claude-test", max_tokens=64, messages=[{"role": "user", "content": "back"}]
        )
    before = server.request_count
    with ProxyServer(cassette_dir, upstreams={}) as replaying:
        a, _ = clients(replaying.base_url("in-process"))
        back = a.messages.create(
            model="claude-test", max_tokens=64, messages=[{"role": "user", "content": "back"}]
        )
    assert back.model_dump() == made.model_dump() and server.request_count == before


def _curl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["curl", "-sS", "-i", *args], capture_output=True, text=True, timeout=60)


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_curl_records_and_replays_every_stream_form(
    proxy: ProxyServer, cassette_dir: Path, server: LLMServer, upstreams: dict[str, str]
) -> None:
    body = json.dumps(
        {
            "model": "claude-test",
            "max_tokens": 64,
            "stream": True,
            "messages": [{"role": "user", "content": "curl"}],
        }
    )
    gem = json.dumps({"contents": [{"role": "user", "parts": [{"text": "curl gemini"}]}]})
    calls = [
        [
            f"{proxy.base_url('curl')}/v1/messages",
            "-H",
            f"x-api-key: {ANTHROPIC_SENTINEL}",
            "-H",
            "anthropic-version: 2023-06-01",
            "-H",
            "content-type: application/json",
            "-d",
            body,
        ],
        # Gemini's stream both ways: server-sent events, and one JSON array
        [
            f"{proxy.base_url('curl')}/v1beta/models/gemini-test:streamGenerateContent?alt=sse",
            "-H",
            f"x-goog-api-key: {GEMINI_KEY}",
            "-H",
            "content-type: application/json",
            "-d",
            gem,
        ],
        [
            f"{proxy.base_url('curl')}/v1beta/models/gemini-test:streamGenerateContent",
            "-H",
            f"x-goog-api-key: {GEMINI_KEY}",
            "-H",
            "content-type: application/json",
            "-d",
            gem,
        ],
    ]
    live = [_curl(*c) for c in calls]
    assert all(r.returncode == 0 and " 200" in r.stdout.splitlines()[0] for r in live), live
    assert "event: message_stop" in live[0].stdout and live[2].stdout.rstrip().endswith("]")
    proxy.stop()
    _no_keys(cassette_dir)
    before = server.request_count
    with ProxyServer(cassette_dir, upstreams=upstreams) as replaying:
        again = [_curl(*[c[0].replace(proxy.url, replaying.url), *c[1:]]) for c in calls]
    assert server.request_count == before

    def meaning(r: subprocess.CompletedProcess[str]) -> Any:
        """The answer as its events (name, parsed data) or its JSON: the bytes are re-encoded on replay."""
        head, _, body = r.stdout.partition("\n\n")
        if "text/event-stream" not in head:
            return json.loads(body)
        events = [
            dict(line.split(": ", 1) for line in block.splitlines()) for block in body.split("\n\n") if block
        ]
        return [(e.get("event"), json.loads(e["data"])) for e in events]

    assert [meaning(r) for r in again] == [meaning(r) for r in live]
    assert len(meaning(live[0])) > 5 and len(meaning(live[1])) >= 1


def _post(url: str, payload: Any = None, method: str = "POST", **headers: str) -> tuple[int, Any]:
    data = None if payload is None else json.dumps(payload).encode()
    headers = {"content-type": "application/json", **headers} if data is not None else headers
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_a_call_with_no_cassette_is_refused_in_each_providers_shape_and_never_sent(
    proxy: ProxyServer, server: LLMServer
) -> None:
    before = server.request_count
    a = anthropic.Anthropic(api_key=ANTHROPIC_SENTINEL, base_url=proxy.url)  # default retries: 2
    o = openai.OpenAI(api_key=OPENAI_SENTINEL, base_url=proxy.url + "/v1")
    with pytest.raises(anthropic.APIStatusError) as a_info:
        a.messages.create(model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "x"}])
    with pytest.raises(openai.APIStatusError) as o_info:
        o.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": "x"}])
    from google.genai import errors

    g = gemini(proxy.url)  # held: a client nobody holds closes its connection pool
    with pytest.raises(errors.ClientError) as g_info:
        g.models.generate_content(model="gemini-test", contents="x")
    assert a_info.value.status_code == o_info.value.status_code == g_info.value.code == ERROR_STATUS
    assert a_info.value.body["error"]["message"].startswith("llmvcr: POST /v1/messages names no cassette")
    assert o_info.value.body["message"].startswith("llmvcr: POST /v1/chat/completions names no")
    assert g_info.value.message.startswith("llmvcr: POST /v1")
    assert "/models/gemini-test:generateContent names no cassette" in g_info.value.message
    assert server.request_count == before


def test_a_miss_is_the_divergence_sentence_in_the_providers_error_and_is_not_retried(
    proxy: ProxyServer, cassette_dir: Path
) -> None:
    base = proxy.base_url("miss")
    a = anthropic.Anthropic(api_key=ANTHROPIC_SENTINEL, base_url=base, max_retries=0)
    a.messages.create(model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "one"}])
    assert _post(f"{proxy.url}/_llmvcr/cassettes/miss", method="DELETE")[0] == 200
    retrying = anthropic.Anthropic(api_key=ANTHROPIC_SENTINEL, base_url=base, max_retries=3)
    headers = {"x-llmvcr-record-mode": "none"}
    with pytest.raises(anthropic.APIStatusError) as info:
        retrying.messages.create(
            model="claude-test",
            max_tokens=8,
            messages=[{"role": "user", "content": "two"}],
            extra_headers=headers,
        )
    message = info.value.body["error"]["message"]
    assert message.startswith(f"llmvcr: no recorded entry in {cassette_dir / 'miss.yaml'} answers anthropic")
    assert "recorded 'one' != live 'two'" in message and "x-llmvcr-record-mode: all" in message
    status, closed = _post(f"{proxy.url}/_llmvcr/cassettes/miss", method="DELETE")
    assert status == 200 and closed["calls"] == 1  # the SDK did not send it again
    assert [e["request"]["body"]["messages"][0]["content"] for e in closed["unplayed"]] == ["one"]
    # the summary carries what the client was answered (a JS `finally` would hide it), and Node's command
    assert closed["divergences"] == [message]
    assert closed["summary"].endswith(
        "1 call, 0 replayed, 0 recorded, 1 entry unplayed; 1 call no entry answered (424)"
    )
    assert "llmvcr serve --record-mode all --cassette-dir " in message and "pytest: -k" not in message


def test_the_control_api_opens_a_cassette_for_clients_that_name_none(
    proxy: ProxyServer, cassette_dir: Path, server: LLMServer
) -> None:
    status, opened = _post(f"{proxy.url}/_llmvcr/cassettes/suite%2Ftest-one", {"seed": "bug-1"})
    assert status == 200 and opened["path"] == str(cassette_dir / "suite" / "test-one.yaml")
    a, o = clients(proxy.url)
    a.messages.create(model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "c"}])
    o.embeddings.create(model="text-embedding-test", input="c")
    status, closed = _post(f"{proxy.url}/_llmvcr/cassettes/suite%2Ftest-one", method="DELETE")
    assert status == 200 and closed["recorded"] == 2 and closed["unplayed"] == []
    written = yaml.safe_load((cassette_dir / "suite" / "test-one.yaml").read_text())
    assert written["seed"] == "bug-1" and [e["provider"] for e in written["entries"]] == [
        "anthropic",
        "openai",
    ]
    assert _post(f"{proxy.url}/_llmvcr/cassettes/suite%2Ftest-one", {"record_mode": "none"})[0] == 200
    before = server.request_count
    a.messages.create(model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "c"}])
    status, closed = _post(f"{proxy.url}/_llmvcr/cassettes/suite%2Ftest-one", method="DELETE")
    assert closed["replayed"] == 1 and len(closed["unplayed"]) == 1 and server.request_count == before
    assert "1 entry unplayed" in closed["summary"] and closed["divergences"] == []


@pytest.mark.parametrize("name", ["..%2Fescape", "%2Fetc%2Fpasswd", "a%2F..%2F..%2Fx"])
def test_a_cassette_outside_the_folder_is_refused(proxy: ProxyServer, cassette_dir: Path, name: str) -> None:
    status, answer = _post(f"{proxy.url}/_llmvcr/cassettes/{name}", {})
    assert status == 400 and "refused cassette" in answer["error"]
    a, _ = clients(f"{proxy.url}/cassettes/{name}")
    with pytest.raises(anthropic.APIStatusError, match="refused cassette"):
        a.messages.create(model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "x"}])
    assert not any(
        p.suffix == ".yaml" for p in cassette_dir.parent.rglob("*") if cassette_dir not in p.parents
    )


def test_on_ci_a_cassette_replays_only(
    proxy: ProxyServer, monkeypatch: pytest.MonkeyPatch, server: LLMServer
) -> None:
    monkeypatch.setenv("CI", "true")
    a, _ = clients(proxy.base_url("on-ci"))
    before = server.request_count
    with pytest.raises(anthropic.APIStatusError, match="record_mode='none' forbids recording"):
        a.messages.create(model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "x"}])
    assert server.request_count == before


@pytest.mark.filterwarnings("ignore::llmvcr.errors.EmptyRecordingWarning")  # opened, never called
def test_off_loopback_the_control_api_needs_the_token(cassette_dir: Path) -> None:
    with ProxyServer(cassette_dir, host="0.0.0.0") as wide:
        url = f"http://127.0.0.1:{wide.port}/_llmvcr/cassettes/t"
        assert wide.token and _post(url, {})[0] == 401
        assert _post(url, {}, **{"x-llmvcr-token": wide.token})[0] == 200


@pytest.mark.slow
def test_many_clients_at_once_lose_no_entry(proxy: ProxyServer, cassette_dir: Path) -> None:
    errors: list[BaseException] = []

    def client(n: int) -> None:
        try:
            a, _ = clients(proxy.base_url(f"many-{n % 4}"))
            for i in range(5):
                a.messages.create(
                    model="claude-test", max_tokens=8, messages=[{"role": "user", "content": f"{n}-{i}"}]
                )
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    proxy.stop()
    counts = [len(yaml.safe_load((cassette_dir / f"many-{k}.yaml").read_text())["entries"]) for k in range(4)]
    assert counts == [20, 20, 20, 20]


@pytest.mark.slow
@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL], ids=lambda s: s.name)
def test_the_command_loses_no_recorded_entry_when_stopped(
    how: signal.Signals, tmp_path: Path, server: LLMServer
) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("CI", None)
    command = [
        sys.executable,
        "-m",
        "llmvcr",
        "serve",
        "--cassette-dir",
        str(tmp_path),
        "--upstream",
        f"anthropic={server.url}",
        "--env-file",
        str(tmp_path / "env"),
    ]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "env").exists() or not (tmp_path / "env").read_text():
            assert process.poll() is None and time.monotonic() < deadline, process.stderr
            time.sleep(0.05)
        url = dict(line.split("=", 1) for line in (tmp_path / "env").read_text().split())[
            "ANTHROPIC_BASE_URL"
        ]
        a = anthropic.Anthropic(
            api_key=ANTHROPIC_SENTINEL, base_url=url + "/cassettes/stopped", max_retries=5
        )
        for i in range(3):
            a.messages.create(
                model="claude-test", max_tokens=8, messages=[{"role": "user", "content": str(i)}]
            )
        process.send_signal(how)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert "Point each SDK at it" in (process.stdout.read() if process.stdout else "")
    assert len(yaml.safe_load((tmp_path / "stopped.yaml").read_text())["entries"]) == 3


@pytest.fixture
def llmvcr_proxy_upstreams(upstreams: dict[str, str]) -> dict[str, str]:  # the fixture's, to the emulator
    return upstreams


@pytest.mark.slow
def test_the_fixture_serves_a_subprocess(
    llmvcr_proxy: ProxyServer,  # noqa: F811 - the imported fixture
    server: LLMServer,
    request: Any,
) -> None:
    env = {**os.environ, **llmvcr_proxy.env(cassette="from-a-process"), "PYTHONPATH": str(ROOT)}
    script = (
        "import anthropic; a = anthropic.Anthropic(api_key='sk-ant-x', max_retries=0); "
        "print(a.messages.create(model='claude-test', max_tokens=8, messages=[{'role':'user','content':'p'}]).id)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    folder = Path(str(request.node.path)).parent / "cassettes"
    written = folder / "from-a-process.yaml"
    try:
        llmvcr_proxy.stop()
        assert (
            yaml.safe_load(written.read_text())["entries"][0]["response"]["body"]["id"] == done.stdout.strip()
        )
    finally:
        written.unlink(missing_ok=True)


@pytest.mark.slow
def test_the_node_sdks_record_and_replay_through_the_proxy() -> None:
    """tests/node/proxy.test.ts: @anthropic-ai/sdk, openai, @google/genai and the ai SDK with its
    anthropic and openai providers, each call shape recorded then replayed with the server stopped."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are not installed here (CI installs them and runs this test)")
    folder = ROOT / "tests" / "node"
    env = {**os.environ, "PYTHON": sys.executable, "PYTHONPATH": str(ROOT)}
    env.pop("CI", None)
    if not (folder / "node_modules").is_dir():  # from the committed package-lock.json
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=folder, check=True, timeout=600)
    done = subprocess.run([npm, "test"], cwd=folder, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "# pass 6" in done.stdout and "# fail 0" in done.stdout


def test_a_stream_the_upstream_drops_is_dropped_again_on_replay(
    proxy: ProxyServer, cassette_dir: Path, upstreams: dict[str, str], server: LLMServer
) -> None:
    def read(base: str) -> tuple[list[Any], str]:
        a, _ = clients(base)
        events: list[Any] = []
        stream = a.messages.create(
            model="claude-test",
            max_tokens=64,
            stream=True,
            messages=[{"role": "user", "content": "__stream_drop__"}],
        )
        with pytest.raises(Exception) as info:
            for event in stream:
                events.append(event.model_dump())
        return events, type(info.value).__name__

    live = read(proxy.base_url("dropped"))
    proxy.stop()
    entry = yaml.safe_load((cassette_dir / "dropped.yaml").read_text())["entries"][0]["response"]
    assert entry["failure"] and len(entry["stream"]) >= len(live[0]) > 0  # the SDK skips ping events
    before = server.request_count
    with ProxyServer(cassette_dir, upstreams=upstreams) as replaying:
        assert read(replaying.base_url("dropped")) == live
    assert server.request_count == before


def test_a_client_that_hangs_up_mid_stream_leaves_the_entry_truncated(
    proxy: ProxyServer, cassette_dir: Path
) -> None:
    body = json.dumps(
        {
            "model": "claude-test",
            "max_tokens": 64,
            "stream": True,
            "messages": [{"role": "user", "content": "__slow_stream__"}],
        }
    ).encode()
    head = (
        f"POST /cassettes/hung-up/v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        f"anthropic-version: 2023-06-01\r\nx-api-key: {ANTHROPIC_SENTINEL}\r\ncontent-length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", proxy.port)) as conn:
        conn.sendall(head + body)
        received = b""
        while b"message_start" not in received:
            received += conn.recv(4096)
    proxy.stop()
    entry = yaml.safe_load((cassette_dir / "hung-up.yaml").read_text())["entries"][0]["response"]
    assert entry["truncated"] is True
    assert entry["stream"][0]["event"] == "message_start" and entry["stream"][-1]["event"] != "message_stop"


@pytest.mark.parametrize(
    ("agent", "named"),
    [
        ("Anthropic/Python 2.17.0", "2.17.0"),  # as an in-process recording names it
        ("OpenAI/JS 6.49.0", "JS 6.49.0"),
        ("google-genai-sdk/3.6.1 gl-python/3.11.7", "3.6.1"),
        ("google-genai-sdk/2.32.0 gl-node/v20.20.2", "node 2.32.0"),
        ("ai-sdk/anthropic/3.0.140 runtime/node.js/20", None),
        ("curl/8.5.0", None),
    ],
)
def test_recorded_with_names_the_calling_sdk(agent: str, named: str | None) -> None:
    assert sdk_version({"user-agent": agent}) == named


@pytest.mark.slow
def test_one_command_serves_a_process_then_stops(tmp_path: Path, server: LLMServer) -> None:
    script = (
        "import anthropic, sys; a = anthropic.Anthropic(api_key='sk-ant-x', max_retries=0); "
        "print(a.messages.create(model='claude-test', max_tokens=8, messages=[{'role':'user','content':sys.argv[1]}]).id)"
    )

    def run(prompt: str, **env: str) -> subprocess.CompletedProcess[str]:
        command = [
            sys.executable,
            "-m",
            "llmvcr",
            "serve",
            "--cassette-dir",
            str(tmp_path),
            "--cassette",
            "e2e",
            "--upstream",
            f"anthropic={server.url}",
            "--",
            sys.executable,
            "-c",
            script,
            prompt,
        ]
        environ = {**os.environ, "PYTHONPATH": str(ROOT), **env}
        if "CI" not in env:
            environ.pop("CI", None)
        return subprocess.run(command, env=environ, capture_output=True, text=True, timeout=120)

    recorded = run("one")
    assert recorded.returncode == 0, recorded.stderr
    assert len(yaml.safe_load((tmp_path / "e2e.yaml").read_text())["entries"]) == 1
    before = server.request_count
    replayed = run("one", CI="true")
    assert replayed.returncode == 0 and replayed.stdout.split()[-1] == recorded.stdout.split()[-1]
    missed = run("two", CI="true")
    assert missed.returncode != 0 and "llmvcr: no recorded entry in" in missed.stderr
    assert server.request_count == before
