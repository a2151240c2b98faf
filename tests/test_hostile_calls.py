"""Calls a hostile server or an unlucky test makes: compressed and cut streams, worker threads,
multipart uploads and look-alike test ids all record and replay as they ran live.
"""

from __future__ import annotations

import asyncio
import contextvars
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import llmvcr
from llmvcr.matching.rules import default_request_hash
from llmvcr.providers._streams import Capture
from llmvcr.pytest_plugin import cassette_name, cassette_path


def _chat_stream(client: Any, text: str) -> Any:
    return client.chat.completions.create(
        model="gpt-test", messages=[{"role": "user", "content": text}], stream=True
    )


def _anthropic_stream(client: Any, text: str) -> Any:
    return client.messages.create(
        model="claude-test", max_tokens=16, messages=[{"role": "user", "content": text}], stream=True
    )


def _outcome(stream: Any) -> tuple[list[Any], str]:
    """The events a stream gave, and how it ended (the error class and message, or "completed")."""
    events: list[Any] = []
    try:
        for event in stream:
            events.append(event.model_dump())
    except Exception as err:  # how it ended is part of what is compared
        wrapped = err.__cause__ is not None and type(err).__module__.startswith(("openai", "anthropic"))
        cause = f" (from {type(err.__cause__).__name__})" if wrapped else ""  # the SDK's wrapper
        return events, f"{type(err).__name__}: {err}{cause}"
    return events, "completed"


def _chat_text(events: list[Any]) -> str:
    return "".join(c["choices"][0]["delta"].get("content") or "" for c in events if c["choices"])


# -- 1. a compressed event stream ----------------------------------------------------------
@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_a_compressed_event_stream_records_its_events(
    openai_client: Any, server: Any, request: Any, encoding: str
) -> None:
    text = f"__{encoding}__ hello there"
    with llmvcr.recording(f"sse-{encoding}") as cassette:
        live = _outcome(_chat_stream(openai_client, text))
    assert live[1] == "completed" and _chat_text(live[0]) == f"Echo: {text}"
    (entry,) = cassette.entries
    assert entry.response.stream and entry.response.stream[-1]["data"] == "[DONE]"
    before = server.request_count
    request.getfixturevalue("no_network")
    with llmvcr.recording(f"sse-{encoding}", record_mode="none"):
        assert _outcome(_chat_stream(openai_client, text)) == live
    assert server.request_count == before


def test_a_compressed_anthropic_stream_replays_its_text(anthropic_client: Any, request: Any) -> None:
    with llmvcr.recording("sse-gzip-anthropic"):
        live = _outcome(_anthropic_stream(anthropic_client, "__gzip__ hi"))
    assert live[1] == "completed" and len(live[0]) > 3
    request.getfixturevalue("no_network")
    with llmvcr.recording("sse-gzip-anthropic", record_mode="none"):
        assert _outcome(_anthropic_stream(anthropic_client, "__gzip__ hi")) == live


def test_a_compressed_stream_read_asynchronously(async_openai_client: Any, request: Any) -> None:
    async def run() -> str:
        stream = await _chat_stream(async_openai_client, "__gzip__ async")
        return "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])

    with llmvcr.recording("sse-gzip-async") as cassette:
        live = asyncio.run(run())
    assert live == "Echo: __gzip__ async" and cassette.entries[0].response.stream
    request.getfixturevalue("no_network")
    with llmvcr.recording("sse-gzip-async", record_mode="none"):
        assert asyncio.run(run()) == live


def test_an_encoding_llmvcr_cannot_decode_is_a_clear_error_and_records_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for module in ("brotli", "brotlicffi"):  # as on a machine without them
        monkeypatch.setitem(sys.modules, module, None)
    recorded: list[Any] = []
    capture = Capture(recorded.append, 200, {"content-encoding": "br"}, sse=True)
    capture.wire_encoded()
    with pytest.raises(llmvcr.LLMVCRError, match=r"content-encoding: br.*pip install brotli"):
        list(capture.passing([b"\x8b\x02\x80data: {}\n\n\x03"]))
    capture.finish()
    assert recorded == []
    # an encoding no HTTP library knows reaches the SDK as sent: it is recorded as sent
    capture = Capture(recorded.append, 200, {"content-encoding": "snappy"}, sse=True)
    capture.wire_encoded()
    list(capture.passing([b"data: {}\n\n"]))
    assert [r.stream for r in recorded] == [[{"data": {}, "t": recorded[0].stream[0]["t"]}]]


def test_a_corrupt_compressed_stream_fails_on_replay_as_it_did_live() -> None:
    recorded: list[Any] = []
    capture = Capture(recorded.append, 200, {"content-encoding": "gzip"}, sse=True)
    capture.wire_encoded()
    assert list(capture.passing([b"not gzip at all"])) == [b"not gzip at all"]
    (response,) = recorded
    assert response.stream == [] and (response.failure or "").startswith("DecodingError: ")


# -- 2. a stream cut half-way through an event --------------------------------------------
@pytest.mark.parametrize("sdk", ["openai", "anthropic"])
def test_a_stream_cut_mid_event_replays_the_same_failure(sdk: str, request: Any, server: Any) -> None:
    client = request.getfixturevalue(f"{sdk}_client")
    start = _chat_stream if sdk == "openai" else _anthropic_stream
    text = "__stream_cut__ one two three four five six seven"
    with llmvcr.recording(f"cut-{sdk}") as cassette:
        live = _outcome(start(client, text))
    # anthropic lets the HTTP library's error through; openai wraps it
    assert live[0] and live[1].startswith(("RemoteProtocolError: ", "APIConnectionError: "))
    assert "RemoteProtocolError" in live[1]
    before = server.request_count
    request.getfixturevalue("no_network")
    with llmvcr.recording(f"cut-{sdk}", record_mode="none"):
        assert _outcome(start(client, text)) == live
    assert server.request_count == before
    (entry,) = cassette.entries  # the half event the SDK never saw is not kept
    assert entry.response.failure and all(not isinstance(e["data"], str) for e in entry.response.stream or [])


# -- 3. worker threads of a replay-only cassette ------------------------------------------
def _ask(client: Any, text: str) -> str:
    reply = client.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": text}])
    return str(reply.choices[0].message.content)


def _with_another_cassette_open(work: Any) -> Any:
    """Run ``work()`` while a second thread holds another cassette open."""
    opened, done = threading.Event(), threading.Event()

    def other() -> None:
        with llmvcr.recording("other-thread"):
            opened.set()
            done.wait(30)

    thread = threading.Thread(target=other)
    thread.start()
    try:
        assert opened.wait(30)
        return work()
    finally:
        done.set()
        thread.join()


@pytest.mark.filterwarnings("ignore::llmvcr.errors.EmptyRecordingWarning")
@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
def test_worker_threads_of_a_replay_only_cassette_never_go_live(openai_client: Any, server: Any) -> None:
    with llmvcr.recording("workers"):
        texts = [_ask(openai_client, f"job {i}") for i in range(4)]
    before = server.request_count

    def plain_threads() -> list[Any]:
        with llmvcr.recording("workers", record_mode="none"), ThreadPoolExecutor(4) as pool:
            futures = [pool.submit(_ask, openai_client, f"job {i}") for i in range(4)]
            return [f.exception() for f in futures]

    errors = _with_another_cassette_open(plain_threads)
    assert server.request_count == before  # nothing went live
    assert all(isinstance(e, llmvcr.LLMVCRError) for e in errors), errors
    message = str(errors[0])
    assert "workers.yaml" in message and "record_mode='none'" in message and "copy_context" in message

    def bound_threads() -> list[str]:
        with llmvcr.recording("workers", record_mode="none"), ThreadPoolExecutor(4) as pool:
            futures = [
                pool.submit(contextvars.copy_context().run, _ask, openai_client, f"job {i}") for i in range(4)
            ]
            return [f.result() for f in futures]

    assert _with_another_cassette_open(bound_threads) == texts
    assert server.request_count == before


# -- 4. a multipart upload ------------------------------------------------------------------
def test_a_multipart_upload_replays_in_strict_mode(openai_client: Any, server: Any, request: Any) -> None:
    def upload(data: bytes) -> Any:
        return openai_client.files.create(file=("batch.jsonl", data), purpose="batch")

    text = b'{"custom_id": "a"}\n'
    binary = bytes(range(256))
    with llmvcr.recording("upload"):
        live = [upload(text).model_dump(), upload(binary).model_dump()]
    assert live[0]["id"] != live[1]["id"] and live[1]["bytes"] == 256
    before = server.request_count
    request.getfixturevalue("no_network")
    with llmvcr.recording("upload", record_mode="none", mode="strict"):
        assert [upload(text).model_dump(), upload(binary).model_dump()] == live
        with pytest.raises(llmvcr.ReplayDivergence):
            upload(b"other content")
    assert server.request_count == before


def test_multipart_bodies_hash_by_their_parts_not_their_boundary() -> None:
    def body(boundary: str, value: str) -> str:
        return (
            f'--{boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\n{value}\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n'
            f"Content-Type: text/plain\r\n\r\nhello\r\n--{boundary}--\r\n"
        )

    def key(text: str) -> str:
        return default_request_hash({"method": "POST", "path": "/v1/files", "body": text})

    assert key(body("a1b2", "batch")) == key(body("ffee99", "batch"))
    assert key(body("a1b2", "batch")) != key(body("a1b2", "fine-tune"))
    # a body that only looks like it starts a multipart one is hashed as written
    assert key("--x\r\nnot a part") != key("--y\r\nnot a part")


# -- 5. cassette names ------------------------------------------------------------------------
class _Node:
    def __init__(self, nodeid: str, directory: Path | None = None) -> None:
        self.nodeid = nodeid
        self.path = Path(nodeid.split("::")[0])
        self.name = nodeid.split("::")[-1]
        self.config = SimpleNamespace(getoption=lambda name: str(directory))


def _name(nodeid: str) -> str:
    node: Any = _Node(nodeid)
    return cassette_name(node)


def test_different_test_ids_never_share_a_cassette() -> None:
    ids = ["gpt-4o/a", "gpt-4o a", "gpt-4o-a", "gpt-4o_a", "gpt-4o%2Fa", "1", "-1", "a]", "a", "é", "e"]
    ids += ["a::b", "a.b", "", "[x]", "x"]
    names = [_name(f"tests/test_a.py::test_x[{i}]") for i in ids]
    assert len(set(names)) == len(ids), names
    assert all("/" not in n.removeprefix("test_a/") for n in names)
    assert _name("tests/test_a.py::test_x[gpt-4o/a]") == "test_a/test_x[gpt-4o%2Fa]"


def test_a_long_test_id_still_fits_in_a_file_name() -> None:
    prompts = ["word " * 80 + "one", "word " * 80 + "two"]
    names = [_name(f"tests/test_a.py::test_x[{p}]").removeprefix("test_a/") for p in prompts]
    assert names[0] != names[1] and all(len(n) + len(".yaml") <= 255 for n in names)
    assert names[0].startswith("test_x[word%20word%20")
    safe = "x" * 240  # a safe id that fits keeps its name
    assert _name(f"tests/test_a.py::test_x[{safe}]") == f"test_a/test_x[{safe}]"


@pytest.mark.parametrize(
    "nodeid, expected",
    [
        ("tests/test_a.py::test_x", "test_a/test_x"),
        ("tests/test_a.py::TestK::test_x", "test_a/TestK.test_x"),
        ("tests/test_a.py::test_x[gpt-4o-mini-claude_3.5]", "test_a/test_x[gpt-4o-mini-claude_3.5]"),
        ("tests/test_a.py::test_x[0-True]", "test_a/test_x[0-True]"),
    ],
)
def test_safe_test_ids_keep_their_cassette_names(nodeid: str, expected: str) -> None:
    assert _name(nodeid) == expected


def test_a_cassette_under_its_old_name_is_still_used_with_a_warning(tmp_path: Path) -> None:
    node: Any = _Node("tests/test_a.py::test_x[gpt-4o/a b]", tmp_path)
    new = tmp_path / "test_a" / "test_x[gpt-4o%2Fa%20b].yaml"
    assert cassette_path(node) == str(new)  # nothing on disk: the new name
    old = tmp_path / "test_a" / "test_x[gpt-4o-a-b].yaml"
    old.parent.mkdir()
    old.write_text("")
    with pytest.warns(FutureWarning, match=r"test_x\[gpt-4o%2Fa%20b\].yaml.*Rename the file"):
        assert cassette_path(node) == str(old)
    new.write_text("")  # once renamed, the new name wins
    assert cassette_path(node) == str(new)


def test_a_key_in_a_test_id_is_still_redacted_from_the_name() -> None:
    name = _name("tests/test_a.py::test_x[sk-ant-api03-SENTINEL-anthropic-key-0123456789]")
    assert "SENTINEL" not in name and "REDACTED" in name
