"""Match modes, repeats, divergence policies, resume and concurrency."""

from __future__ import annotations

import asyncio
import threading
import warnings
from pathlib import Path
from typing import Any

import pytest

import llmvcr
from llmvcr.errors import EmptyRecordingWarning


def ask(client: Any, text: str) -> str:
    return (
        client.messages.create(
            model="claude-test", max_tokens=16, messages=[{"role": "user", "content": text}]
        )
        .content[0]
        .text
    )


def test_three_identical_requests_replay_three_answers_in_order(anthropic_client: Any) -> None:
    with llmvcr.recording("thrice"):
        live = [ask(anthropic_client, "__counter__ same") for _ in range(3)]
    assert len(set(live)) == 3
    with llmvcr.recording("thrice", record_mode="none") as cassette:
        assert [ask(anthropic_client, "__counter__ same") for _ in range(3)] == live
        with pytest.raises(llmvcr.ReplayDivergence, match="already played"):
            ask(anthropic_client, "__counter__ same")
    assert cassette.unplayed == []


def test_allow_playback_repeats(anthropic_client: Any) -> None:
    with llmvcr.recording("repeat"):
        first = ask(anthropic_client, "once")
    with llmvcr.recording("repeat", record_mode="none", allow_playback_repeats=True):
        assert [ask(anthropic_client, "once") for _ in range(4)] == [first] * 4


def test_sequential_mode_serves_in_order_whatever_the_content(anthropic_client: Any) -> None:
    with llmvcr.recording("seq"):
        live = [ask(anthropic_client, f"request {i} at 12:0{i}") for i in range(3)]
    with llmvcr.recording("seq", mode="sequential", record_mode="none"):
        assert [ask(anthropic_client, f"volatile {i}") for i in range(3)] == live
        with pytest.raises(llmvcr.ReplayDivergence):
            ask(anthropic_client, "a fourth")


def test_loose_mode_matches_the_last_user_message_only(anthropic_client: Any) -> None:
    with llmvcr.recording("loose"):
        live = (
            anthropic_client.messages.create(
                model="claude-test",
                max_tokens=16,
                system="v1",
                messages=[{"role": "user", "content": "the question"}],
            )
            .content[0]
            .text
        )
    with llmvcr.recording("loose", mode="loose", record_mode="none"):
        again = (
            anthropic_client.messages.create(
                model="claude-other",
                max_tokens=99,
                system="v2",
                messages=[{"role": "user", "content": "the question"}],
            )
            .content[0]
            .text
        )
        assert again == live
        with pytest.raises(llmvcr.ReplayDivergence):
            ask(anthropic_client, "another question")


@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
def test_unplayed_entries_are_reported_and_pruned(anthropic_client: Any, cassette_dir: Path) -> None:
    with llmvcr.recording("prune"):
        ask(anthropic_client, "kept")
        ask(anthropic_client, "dropped")
    with llmvcr.recording("prune", record_mode="none") as cassette:
        ask(anthropic_client, "kept")
    assert [e.request.body["messages"][0]["content"] for e in cassette.unplayed] == ["dropped"]
    with llmvcr.recording("prune", record_mode="none", prune=True):
        ask(anthropic_client, "kept")
    assert len(llmvcr.load_cassette(cassette_dir / "prune.yaml")) == 1


def test_on_divergence_warn_serves_positionally(anthropic_client: Any) -> None:
    with llmvcr.recording("warn"):
        first = ask(anthropic_client, "first")
    with llmvcr.recording("warn", on_divergence="warn"):
        with pytest.warns(llmvcr.ReplayDivergenceWarning, match="request.body.messages\\[0\\].content"):
            assert ask(anthropic_client, "changed") == first


def test_on_divergence_live_resumes_and_appends(
    anthropic_client: Any, server: Any, cassette_dir: Path
) -> None:
    with llmvcr.recording("resume"):
        a = ask(anthropic_client, "step 1")
    before = server.request_count
    with llmvcr.recording("resume", on_divergence="live"):
        assert ask(anthropic_client, "step 1") == a  # replayed
        assert server.request_count == before
        b = ask(anthropic_client, "step 2")  # the cassette ends: from here on, live and recorded
        assert server.request_count == before + 1
    with llmvcr.recording("resume", record_mode="none"):
        assert [ask(anthropic_client, "step 1"), ask(anthropic_client, "step 2")] == [a, b]


@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
def test_diff_shortens_long_strings_around_the_difference(anthropic_client: Any) -> None:
    long_a = "x" * 300 + "ALPHA" + "y" * 300
    with llmvcr.recording("long"):
        ask(anthropic_client, long_a)
    with llmvcr.recording("long"), pytest.raises(llmvcr.ReplayDivergence) as info:
        ask(anthropic_client, long_a.replace("ALPHA", "BETA!"))
    text = str(info.value)
    assert "ALPHA" in text and "BETA!" in text and "x" * 300 not in text
    assert info.value.diff[0][0] == "request.body.messages[0].content"


def test_fifty_way_gather_records_and_replays_out_of_order(server: Any) -> None:
    import anthropic

    async def one(client: Any, i: int) -> str:
        m = await client.messages.create(
            model="claude-test", max_tokens=16, messages=[{"role": "user", "content": f"q{i}"}]
        )
        return m.content[0].text

    async def run(order: list[int]) -> dict[int, str]:
        # a client per event loop: its connection pool belongs to the loop that opened it
        client = anthropic.AsyncAnthropic(api_key="sk-ant-test-key-0000", base_url=server.url, max_retries=0)
        results = await asyncio.gather(*(one(client, i) for i in order))
        return dict(zip(order, results, strict=False))

    with llmvcr.recording("gather") as recorded:
        live = asyncio.run(run(list(range(50))))
    assert len(recorded.entries) == 50
    with llmvcr.recording("gather", record_mode="none") as replayed:
        again = asyncio.run(run(list(reversed(range(50)))))
    assert again == live and all(live[i] == f"Echo: q{i}" for i in range(50))
    assert replayed.unplayed == []


def test_threads_record_and_replay(anthropic_client: Any) -> None:
    def work(results: dict[int, str], i: int) -> None:
        results[i] = ask(anthropic_client, f"thread {i}")

    for mode in ("once", "none"):
        results: dict[int, str] = {}
        with llmvcr.recording("threads", record_mode=mode):
            threads = [threading.Thread(target=work, args=(results, i)) for i in range(16)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        assert results == {i: f"Echo: thread {i}" for i in range(16)}


def test_concurrent_cassettes_are_scoped_to_their_task(
    async_anthropic_client: Any, cassette_dir: Path
) -> None:
    async def in_cassette(name: str, text: str) -> int:
        with llmvcr.recording(name) as cassette:
            for _ in range(3):
                await async_anthropic_client.messages.create(
                    model="claude-test", max_tokens=8, messages=[{"role": "user", "content": text}]
                )
                await asyncio.sleep(0)
            return len(cassette.entries)

    async def both() -> list[int]:
        return list(await asyncio.gather(in_cassette("task-a", "a"), in_cassette("task-b", "b")))

    assert asyncio.run(both()) == [3, 3]
    a = llmvcr.load_cassette(cassette_dir / "task-a.yaml")
    b = llmvcr.load_cassette(cassette_dir / "task-b.yaml")
    assert {e.request.body["messages"][0]["content"] for e in a} == {"a"}
    assert {e.request.body["messages"][0]["content"] for e in b} == {"b"}


def test_warn_mode_without_entries_left_still_raises(anthropic_client: Any) -> None:
    with llmvcr.recording("warn-empty"):
        ask(anthropic_client, "only")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with llmvcr.recording("warn-empty", on_divergence="warn"):
            ask(anthropic_client, "only")
            with pytest.raises(llmvcr.ReplayDivergence):
                ask(anthropic_client, "more")


@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
def test_match_on_names_and_callables_through_use_cassette(anthropic_client: Any, server: Any) -> None:
    def first_word(r: dict[str, Any]) -> Any:
        return str(llmvcr.matching.rules.last_user_message(r)).split(" ")[0]

    llmvcr.register_matcher("temperature", lambda r: r["body"].get("temperature"))
    options: dict[str, Any] = {"match_on": ("model", "temperature", first_word)}
    with llmvcr.recording("match-on", **options):
        live = (
            anthropic_client.messages.create(
                model="claude-test",
                max_tokens=16,
                extra_body={"temperature": 0.5},
                messages=[{"role": "user", "content": "paris weather"}],
            )
            .content[0]
            .text
        )
    before = server.request_count
    with llmvcr.recording("match-on", record_mode="none", **options):
        # other max_tokens and other words after the first: not part of this fingerprint
        again = (
            anthropic_client.messages.create(
                model="claude-test",
                max_tokens=99,
                extra_body={"temperature": 0.5},
                messages=[{"role": "user", "content": "paris tomorrow"}],
            )
            .content[0]
            .text
        )
        assert again == live
    for changed in (
        {"model": "claude-other", "temperature": 0.5, "text": "paris"},
        {"model": "claude-test", "temperature": 0.9, "text": "paris"},
        {"model": "claude-test", "temperature": 0.5, "text": "london weather"},
    ):
        with llmvcr.recording("match-on", record_mode="none", **options):
            with pytest.raises(llmvcr.ReplayDivergence):
                anthropic_client.messages.create(
                    model=changed["model"],
                    max_tokens=16,
                    extra_body={"temperature": changed["temperature"]},
                    messages=[{"role": "user", "content": changed["text"]}],
                )
    assert server.request_count == before


def test_matching_is_a_lookup_not_a_scan(anthropic_client: Any) -> None:
    """A custom matcher runs once per recorded entry (building the index) and once per live request."""
    calls = 0

    def counting(r: dict[str, Any]) -> Any:
        nonlocal calls
        calls += 1
        return r["body"]["messages"][-1]["content"]

    n = 30
    with llmvcr.recording("lookup", match_on=(counting,)):
        for i in range(n):
            ask(anthropic_client, f"question {i}")
    calls = 0
    with llmvcr.recording("lookup", match_on=(counting,), record_mode="none"):
        for i in reversed(range(n)):
            assert ask(anthropic_client, f"question {i}") == f"Echo: question {i}"
    assert calls <= 2 * n  # a scan of the entries per request would be n * n = 900 calls
    assert calls >= n


@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
def test_ignore_paths_through_use_cassette(anthropic_client: Any, server: Any) -> None:
    ignore = ["metadata.user_id", "messages[*].content[*].cache_control"]

    def call(user: str, cache: bool, text: str = "hi") -> str:
        block: dict[str, Any] = {"type": "text", "text": text}
        if cache:
            block["cache_control"] = {"type": "ephemeral"}
        return (
            anthropic_client.messages.create(
                model="claude-test",
                max_tokens=16,
                metadata={"user_id": user},
                messages=[{"role": "user", "content": [block]}],
            )
            .content[0]
            .text
        )

    with llmvcr.recording("ignored", ignore=ignore):
        live = call("user-1", cache=True)
    before = server.request_count
    with llmvcr.recording("ignored", ignore=ignore, record_mode="none"):
        assert call("user-2", cache=False) == live
    with llmvcr.recording("ignored", ignore=ignore, record_mode="none"):
        with pytest.raises(llmvcr.ReplayDivergence, match="content\\[0\\].text"):
            call("user-2", cache=False, text="something else")
    with llmvcr.recording("ignored", record_mode="none"):  # without ignore=, the user id counts
        with pytest.raises(llmvcr.ReplayDivergence, match="request.body.metadata.user_id"):
            call("user-2", cache=True)
    assert server.request_count == before


@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
def test_diff_is_against_the_nearest_request_on_the_same_endpoint(anthropic_client: Any) -> None:
    def create(system: str, text: str, max_tokens: int = 16) -> Any:
        return anthropic_client.messages.create(
            model="claude-test",
            max_tokens=max_tokens,
            system=system,
            messages=[{"role": "user", "content": text}],
        )

    with llmvcr.recording("nearest"):
        create("You are terse.", "first question", max_tokens=32)
        create("You are a greeter.", "hello")
        create("You are verbose.", "second question", max_tokens=64)
        anthropic_client.messages.count_tokens(
            model="claude-test", system="You are a greeter.", messages=[{"role": "user", "content": "hello"}]
        )
    with llmvcr.recording("nearest"):
        with pytest.raises(llmvcr.ReplayDivergence) as one:
            create("You are a greeter.", "hello", max_tokens=17)
        with pytest.raises(llmvcr.ReplayDivergence) as two:
            create("You are a greeter!", "hello!")
        with pytest.raises(llmvcr.ReplayDivergence) as other_endpoint:
            anthropic_client.messages.count_tokens(
                model="claude-test",
                system="You are a greeter.",
                messages=[{"role": "user", "content": "bye"}],
            )
    # the one differing path of the nearest entry, not the rows of a farther one
    assert one.value.diff == [("request.body.max_tokens", 16, 17)]
    # every differing path is listed, with recorded and live values
    assert two.value.diff == [
        ("request.body.messages[0].content", "hello", "hello!"),
        ("request.body.system", "You are a greeter.", "You are a greeter!"),
    ]
    text = str(two.value)
    assert "request.body.messages[0].content: recorded 'hello' != live 'hello!'" in text
    assert "request.body.system: recorded 'You are a greeter.' != live 'You are a greeter!'" in text
    # compared with the count_tokens entry, not with the /v1/messages ones that share no path
    assert other_endpoint.value.diff == [("request.body.messages[0].content", "hello", "bye")]
    assert "/v1/messages/count_tokens" in str(other_endpoint.value)


def test_threads_each_with_their_own_cassette(anthropic_client: Any, server: Any, cassette_dir: Path) -> None:
    both_open = threading.Barrier(2, timeout=30)
    errors: list[BaseException] = []

    def worker(name: str) -> None:
        try:
            with llmvcr.recording(name):
                both_open.wait()  # both cassettes are open while either thread calls
                for i in range(3):
                    ask(anthropic_client, f"{name} {i}")
                both_open.wait()
        except BaseException as err:  # surfaced below
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(n,)) for n in ("thread-a", "thread-b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for name in ("thread-a", "thread-b"):
        texts = [
            e.request.body["messages"][0]["content"]
            for e in llmvcr.load_cassette(cassette_dir / f"{name}.yaml")
        ]
        assert texts == [f"{name} {i}" for i in range(3)]


def test_threads_and_gather_replay_without_the_network(
    anthropic_client: Any, server: Any, request: Any
) -> None:
    import anthropic

    with llmvcr.recording("offline-concurrency"):
        threads = [threading.Thread(target=ask, args=(anthropic_client, f"thread {i}")) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    async def gather(client: Any) -> list[str]:
        async def one(i: int) -> str:
            m = await client.messages.create(
                model="claude-test", max_tokens=16, messages=[{"role": "user", "content": f"g{i}"}]
            )
            return m.content[0].text

        return list(await asyncio.gather(*(one(i) for i in range(50))))

    def async_client() -> Any:
        return anthropic.AsyncAnthropic(api_key="sk-ant-test-key-0000", base_url=server.url, max_retries=0)

    with llmvcr.recording("offline-gather"):
        live = asyncio.run(gather(async_client()))
    before = server.request_count
    attempts = request.getfixturevalue("no_network")
    results: dict[int, str] = {}

    def work(i: int) -> None:
        results[i] = ask(anthropic_client, f"thread {i}")

    with llmvcr.recording("offline-concurrency", record_mode="none") as threaded:
        threads = [threading.Thread(target=work, args=(i,)) for i in reversed(range(16))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    with llmvcr.recording("offline-gather", record_mode="none") as gathered:
        assert asyncio.run(gather(async_client())) == live
    assert results == {i: f"Echo: thread {i}" for i in range(16)}
    assert threaded.unplayed == [] and gathered.unplayed == []
    assert server.request_count == before and attempts == []


def test_patch_function_arguments_and_results_are_redacted_in_the_session(cassette_dir: Any) -> None:
    """A key passed to, or echoed by, a patched function never reaches the file (redaction is the session's)."""
    import userlib

    from llmvcr.providers import unregister_provider

    key = "sk-ant-api03-SENTINEL-function-key-0123456789"
    provider = llmvcr.patch_function("userlib:complete")
    try:
        with llmvcr.recording("function-key", record_mode="all"):
            live = userlib.complete("hi", api_key=key)
        assert key in live["debug"]  # the caller gets the real value back
        text = (cassette_dir / "function-key.yaml").read_text()
        assert key not in text
        assert "sk-ant-api03" not in text
        assert "REDACTED" in text
        with llmvcr.recording("function-key", record_mode="none"):
            replayed = userlib.complete("hi", api_key=key)  # the live key matches the redacted request
        assert key not in replayed["debug"]
    finally:
        unregister_provider(provider.name)


@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
def test_a_request_no_provider_claims_never_leaves_a_replay_only_cassette(
    server: Any, cassette_dir: Any, anthropic_client: Any
) -> None:
    import httpx2

    with llmvcr.recording("unclaimed"):
        anthropic_client.messages.create(
            model="claude-test", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
    before = server.request_count
    with (
        llmvcr.recording("unclaimed", record_mode="none"),
        pytest.raises(
            llmvcr.LLMVCRError, match=r"GET http://127.0.0.1:\d+/other .*allow_unrecognized=\['127.0.0.1'\]"
        ),
    ):
        httpx2.get(server.url + "/other")
    assert server.request_count == before
    with llmvcr.recording("unclaimed", record_mode="none", allow_unrecognized=["127.0.0.1"]):
        httpx2.get(server.url + "/allowed")  # the user said it is not an LLM call
    assert server.request_count == before + 1


def test_a_recording_cassette_warns_about_calls_it_did_not_record(server: Any, cassette_dir: Any) -> None:
    import httpx2

    from llmvcr.errors import UnrecordedCallWarning

    with pytest.warns(UnrecordedCallWarning, match=r"recorded nothing\): 2 to 127.0.0.1"):
        with llmvcr.recording("unrecorded"):
            httpx2.get(server.url + "/a")
            httpx2.get(server.url + "/b")


@pytest.mark.filterwarnings("ignore::llmvcr.errors.EditedCassetteWarning")
@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
def test_a_hand_edited_request_still_matches_with_a_warning(cassette_dir: Any, anthropic_client: Any) -> None:
    from llmvcr.errors import EditedCassetteWarning

    def ask(text: str) -> Any:
        return anthropic_client.messages.create(
            model="claude-test", max_tokens=10, messages=[{"role": "user", "content": text}]
        )

    with llmvcr.recording("edited"):
        recorded = ask("original prompt")
    path = cassette_dir / "edited.yaml"
    path.write_text(path.read_text().replace("original prompt", "edited prompt", 1))  # the request only
    with (
        pytest.warns(EditedCassetteWarning, match=r"edited\.yaml: entry 0 was edited by hand"),
        llmvcr.recording("edited", record_mode="none") as cassette,
    ):
        replayed = ask("edited prompt")
    assert replayed.model_dump() == recorded.model_dump() and cassette.unplayed == []
    with llmvcr.recording("edited", record_mode="none"), pytest.raises(llmvcr.ReplayDivergence) as info:
        ask("something else")
    assert "already played" not in str(info.value)  # the diff names what differs, never a stale hash


SIGTERM_CHILD = """
import sys, time, llmvcr, userlib
llmvcr.patch_function("userlib:Gateway.complete")
with llmvcr.recording(sys.argv[1]):
    for i in range(100000):
        userlib.Gateway().complete(f"call {i} " + "word " * 10000)  # each write takes a while, under the lock
        print(i, flush=True)
        time.sleep(0.003)
"""


@pytest.mark.parametrize("run", range(12))
def test_sigterm_while_recording_exits_and_keeps_every_entry(tmp_path: Path, run: int) -> None:
    """SIGTERM may land inside a write: the process still ends at once, and the file stays whole."""
    import os
    import signal
    import subprocess
    import sys

    path = tmp_path / "term.yaml"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), *sys.path])}
    child = subprocess.Popen(
        [sys.executable, "-c", SIGTERM_CHILD, str(path)], stdout=subprocess.PIPE, text=True, env=env
    )
    assert child.stdout is not None
    acknowledged = -1
    for _ in range(3 + run):  # a different moment each run
        acknowledged = int(child.stdout.readline())
    child.send_signal(signal.SIGTERM)
    assert child.wait(timeout=20) == -signal.SIGTERM  # never hangs, and dies of SIGTERM as it would have
    cassette = llmvcr.load_cassette(path)
    assert len(cassette) >= acknowledged + 1  # every call that returned is on disk
    assert not list(tmp_path.glob(".llmvcr-tmp-*"))


def test_a_replay_only_cassette_leaves_the_signal_handlers_alone(anthropic_client: Any) -> None:
    import signal

    outer = signal.signal(signal.SIGTERM, signal.SIG_DFL)  # as a plain process has it
    try:
        with llmvcr.recording("handlers"):
            anthropic_client.messages.create(
                model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
            )
            assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL  # recording: a write to save
        with llmvcr.recording("handlers", record_mode="none"):
            assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # replay only: nothing to save
            anthropic_client.messages.create(
                model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
            )
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    finally:
        signal.signal(signal.SIGTERM, outer)


def test_identical_options_are_built_once_and_different_ones_are_not() -> None:
    from llmvcr.options import Options

    first = Options.build(record_mode="none", ignore=("metadata",))
    assert Options.build(record_mode="none", ignore=("metadata",)) is first
    assert Options.build(record_mode="once", ignore=("metadata",)) is not first
    assert Options.build(record_mode="none", ignore=["metadata"]) is not first  # a list: built afresh
    assert type(Options.build(replay_speed=1).replay_speed) is int
    assert type(Options.build(replay_speed=1.0).replay_speed) is float  # 1 and 1.0 are kept apart


def test_a_cassette_that_recorded_no_call_says_so_and_writes_no_file(tmp_path: Path) -> None:
    path = tmp_path / "none.yaml"
    said = rf"{path}: no LLM call was recorded, so no cassette was written\..*llmvcr.register_provider"
    with pytest.warns(EmptyRecordingWarning, match=said), llmvcr.recording(path):
        pass  # the call a user expected went through an SDK no provider covers, or was never made
    assert not path.exists()
    with pytest.warns(EmptyRecordingWarning, match=said), llmvcr.recording(path, record_mode="all"):
        pass
    assert not path.exists()


def test_a_cassette_with_a_recorded_call_a_file_or_a_failure_says_nothing_of_it(
    tmp_path: Path, anthropic_client: Any
) -> None:
    path = tmp_path / "one.yaml"
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmptyRecordingWarning)
        with llmvcr.recording(path):
            ask(anthropic_client, "hello")
        assert path.exists()
        with llmvcr.recording(path, record_mode="new_episodes", on_unplayed="ignore"):
            pass  # its file is there: what it holds is reported as unplayed, not as an empty recording
        with pytest.raises(RuntimeError, match="the test failed"), llmvcr.recording(tmp_path / "failed.yaml"):
            raise RuntimeError("the test failed")  # before its first call: that failure is what to show
    assert not (tmp_path / "failed.yaml").exists()


def test_configure_names_bare_cassettes_json_and_still_finds_a_yaml_one(
    anthropic_client: Any, cassette_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from llmvcr.options import settings

    monkeypatch.setattr(settings, "cassette_format", "yaml")  # put back after the test
    with llmvcr.recording("kept"):
        ask(anthropic_client, "kept")
    llmvcr.configure(cassette_format="json")
    with llmvcr.recording("fresh") as cassette:
        ask(anthropic_client, "fresh")
    assert cassette.path == str(cassette_dir / "fresh.json") and (cassette_dir / "fresh.json").exists()
    with llmvcr.recording("kept", record_mode="none") as kept:
        assert ask(anthropic_client, "kept") == "Echo: kept"
    assert kept.path == str(cassette_dir / "kept.yaml")
    with pytest.raises(ValueError, match=r"unknown cassette_format 'toml'.*valid: yaml, json"):
        llmvcr.configure(cassette_format="toml")
