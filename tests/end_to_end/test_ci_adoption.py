"""Switching llmvcr on in a team's CI: pytest run as a user runs it, with CI set and unset.

Each inner run is a real pytest subprocess over a project that also holds a pytest-recording test
and a test that talks to a (local, non-loopback) service the way a suite talks to a database.
"""

from __future__ import annotations

import ipaddress
import os
import shlex
import socket
from pathlib import Path
from typing import Any

import pytest

HEADER = """
import os, socket, threading, anthropic, httpx2, pytest, llmvcr
URL = os.environ["LLM_URL"]

def ask(text, base_url=URL):
    client = anthropic.Anthropic(api_key="sk-ant-inner-test-key-000", base_url=base_url, max_retries=0)
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=16,
                                  messages=[{"role": "user", "content": text}]).content[0].text

def service_address():
    return os.environ["SERVICE_ADDRESS"]  # found before the run: a probe would meet the guard
"""

SERVICE_TEST = """
def test_talks_to_a_service():
    listener = socket.socket()
    listener.bind(("0.0.0.0", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    threading.Thread(target=lambda: listener.accept()[0].sendall(b"PONG"), daemon=True).start()
    with socket.create_connection((service_address(), port), timeout=5) as conn:
        assert conn.recv(4) == b"PONG"
    listener.close()
"""


def non_loopback_address() -> str:
    """This machine's own non-loopback address: traffic to it stays on the machine."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.1", 9))  # UDP: chooses a route, sends nothing
        address = str(probe.getsockname()[0])
    finally:
        probe.close()
    assert not ipaddress.ip_address(address).is_loopback, address
    return address


@pytest.fixture
def inner(pytester: pytest.Pytester, server: Any, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("LLM_URL", server.url)
    monkeypatch.setenv("SERVICE_ADDRESS", non_loopback_address())
    monkeypatch.delenv("CI", raising=False)
    return pytester


def run_with(p: pytest.Pytester, *args: str, **env: str) -> pytest.RunResult:
    """pytest in a subprocess as a user runs it (its cache on), with ``env`` set for that run only."""
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return p.runpytest_subprocess(*args, timeout=120)
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run(p: pytest.Pytester, *args: str, ci: str | None = None, **env: str) -> pytest.RunResult:
    """``run_with`` without pytest's cache; ``ci`` is the run's ``CI``."""
    return run_with(p, "-p", "no:cacheprovider", *args, **env, **({} if ci is None else {"CI": ci}))


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
        and "__pycache__" not in p.parts
        and p.name not in ("stdout", "stderr")  # pytester's own
    }


@pytest.mark.slow
def test_ci_never_records_a_missing_cassette(inner: pytest.Pytester, server: Any) -> None:
    inner.makepyfile(
        test_new=HEADER
        + """
@pytest.mark.llmvcr
def test_not_recorded_yet():
    assert ask("hello") == "Echo: hello"
"""
    )
    before, tree = server.request_count, snapshot(inner.path)
    result = run(inner, ci="true")
    result.assert_outcomes(failed=1)  # at its first call, as pytest-recording fails it
    result.stdout.fnmatch_lines(
        [
            "*test_new.py::test_not_recorded_yet: no cassette at *test_not_recorded_yet.yaml*",
            "*(the default when CI is set)*pytest 'test_new.py::test_not_recorded_yet' --llmvcr-record-mode=once*",
        ]
    )
    assert server.request_count == before  # nothing went to the API
    assert snapshot(inner.path) == tree  # and nothing was written
    assert "pytest_plugin.py" not in result.stdout.str()  # the test's line and the message, no plugin code
    # an explicit flag still wins over the CI default
    run(inner, "--llmvcr-record-mode=once", ci="true").assert_outcomes(passed=1)
    assert (inner.path / "cassettes" / "test_new" / "test_not_recorded_yet.yaml").exists()


@pytest.mark.slow
def test_ci_refuses_llm_calls_outside_a_cassette_but_not_other_services(inner: pytest.Pytester) -> None:
    inner.makepyfile(
        test_mixed=HEADER
        + SERVICE_TEST
        + """
def test_llm_outside_a_cassette():
    with pytest.raises(llmvcr.NetworkBlockedError, match="test_llm_outside_a_cassette.*anthropic call POST"):
        ask("hi", base_url="http://api.example.test")
"""
    )
    run(inner, ci="true").assert_outcomes(passed=2)
    run(inner, ci="1").assert_outcomes(passed=2)


@pytest.mark.parametrize("value", ["false", "0", "no", ""])
@pytest.mark.slow
def test_ci_values_that_mean_not_ci(inner: pytest.Pytester, value: str) -> None:
    inner.makepyfile(
        test_local=HEADER
        + """
def test_llm_outside_a_cassette_goes_through():
    assert ask("local") == "Echo: local"

def test_llm_to_a_remote_host_is_not_refused_by_llmvcr():
    with pytest.raises(anthropic.APIConnectionError) as info:  # the host does not resolve: no network here
        ask("hi", base_url="http://api.example.test")
    assert not isinstance(info.value, llmvcr.NetworkBlockedError)
"""
    )
    run(inner, ci=value).assert_outcomes(passed=2)


@pytest.mark.slow
def test_block_network_flag_also_refuses_sockets_and_allows_hosts_by_name(inner: pytest.Pytester) -> None:
    inner.makepyfile(
        test_block=HEADER
        + """
def test_socket_to_a_non_loopback_address():
    with pytest.raises(llmvcr.NetworkBlockedError, match="test_socket_to_a_non_loopback_address"):
        socket.create_connection((service_address(), 9), timeout=1)

def test_llm_call_to_an_allowed_name_is_not_refused():
    # the name matches as written, before any resolution: the call goes out (and fails to resolve)
    with pytest.raises(anthropic.APIConnectionError):
        ask("hi", base_url="http://llm-gateway.invalid")
"""
    )
    run(inner, "--llmvcr-block-network", "--llmvcr-allowed-hosts=llm-gateway.invalid").assert_outcomes(
        passed=2
    )


@pytest.mark.slow
def test_pytest_recording_tests_pass_under_ci(inner: pytest.Pytester, server: Any) -> None:
    inner.makepyfile(
        test_vcr=HEADER
        + """
@pytest.mark.vcr
def test_still_on_pytest_recording():
    assert ask("vcr", base_url=os.environ.get("API_URL", URL)) == "Echo: vcr"
"""
    )
    run(inner, "--record-mode=once").assert_outcomes(passed=1)  # recorded locally by pytest-recording
    cassette = inner.path / "cassettes" / "test_vcr" / "test_still_on_pytest_recording.yaml"
    # as if recorded against the real API: the cassette names a remote host, which CI must not reach
    cassette.write_text(cassette.read_text().replace(server.url, "http://api.anthropic.example"))
    before = server.request_count
    run(inner, "--record-mode=none", ci="true", API_URL="http://api.anthropic.example").assert_outcomes(
        passed=1
    )
    assert server.request_count == before  # vcrpy answered it, and llmvcr let it


@pytest.mark.slow
def test_a_replay_run_changes_no_file_and_recording_leaves_no_lock_files(inner: pytest.Pytester) -> None:
    inner.makepyfile(
        test_quiet=HEADER
        + """
@pytest.mark.llmvcr
def test_one():
    assert ask("quiet") == "Echo: quiet"
"""
    )
    record = inner.runpytest_subprocess(timeout=120)  # as a user runs it: pytest's cache on
    record.assert_outcomes(passed=1)
    tree = project(inner.path)
    assert sorted(tree) == ["cassettes/test_quiet/test_one.yaml", "test_quiet.py"]  # no lock or play files
    for _ in range(2):
        run_with(inner, CI="true").assert_outcomes(passed=1)
        assert project(inner.path) == tree  # byte for byte: replay wrote nothing into the project
    plays = inner.path / ".pytest_cache" / "d" / "llmvcr" / "plays.json"
    assert plays.exists()  # what the run played, for llmvcr prune, is in pytest's cache


def test_new_files_follow_the_umask_and_a_rewritten_file_keeps_its_mode(tmp_path: Path) -> None:
    from llmvcr.storage.writer import atomic_write

    old = os.umask(0o027)
    try:
        target = tmp_path / "c.yaml"
        atomic_write(str(target), b"a: 1\n")
        assert target.stat().st_mode & 0o777 == 0o640
        os.umask(0o022)
        atomic_write(str(tmp_path / "d.yaml"), b"a: 1\n")
        assert (tmp_path / "d.yaml").stat().st_mode & 0o777 == 0o644
        target.chmod(0o600)
        atomic_write(str(target), b"a: 2\n")
        assert target.stat().st_mode & 0o777 == 0o600
    finally:
        os.umask(old)


@pytest.mark.slow
def test_a_divergence_shows_the_diff_not_llmvcrs_internals(inner: pytest.Pytester) -> None:
    inner.makepyfile(
        test_div=HEADER
        + """
@pytest.mark.llmvcr
def test_prompt():
    ask(os.environ.get("PROMPT", "first"))
"""
    )
    run(inner).assert_outcomes(passed=1)
    result = run(inner, "--llmvcr-record-mode=none", PROMPT="changed")
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    assert "request.body.messages[0].content: recorded 'first' != live 'changed'" in output
    assert "--llmvcr-record-mode=all" in output
    for internal in ("llmvcr/session.py", "llmvcr/providers/_httpx.py", "llmvcr/providers/base.py"):
        assert internal not in output  # hidden frames: the user's test and the message are what shows
    assert "anthropic/_base_client.py" not in output  # nor the SDK's: the user's call is the last frame
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if line.startswith("___") and "test_prompt" in line)
    first_e = next(i for i in range(start, len(lines)) if lines[i].startswith("E   "))
    shown = lines[start:first_e]
    assert any(line.startswith(">") and "client.messages.create" in line for line in shown), shown
    assert first_e - start <= 15, "\n".join(lines[start:first_e])  # was 45 lines of SDK source
    # --fulltrace still shows every frame, as pytest promises
    full = run(inner, "--llmvcr-record-mode=none", "--fulltrace", PROMPT="changed")
    assert "anthropic/_base_client.py" in full.stdout.str()


@pytest.mark.slow
def test_ci_and_the_record_mode_flag_reach_cassettes_a_test_opens_itself(
    inner: pytest.Pytester, server: Any
) -> None:
    inner.makepyfile(
        test_direct=HEADER
        + """
@llmvcr.use_cassette("cassettes/direct.yaml")
def test_decorated():
    assert ask("direct") == "Echo: direct"

def test_explicit_mode_wins():
    with llmvcr.use_cassette("cassettes/explicit.yaml", record_mode="once"):
        assert ask("explicit") == "Echo: explicit"
"""
    )
    before = server.request_count
    result = run(inner, ci="true")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*cassettes/direct.yaml: no such cassette and record_mode='none'*"])
    assert server.request_count == before + 1  # only the test that names its own mode recorded
    assert sorted(p.name for p in (inner.path / "cassettes").iterdir()) == ["explicit.yaml"]
    # the flag overrides every cassette, as its help says, not only marked tests
    run(inner, "--llmvcr-record-mode=none").assert_outcomes(passed=1, failed=1)
    assert server.request_count == before + 1
    run(inner, "--llmvcr-record-mode=once", ci="true").assert_outcomes(passed=2)
    assert (inner.path / "cassettes" / "direct.yaml").exists()


@pytest.mark.slow
def test_a_whole_project_recorded_locally_replays_on_ci_and_changes_no_file(
    inner: pytest.Pytester, server: Any
) -> None:
    """One project as a team has it: llmvcr tests, a pytest-recording test and a service test."""
    inner.makepyfile(
        test_project=HEADER
        + SERVICE_TEST
        + """
@pytest.mark.llmvcr
def test_marked():
    assert ask("marked") == "Echo: marked"

@llmvcr.use_cassette("cassettes/direct.yaml")
def test_decorated():
    assert ask("decorated") == "Echo: decorated"

@pytest.mark.vcr
def test_on_pytest_recording():
    assert httpx2.post(URL + "/v1/messages", content=b"not json").status_code == 400
"""
    )
    old = os.umask(0o027)  # a team's umask: new files follow it (llmvcr's were 0600 whatever it said)
    try:
        # recorded on a laptop, CI unset, as a user runs pytest (its cache on)
        inner.runpytest_subprocess("--record-mode=once", timeout=120).assert_outcomes(passed=4)
    finally:
        os.umask(old)
    tree = project(inner.path)
    assert sorted(tree) == [
        "cassettes/direct.yaml",
        "cassettes/test_project/test_marked.yaml",
        "cassettes/test_project/test_on_pytest_recording.yaml",  # pytest-recording's own
        "test_project.py",
    ]  # no lock file, no play log
    assert (inner.path / "cassettes" / "direct.yaml").stat().st_mode & 0o777 == 0o640
    assert (inner.path / "cassettes" / "test_project" / "test_marked.yaml").stat().st_mode & 0o777 == 0o640
    before = server.request_count
    command = readme_ci_test_step()  # what the README tells a team to put in its CI config
    for args in ((), ("-n", "2"), ("--record-mode=none",)):  # as CI runs it, pytest's cache on
        result = run_with(inner, *command[1:], *args, CI="true")
        result.assert_outcomes(passed=4)
        result.stdout.fnmatch_lines(
            ["llmvcr: 2 LLM calls replayed, 0 recorded, 0 cassettes written, 0 unplayed*"]
        )
        assert project(inner.path) == tree  # byte for byte
    assert server.request_count == before  # every answer came from a cassette


def readme_ci_test_step() -> list[str]:
    """The test step of the README's CI config: its last ``- run:`` line, checked to be pytest."""
    readme = (Path(__file__).parent.parent.parent / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("**Run in CI**") : readme.index("**Re-record**")]
    block = section[section.index("```yaml") : section.index("```", section.index("```yaml") + 3)]
    steps = [
        line.split("- run:", 1)[1].split("#")[0].strip() for line in block.splitlines() if "- run:" in line
    ]
    assert steps[0].startswith("pip install") and steps[-1].split()[0] == "pytest", steps
    assert "`CI=true pytest`" in section  # where the CI service does not set CI itself
    return shlex.split(steps[-1])


def project(root: Path) -> dict[str, bytes]:
    """The project's files, byte for byte; pytest's own cache folder is not the project, nor the ini
    file the suite's ``pytester`` fixture writes (pytest-asyncio's loop scope)."""
    return {k: v for k, v in snapshot(root).items() if not k.startswith(".pytest_cache") and k != "tox.ini"}


@pytest.mark.slow
def test_a_service_allowed_by_name_is_reached_though_it_resolves_outside_loopback(
    inner: pytest.Pytester,
) -> None:
    # a service container named "db", as CI services are: the name resolves to this machine's
    # non-loopback address (what an /etc/hosts line does, here for this run only)
    inner.makeconftest(
        HEADER
        + """
_resolve = socket.getaddrinfo
def _hosts(host, *args, **kwargs):
    return _resolve(service_address() if host == "db" else host, *args, **kwargs)
socket.getaddrinfo = _hosts
"""
    )
    inner.makepyfile(test_db=HEADER + SERVICE_TEST.replace("(service_address(), port)", '("db", port)'))
    run(inner, "--llmvcr-block-network", "--llmvcr-allowed-hosts=db", ci="true").assert_outcomes(passed=1)
    refused = run(inner, "--llmvcr-block-network", ci="true")  # the same test, "db" not allowed
    refused.assert_outcomes(failed=1)
    refused.stdout.fnmatch_lines(["*NetworkBlockedError: *test_talks_to_a_service: a connection to*"])


@pytest.mark.slow
def test_the_ci_refusal_of_an_unmarked_call_gives_advice_that_works_as_printed(
    inner: pytest.Pytester,
) -> None:
    unmarked = """
def test_unmarked():
    assert ask("hi") == "Echo: hi"
"""
    inner.makepyfile(test_advice=HEADER + unmarked)
    away = "http://api.example.test"  # not loopback: the guard refuses the call before it connects
    refused = run(inner, ci="true", LLM_URL=away)
    refused.assert_outcomes(failed=1)
    text = refused.stdout.str()
    assert "on when CI is set" not in text  # --llmvcr-block-network is off; CI alone refused it
    refused.stdout.fnmatch_lines(
        [
            "*test_advice.py::test_unmarked: the anthropic call POST*outside a cassette: when CI is set, "
            "llmvcr refuses LLM calls outside a cassette*mark the test @pytest.mark.llmvcr*"
            "pytest 'test_advice.py::test_unmarked' --llmvcr-record-mode=once*"
        ]
    )
    # the advice, followed as printed: mark the test, run the printed command locally, commit
    command = text.split("commit the cassette: ", 1)[1].split(". To let it go out", 1)[0]
    inner.makepyfile(test_advice=HEADER + "\n@pytest.mark.llmvcr" + unmarked)
    run(inner, *shlex.split(command)[1:]).assert_outcomes(passed=1)
    assert (inner.path / "cassettes" / "test_advice" / "test_unmarked.yaml").exists()
    run(inner, ci="true", LLM_URL=away).assert_outcomes(passed=1)
