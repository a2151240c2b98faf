"""The pytest plugin, exercised through real inner pytest sessions (pytester, in subprocesses)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import llmvcr
from llmvcr.pytest_plugin import cassette_name

HEADER = """
import os, anthropic, pytest, llmvcr
URL = os.environ["LLM_URL"]

def ask(text, client=None):
    client = client or anthropic.Anthropic(api_key="sk-ant-inner-test-key-000", base_url=URL, max_retries=0)
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=16,
                                  messages=[{"role": "user", "content": text}]).content[0].text
"""


@pytest.fixture
def inner(pytester: pytest.Pytester, server: Any, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("LLM_URL", server.url)
    monkeypatch.delenv("CI", raising=False)
    return pytester


def run(p: pytest.Pytester, *args: str) -> pytest.RunResult:
    return p.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:recording", *args, timeout=120)


@pytest.mark.slow
def test_marker_records_then_replays_offline(inner: pytest.Pytester, server: Any) -> None:
    inner.makepyfile(
        test_chat=HEADER
        + """
@pytest.mark.llmvcr
def test_one():
    assert ask("hello") == "Echo: hello"

@pytest.mark.llmvcr(seed="bug-427")
@pytest.mark.parametrize("word", ["a b", "c/d"])
def test_param(word, llmvcr_cassette):
    assert ask(word) == "Echo: " + word
    assert llmvcr_cassette.seed == "bug-427"
"""
    )
    first = run(inner)
    first.assert_outcomes(passed=3)
    assert (inner.path / "cassettes" / "test_chat" / "test_one.yaml").exists()
    assert (inner.path / "cassettes" / "test_chat" / "test_param[a%20b].yaml").exists()
    assert (inner.path / "cassettes" / "test_chat" / "test_param[c%2Fd].yaml").exists()
    first.stdout.fnmatch_lines(["llmvcr: 0 LLM calls replayed, 3 recorded, 3 cassettes written*"])
    before = server.request_count
    second = run(inner, "--llmvcr-record-mode=none", "-v")
    second.assert_outcomes(passed=3)
    assert server.request_count == before
    second.stdout.fnmatch_lines(
        [
            "llmvcr: 3 LLM calls replayed, 0 recorded, 0 cassettes written, 0 unplayed entries;"
            " replay saved * tokens ($0.0*",
            "*test_one: 1 replayed*",
        ]
    )


@pytest.mark.slow
def test_config_fixture_and_dir_flag(inner: pytest.Pytester, tmp_path: Path) -> None:
    inner.makeconftest("""
import pytest
@pytest.fixture
def llmvcr_config():
    return {"mode": "sequential", "seed": "from-config"}
""")
    inner.makepyfile(
        test_cfg=HEADER
        + """
@pytest.mark.llmvcr("custom/name")
def test_seq(llmvcr_cassette):
    ask("volatile 1")
    assert llmvcr_cassette.seed == "from-config"
"""
    )
    target = tmp_path / "elsewhere"
    run(inner, f"--llmvcr-dir={target}").assert_outcomes(passed=1)
    assert (target / "custom" / "name.yaml").exists()
    # sequential mode from the config fixture: different content replays
    inner.makepyfile(
        test_cfg=HEADER
        + """
@pytest.mark.llmvcr("custom/name")
def test_seq():
    assert ask("volatile 2") == "Echo: volatile 1"
"""
    )
    run(inner, f"--llmvcr-dir={target}", "--llmvcr-record-mode=none").assert_outcomes(passed=1)


@pytest.mark.slow
def test_missing_cassette_in_none_mode_fails_fast(inner: pytest.Pytester) -> None:
    inner.makepyfile(
        test_none=HEADER
        + """
@pytest.mark.llmvcr
def test_nothing_recorded():
    ask("hello")
"""
    )
    result = run(inner, "--llmvcr-record-mode=none")
    result.assert_outcomes(failed=1)  # at the call, as pytest-recording fails it
    result.stdout.fnmatch_lines(
        [  # one message, leading with how to record it (no "no recorded entry ... 0 entries" first)
            "*ReplayDivergence: llmvcr: test_none.py::test_nothing_recorded: no cassette at "
            "*test_none/test_nothing_recorded.yaml, and record_mode='none' forbids "
            "recording. Record it locally and commit it: pytest 'test_none.py::test_nothing_recorded' "
            "--llmvcr-record-mode=once*",
        ]
    )
    assert not (inner.path / "cassettes").exists()


@pytest.mark.slow
def test_marked_test_with_no_cassette_and_no_call_passes_as_under_pytest_recording(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    inner.makepyfile(
        test_empty=HEADER
        + """
@pytest.mark.llmvcr
def test_no_call(llmvcr_cassette):
    assert len(llmvcr_cassette) == 0
"""
    )
    monkeypatch.setenv("CI", "true")
    for extra in (["--llmvcr-record-mode=none"], []):
        run(inner, *extra).assert_outcomes(passed=1)
    assert not (inner.path / "cassettes").exists()


@pytest.mark.slow
def test_block_network_fails_at_once_naming_the_test(inner: pytest.Pytester) -> None:
    inner.makepyfile(
        test_block=HEADER
        + """
import socket, time
def test_llm_call_outside_cassette():
    client = anthropic.Anthropic(api_key="sk-ant-x-000000000", base_url="http://api.example.test", max_retries=3)
    start = time.monotonic()
    with pytest.raises(llmvcr.NetworkBlockedError) as info:
        ask("hi", client)
    assert time.monotonic() - start < 1.0
    assert "test_llm_call_outside_cassette" in str(info.value) and "anthropic call POST" in str(info.value)

def test_socket_outside_cassette():
    with pytest.raises(llmvcr.NetworkBlockedError, match="test_socket_outside_cassette"):
        socket.create_connection(("192.0.2.1", 80), timeout=1)

def test_loopback_is_allowed():
    assert ask("local") == "Echo: local"
"""
    )
    # an LLM call to loopback goes out only when its host is allowed by name (a local model server)
    result = run(inner, "--llmvcr-block-network", "--llmvcr-allowed-hosts=127.0.0.1")
    result.assert_outcomes(passed=3)


@pytest.mark.slow
def test_ci_refuses_an_llm_call_to_loopback_outside_a_cassette_unless_its_host_is_allowed(
    inner: pytest.Pytester, server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    inner.makepyfile(
        test_gateway=HEADER
        + """
def test_through_a_local_gateway():
    assert ask("hi") == "Echo: hi"
"""
    )
    before = server.request_count
    refused = run(inner)  # a gateway on loopback (LiteLLM and the like) forwards to a paid API
    refused.assert_outcomes(failed=1)
    refused.stdout.fnmatch_lines(
        ["*NetworkBlockedError: test_gateway.py::test_through_a_local_gateway: the anthropic call POST "
         "/v1/messages to 127.0.0.1 outside a cassette: when CI is set*a local model server*allowed-hosts*"]
    )  # fmt: skip
    assert server.request_count == before
    run(inner, "--llmvcr-allowed-hosts=127.0.0.1").assert_outcomes(passed=1)  # a local model server
    assert server.request_count == before + 1


@pytest.mark.slow
def test_a_missing_cassette_on_ci_is_one_message_saying_how_to_record_it(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    inner.makepyfile(
        test_new=HEADER
        + """
@pytest.mark.llmvcr
def test_never_recorded():
    ask("hi")
"""
    )
    result = run(inner)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["E   *ReplayDivergence: llmvcr: test_new.py::test_never_recorded: no cassette at *test_never_recorded.yaml, "
         "and record_mode='none' (the default when CI is set) forbids recording. Record it locally and commit "
         "it: pytest 'test_new.py::test_never_recorded' --llmvcr-record-mode=once"]
    )  # fmt: skip
    text = result.stdout.str()
    assert "no recorded entry in" not in text and "0 entries in all" not in text


@pytest.mark.slow
def test_ci_refuses_llm_calls_not_sockets(inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    inner.makepyfile(
        test_ci="""
import socket, pytest, llmvcr, anthropic
def test_blocked():
    client = anthropic.Anthropic(api_key="sk-ant-x-000000000", base_url="http://api.example.test", max_retries=0)
    with pytest.raises(llmvcr.NetworkBlockedError):
        client.messages.create(model="m", max_tokens=1, messages=[{"role": "user", "content": "hi"}])

def test_sockets_are_not_llmvcrs_business():
    with pytest.raises(OSError) as info:  # refused or unreachable by the network, not by llmvcr
        socket.create_connection(("192.0.2.1", 80), timeout=0.5)
    assert not isinstance(info.value, llmvcr.NetworkBlockedError)
"""
    )
    run(inner).assert_outcomes(passed=2)


@pytest.mark.slow
def test_xdist_workers_share_one_cassette_without_losing_entries(inner: pytest.Pytester, server: Any) -> None:
    inner.makepyfile(
        test_many=HEADER
        + """
@pytest.mark.parametrize("i", range(24))
def test_write(i):
    with llmvcr.use_cassette(os.path.join(os.environ["SHARED_DIR"], "shared.yaml"), record_mode="new_episodes"):
        assert ask(f"entry {i}") == f"Echo: entry {i}"
"""
    )
    shared = inner.path / "shared"
    os.environ["SHARED_DIR"] = str(shared)
    try:
        run(inner, "-n", "4").assert_outcomes(passed=24)
    finally:
        del os.environ["SHARED_DIR"]
    cassette = llmvcr.load_cassette(shared / "shared.yaml")
    texts = sorted(e.request.body["messages"][0]["content"] for e in cassette.entries)
    assert texts == sorted(f"entry {i}" for i in range(24))  # none lost, none duplicated
    assert not list(shared.glob(".llmvcr-tmp-*"))


@pytest.mark.slow
def test_beside_pytest_recording(inner: pytest.Pytester) -> None:
    inner.makepyfile(
        test_both=HEADER
        + """
import httpx2
@pytest.mark.vcr
def test_vcr_plain_http():
    # pytest-recording records non-LLM HTTP; llmvcr leaves it alone
    assert httpx2.get(URL + "/health").status_code in (200, 404, 405, 501)

@pytest.mark.llmvcr
def test_llm():
    assert ask("both") == "Echo: both"
"""
    )
    result = inner.runpytest_subprocess("-p", "no:cacheprovider", "--record-mode=once", timeout=120)
    result.assert_outcomes(passed=2)
    assert (inner.path / "cassettes" / "test_both" / "test_llm.yaml").exists()
    assert (inner.path / "cassettes" / "test_both" / "test_vcr_plain_http.yaml").exists()


@pytest.mark.parametrize(
    "nodeid, expected",
    [
        ("tests/test_a.py::test_x", "test_a/test_x"),
        ("tests/test_a.py::TestK::test_x", "test_a/TestK.test_x"),
        ("tests/test_a.py::test_x[gpt-4o/a b]", "test_a/test_x[gpt-4o%2Fa%20b]"),
    ],
)
def test_cassette_names_are_sanitised(nodeid: str, expected: str) -> None:
    class Node:
        path = Path(nodeid.split("::")[0])
        name = nodeid.split("::")[-1]

    node: Any = Node()
    node.nodeid = nodeid
    assert cassette_name(node) == expected


@pytest.mark.slow
def test_plugin_is_registered_through_the_pytest11_entry_point(inner: pytest.Pytester) -> None:
    import importlib.metadata

    points = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="pytest11")}
    assert points.get("llmvcr") == "llmvcr.pytest_plugin"
    inner.makepyfile(
        test_ep="""
def test_marker_known(pytestconfig):
    assert pytestconfig.pluginmanager.has_plugin("llmvcr")
    assert any("llmvcr(" in line for line in pytestconfig.getini("markers"))
"""
    )
    # no -p llmvcr anywhere: the entry point alone loads it (and --strict-markers knows the marker)
    run(inner, "--strict-markers").assert_outcomes(passed=1)


@pytest.mark.slow
def test_marker_options_beat_module_config_beat_conftest(inner: pytest.Pytester) -> None:
    inner.makeconftest("""
import pytest
@pytest.fixture
def llmvcr_config():
    return {"seed": "from-conftest"}
""")
    inner.makepyfile(
        test_plain=HEADER
        + """
@pytest.mark.llmvcr
def test_conftest_config(llmvcr_cassette):
    ask("one")
    assert llmvcr_cassette.seed == "from-conftest"
"""
    )
    inner.makepyfile(
        test_module=HEADER
        + """
@pytest.fixture
def llmvcr_config():
    return {"seed": "from-module", "mode": "strict"}

@pytest.mark.llmvcr
def test_module_config(llmvcr_cassette):
    ask("two")
    assert llmvcr_cassette.seed == "from-module"

@pytest.mark.llmvcr(mode="sequential", seed="bug-427")
def test_marker_wins(llmvcr_cassette):
    ask("three " + os.environ.get("RUN", "first"))
    assert llmvcr_cassette.seed == "bug-427"
"""
    )
    run(inner).assert_outcomes(passed=3)
    seeds = {
        name: llmvcr.load_cassette(inner.path / "cassettes" / name).seed
        for name in (
            "test_plain/test_conftest_config.yaml",
            "test_module/test_module_config.yaml",
            "test_module/test_marker_wins.yaml",
        )
    }
    assert seeds == {
        "test_plain/test_conftest_config.yaml": "from-conftest",
        "test_module/test_module_config.yaml": "from-module",
        "test_module/test_marker_wins.yaml": "bug-427",
    }
    # the marker's mode="sequential" beats the module's strict: other content replays the recorded answer
    os.environ["RUN"] = "second"
    try:
        run(inner, "--llmvcr-record-mode=none").assert_outcomes(passed=3)
    finally:
        del os.environ["RUN"]


@pytest.mark.slow
def test_summary_counts_unplayed_entries_and_the_tokens_saved(inner: pytest.Pytester, server: Any) -> None:
    from llmvcr.freshness.usage import tokens_of

    inner.makepyfile(
        test_sum=HEADER
        + """
@pytest.mark.llmvcr
def test_two_calls():
    ask("first")
    if os.environ.get("BOTH", "1") == "1":
        ask("second")
"""
    )
    run(inner).assert_outcomes(passed=1)
    cassette = llmvcr.load_cassette(inner.path / "cassettes" / "test_sum" / "test_two_calls.yaml")
    assert len(cassette) == 2
    saved = sum(tokens_of(cassette.entry(0)))
    assert saved > 0
    before = server.request_count
    os.environ["BOTH"] = "0"
    try:
        result = run(inner, "--llmvcr-record-mode=none", "-v")
    finally:
        del os.environ["BOTH"]
    result.assert_outcomes(passed=1)
    assert server.request_count == before
    result.stdout.fnmatch_lines(
        [
            f"llmvcr: 1 LLM call replayed, 0 recorded, 0 cassettes written, 1 unplayed entry; replay saved {saved:,} "
            "tokens ($0.0*",
            "  1 cassette with entries no test used (drop them with: llmvcr prune PATH...):",
            "    *cassettes/test_sum/test_two_calls.yaml: 1 entry (#1)",  # the ids on_unplayed names
            f"*test_sum.py::test_two_calls: 1 replayed, 0 recorded, 1 unplayed, {saved:,} tokens ($0.0*)",
        ]
    )


@pytest.mark.slow
def test_beside_pytest_recording_both_replay_offline(inner: pytest.Pytester, server: Any) -> None:
    inner.makepyfile(
        test_both=HEADER
        + """
import httpx2
@pytest.mark.vcr
def test_vcr_plain_http():
    assert httpx2.post(URL + "/v1/messages", content=b"not json").status_code == 400

@pytest.mark.llmvcr
def test_llm():
    assert ask("both") == "Echo: both"
"""
    )
    first = inner.runpytest_subprocess("-p", "no:cacheprovider", "--record-mode=once", timeout=120)
    first.assert_outcomes(passed=2)
    vcr_file = inner.path / "cassettes" / "test_both" / "test_vcr_plain_http.yaml"
    assert (inner.path / "cassettes" / "test_both" / "test_llm.yaml").exists() and vcr_file.exists()
    assert b"Echo: both" not in vcr_file.read_bytes()  # vcrpy did not record the LLM call llmvcr answered
    before = server.request_count
    second = inner.runpytest_subprocess(
        "-p", "no:cacheprovider", "--record-mode=none", "--llmvcr-record-mode=none", timeout=120
    )
    second.assert_outcomes(passed=2)
    assert server.request_count == before  # each served its own test from its own cassette


@pytest.mark.slow
def test_an_sdk_on_legacy_httpx_imported_after_start_is_recorded_under_the_guard(
    inner: pytest.Pytester,
) -> None:
    inner.makepyfile(
        test_groq="""
import os, llmvcr, groq
llmvcr.register_provider("stainless:groq")

def test_recorded(tmp_path):
    client = groq.Groq(api_key="gsk_SENTINEL_0000000000", base_url=os.environ["LLM_URL"], max_retries=0)
    with llmvcr.recording(str(tmp_path / "g.yaml")) as cassette:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert len(cassette.entries) == 1

def test_blocked_outside_a_cassette():
    import pytest
    client = groq.Groq(api_key="gsk_SENTINEL_0000000000", base_url="http://llm.invalid", max_retries=3)
    with pytest.raises(llmvcr.NetworkBlockedError):  # itself, at once: not retried into APIConnectionError
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
"""
    )
    run(inner, "--llmvcr-block-network").assert_outcomes(passed=2)


@pytest.mark.slow
def test_the_summary_under_xdist_adds_up_the_workers(inner: pytest.Pytester, server: Any) -> None:
    inner.makepyfile(
        test_par=HEADER
        + """
@pytest.mark.parametrize("word", ["a", "b", "c", "d"])
@pytest.mark.llmvcr
def test_word(word):
    assert ask(word) == "Echo: " + word
"""
    )
    run(inner, "-n", "2").assert_outcomes(passed=4)
    result = run(inner, "-n", "2", "--llmvcr-record-mode=none")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        ["llmvcr: 4 LLM calls replayed, 0 recorded, 0 cassettes written, 0 unplayed entries;*"]
    )


@pytest.mark.slow
def test_a_divergence_names_the_test_to_re_record_and_its_cassette_is_not_offered_to_prune(
    inner: pytest.Pytester,
) -> None:
    body = """
class TestChat:
    @pytest.mark.llmvcr
    @pytest.mark.parametrize("n", [1])
    def test_one(self, n):
        assert ask("{prompt}") == "Echo: {prompt}"
"""
    inner.makepyfile(test_div=HEADER + body.format(prompt="first"))
    run(inner).assert_outcomes(passed=1)
    inner.makepyfile(test_div=HEADER + body.format(prompt="changed"))
    result = run(inner, "--llmvcr-record-mode=none")
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "-k <test>" not in text
    assert "(pytest 'test_div.py::TestChat::test_one[1]' --llmvcr-record-mode=all)" in text
    assert (
        "  1 cassette with unused entries whose test failed (it may have stopped before using them: "
        "make it pass before pruning):\n    cassettes/test_div/TestChat.test_one[1].yaml: 1 entry (#0)\n"
    ) in text
    assert "llmvcr prune" not in text


@pytest.mark.slow
def test_the_ini_makes_test_cassettes_json_and_keeps_reading_yaml_ones(
    inner: pytest.Pytester, server: Any
) -> None:
    """``llmvcr_cassette_format = json``: what CI parses fastest (benchmarks/README.md); a project that
    switches keeps replaying its YAML cassettes until it converts them."""
    inner.makepyfile(
        test_chat=HEADER
        + """
@pytest.mark.llmvcr
def test_old():
    assert ask("old") == "Echo: old"

@pytest.mark.llmvcr
def test_new():
    assert ask("new") == "Echo: new"
"""
    )
    run(inner, "-k", "test_old").assert_outcomes(passed=1, deselected=1)  # recorded as YAML, the default
    folder = inner.path / "cassettes" / "test_chat"
    assert (folder / "test_old.yaml").exists()
    inner.makeini("[pytest]\nllmvcr_cassette_format = json\n")
    run(inner).assert_outcomes(passed=2)
    assert (
        llmvcr.load_cassette(folder / "test_new.json").entries[0].request.body["messages"][0]["content"]
        == "new"
    )
    assert not (folder / "test_new.yaml").exists() and not (folder / "test_old.json").exists()
    before = server.request_count
    run(inner, "--llmvcr-record-mode=none").assert_outcomes(passed=2)  # each from the file it has
    assert server.request_count == before
    inner.makeini("[pytest]\nllmvcr_cassette_format = jsno\n")
    bad = run(inner)
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(
        [
            "*llmvcr_cassette_format in the pytest ini: unknown cassette_format 'jsno'; did you mean 'json'?; valid: yaml, json*"
        ]
    )
