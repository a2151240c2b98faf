"""Shared fixtures: the loopback LLM server, clients pointed at it, a cassette folder, a network block."""

from __future__ import annotations

import gc
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml  # noqa: F401 - imported before any in-process pytester run (see below)
from llm_server import LLMServer

import llmvcr
from llmvcr import _active, providers
from llmvcr.options import settings
from llmvcr.providers import _answer as answer

pytest_plugins = ["pytester"]
# pytester's in-process runs put sys.modules back as they found it. PyYAML first imported inside one
# (an in-process `llmvcr convert`, say) leaves with it, but its C extension cannot be loaded again:
# the next import of yaml gets the old CParser beside new Python classes, and every libyaml load
# then fails ("could not determine a constructor for the tag None"). Imported here, it stays.


@pytest.fixture
def pytester(pytester: pytest.Pytester) -> pytest.Pytester:
    """pytester, whose runs set pytest-asyncio's loop scope as this suite does (it warns otherwise)."""
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    return pytester


FRAMEWORKS = Path(__file__).parent / "frameworks"
DATA = Path(__file__).parent / "data"


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """The frameworks suite needs its own install (tox -e frameworks): it runs when named by path.
    Other projects' suites under ``data/`` are fixtures, run in copies by ``test_real_suites``."""
    if collection_path == DATA:
        return True
    if collection_path != FRAMEWORKS:
        return None
    asked = [Path(str(a).split("::")[0]).resolve() for a in config.args]
    return not any(a == FRAMEWORKS or FRAMEWORKS in a.parents for a in asked)


# A test that takes 2 s or more alone on a quiet machine is marked slow (pyproject's markers), so the
# README's command (-m "not slow") stays a short wait. A run names the unmarked tests that took
# SLOW_SECONDS or more: a margin over 2 s, as two workers on a busy machine stretch every test.
SLOW_SECONDS = 3.0
_unmarked_slow: list[tuple[float, str]] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Note a test that took SLOW_SECONDS or more without the ``slow`` mark (under xdist too)."""
    if report.when == "call" and report.duration >= SLOW_SECONDS and "slow" not in report.keywords:
        _unmarked_slow.append((report.duration, report.nodeid))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Name the unmarked slow tests, so a new one is marked rather than lengthening the README's run."""
    if not _unmarked_slow:
        return
    terminalreporter.write_line(
        f"{len(_unmarked_slow)} test(s) took {SLOW_SECONDS:g} s or more without @pytest.mark.slow "
        "(mark them slow if they take 2 s on a quiet machine):"
    )
    for seconds, nodeid in sorted(_unmarked_slow, reverse=True)[:10]:
        terminalreporter.write_line(f"  {seconds:.1f}s {nodeid}")


ANTHROPIC_SENTINEL = "sk-ant-api03-SENTINEL-anthropic-key-0123456789"
OPENAI_SENTINEL = "sk-proj-SENTINEL-openai-key-0123456789abcdef"


@pytest.fixture(scope="session")
def server() -> Iterator[LLMServer]:
    srv = LLMServer().start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(autouse=True)
def cassette_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every test records into its own folder; no real credentials, profiles or CI flag leak in.

    CI is cleared so a test sees the same default record mode on a laptop and on a CI runner;
    the tests about CI set it themselves.
    """
    directory = tmp_path / "cassettes"
    llmvcr.configure(cassette_dir=directory)
    monkeypatch.setenv("HOME", str(tmp_path))
    for var in (
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "GEMINI_API_KEY",  # a placeholder the outer run set when CI is set (placeholder_keys)
        "ANTHROPIC_BASE_URL",
        "OPENAI_BASE_URL",
        "CI",
    ):
        monkeypatch.delenv(var, raising=False)
    # the plugin read CI when this (outer) run started: a cassette naming no mode records here too
    monkeypatch.setattr(settings, "default_record_mode", "once")
    yield directory
    llmvcr.configure(cassette_dir="cassettes")


@pytest.fixture(autouse=True)
def nothing_left_open(request: pytest.FixtureRequest) -> Iterator[None]:
    """Each test leaves no interception installed and no session open, so a leak fails the test that
    leaked it rather than a later one on the same worker; the state is then put back for the next test.

    An adapter holds interception until its client is garbage-collected, and a client the test got from
    a fixture lives on in the test's arguments until pytest drops them, after this teardown: they are
    dropped here (every other fixture is torn down already), and a collection run if anything is left.
    """
    yield
    getattr(request.node, "funcargs", {}).clear()
    if providers.installed() or _active._open:
        gc.collect()
    left = []
    if providers.installed():
        left.append("interception is still installed (a cassette or an adapter's client is still alive)")
    open_sessions = list(_active._open)
    if open_sessions:
        left.append(f"{len(open_sessions)} session(s) still open: {[str(s.path) for s in open_sessions]}")
    while providers.installed():
        providers.uninstall()
    for session in open_sessions:
        _active.deactivate(session, None)
    assert not left, "this test left llmvcr active: " + "; ".join(left)


@pytest.fixture(autouse=True)
def requests_built_in_the_funnel_equal_the_sdks() -> Iterator[None]:
    """Every request a replay builds in the SDK's funnel (providers._answer) is also built by the SDK
    itself and compared: the method, URL, every header, the body and the record must be equal."""
    differences: list[str] = []
    answer.checks = differences
    yield
    answer.checks = None
    assert not differences, "\n".join(differences)


@pytest.fixture
def anthropic_client(server: LLMServer) -> Any:
    import anthropic

    return anthropic.Anthropic(api_key=ANTHROPIC_SENTINEL, base_url=server.url, max_retries=0)


@pytest.fixture
def async_anthropic_client(server: LLMServer) -> Any:
    import anthropic

    return anthropic.AsyncAnthropic(api_key=ANTHROPIC_SENTINEL, base_url=server.url, max_retries=0)


@pytest.fixture
def openai_client(server: LLMServer) -> Any:
    import openai

    return openai.OpenAI(api_key=OPENAI_SENTINEL, base_url=server.url + "/v1", max_retries=0)


@pytest.fixture
def async_openai_client(server: LLMServer) -> Any:
    import openai

    return openai.AsyncOpenAI(api_key=OPENAI_SENTINEL, base_url=server.url + "/v1", max_retries=0)


@pytest.fixture
def google_client(server: LLMServer) -> Any:
    from google import genai
    from google.genai import types

    options = types.HttpOptions(base_url=server.url, retry_options=types.HttpRetryOptions(attempts=1))
    return genai.Client(api_key="gemini-test-key", http_options=options)


class NetworkBlocked(AssertionError):
    pass


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Fail any socket connection attempted while active; yields the list of attempts."""
    attempts: list[Any] = []

    def refuse(self: socket.socket, address: Any) -> None:
        attempts.append(address)
        raise NetworkBlocked(f"network blocked: connect to {address!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    yield attempts
