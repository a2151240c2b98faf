"""The pytest plugin: a marker, two fixtures, command-line flags and an end-of-run summary.

Configuration flows in one visible order: marker options, then the ``llmvcr_config`` fixture,
then the command line (``--llmvcr-record-mode`` overrides every cassette, as in pytest-recording).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from typing import Any

import pytest

from .. import _active, providers
from ..api import CassetteContext
from ..cassette import Cassette
from ..cassette.age import on_ci
from ..errors import CassetteNotFoundError, ReplayDivergence, UnplayedEntriesError
from ..freshness.playlog import PlayLog
from ..lifecycle import ci_record_mode, open_session
from ..options import RECORD_MODES, Options, configure, did_you_mean, settings
from ..providers import placeholder_keys
from ..session import Session
from ..storage.formats import resolve
from ..storage.parse_cache import prune_used
from ..storage.runs import set_run
from . import _fresh, _pytest_recording
from ._cassette_names import cassette_name as cassette_name
from ._cassette_names import cassette_path as cassette_path
from ._cassette_names import legacy_cassette_name as legacy_cassette_name
from ._network import Guard
from ._summary import RunSummary
from ._tracebacks import raised_by_llmvcr, to_user_code


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("llmvcr", "record and replay LLM SDK calls")
    group.addoption(
        "--llmvcr-record-mode",
        type=_record_mode,
        metavar="{" + ",".join(RECORD_MODES) + "}",
        default=None,
        help="record mode for every cassette (default: each cassette's own, 'once'; 'none' when CI is set)",
    )
    group.addoption(
        "--llmvcr-dir",
        default=None,
        help="folder for marker cassettes (default: a 'cassettes' folder beside each test file)",
    )
    group.addoption(
        "--llmvcr-block-network",
        action="store_true",
        default=None,
        help="also fail any connection to a host that is not loopback or allowed, made outside a "
        "recording cassette (LLM calls outside a cassette are refused whenever CI is set)",
    )
    group.addoption(
        "--llmvcr-no-block-network",
        dest="llmvcr_block_network",
        action="store_false",
        help="refuse nothing, not even LLM calls outside a cassette on CI",
    )
    group.addoption(
        "--llmvcr-allowed-hosts",
        default="",
        help="comma-separated host names or addresses that may be reached even when blocked "
        "(names match as written, before resolution)",
    )
    _fresh.addoption(group)  # unplayed entries, expiry, usage, the re-record planner
    group.addoption(
        "--llmvcr-report",
        metavar="FILE",
        default=None,
        help="when a replay fails with ReplayDivergence, write an HTML page with the live request beside "
        "the nearest recorded one, changes highlighted (the error names it)",
    )
    group.addoption(
        "--llmvcr-fail-on-stale",
        action="store_true",
        default=False,
        help="fail a call that a vcrpy/pytest-recording cassette answers as it was recorded (method "
        "and URI) although its request differs from the recording (default: replay it and count it "
        "in the summary); the option on_stale='fail' does the same per cassette",
    )
    parser.addini(
        "llmvcr_cassette_format",
        default="yaml",
        help="yaml (default) or json: the format of new cassettes llmvcr names (an existing file is kept)",
    )
    parser.addini(
        "llmvcr_summary",
        type="bool",
        default=True,
        help="print llmvcr's end-of-run summary: cassettes, unused entries, tokens recorded and saved "
        "(false: a suite whose cassettes are its own test data, as llmvcr's own)",
    )
    parser.addini(
        "llmvcr_vcr_fixture",
        type="bool",
        default=False,
        help="also offer the test's llmvcr cassette as the fixture 'vcr' "
        "(for suites that no longer load pytest-recording)",
    )


def _record_mode(value: str) -> str:
    if value not in RECORD_MODES:
        hint = did_you_mean(value, RECORD_MODES)
        raise argparse.ArgumentTypeError(
            f"unknown record mode {value!r}{hint} (valid: {', '.join(RECORD_MODES)})"
        )
    return value


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "llmvcr(name=None, **options): record/replay this test's LLM calls in "
        "cassettes/<module>/<test>.yaml; options as for llmvcr.use_cassette",
    )
    providers.watch_imports()  # wrapt's import hook in place before any test (see watch_imports)
    stats = RunSummary()
    config.stash[_STATS] = stats
    _active.add_listener(stats.on_session)
    # what this run plays, for `llmvcr prune`; xdist workers share the controller's run id
    cache = getattr(config, "cache", None)  # absent under -p no:cacheprovider: the user's cache folder
    store = str(cache.mkdir("llmvcr")) if cache is not None else None
    run = getattr(config, "workerinput", {}).get("testrunuid")
    plays = PlayLog(run, store)
    # record_mode="all" replaces a cassette once per run, then merges: the run is this test session
    config.stash[_RUN] = set_run(run or os.urandom(16).hex())
    config.stash[_PLAYS] = plays
    _active.add_listener(plays.on_session)
    # every cassette of the run, marked or opened by the test itself: the flag overrides each one;
    # on CI, one that names no record mode replays only
    config.stash[_SETTINGS] = (settings.record_mode, settings.default_record_mode, settings.cassette_format)
    settings.record_mode = config.getoption("llmvcr_record_mode") or settings.record_mode
    try:
        configure(cassette_format=str(config.getini("llmvcr_cassette_format")).strip().lower())
    except ValueError as err:
        raise pytest.UsageError(f"llmvcr_cassette_format in the pytest ini: {err}") from None
    settings.default_record_mode = ci_record_mode() or settings.default_record_mode
    config.pluginmanager.register(_fresh.FreshPlugin(config, stats), "llmvcr-fresh")
    if settings.record_mode == "none" or (settings.record_mode is None and on_ci()):  # all replays: no key
        config.stash[_KEYS] = placeholder_keys.set_missing()
    if config.getini("llmvcr_vcr_fixture"):
        config.pluginmanager.register(_VcrFixture(), "llmvcr-vcr-fixture")
    block = config.getoption("llmvcr_block_network")
    if block is not False and (block or on_ci()):
        allowed = {h.strip() for h in config.getoption("llmvcr_allowed_hosts").split(",") if h.strip()}
        guard = Guard(allowed, block_sockets=bool(block))
        config.stash[_GUARD] = guard
        guard.start()


def pytest_unconfigure(config: pytest.Config) -> None:
    if _RUN in config.stash:
        set_run(config.stash[_RUN])  # the run of an outer session (pytester) goes on
    added = config.stash.get(_KEYS, None)
    if added:
        placeholder_keys.unset(added)
    if _SETTINGS in config.stash:
        settings.record_mode, settings.default_record_mode, settings.cassette_format = config.stash[_SETTINGS]
    stats = config.stash.get(_STATS, None)
    if stats is not None:
        _active.remove_listener(stats.on_session)
    plays = config.stash.get(_PLAYS, None)
    if plays is not None:
        _active.remove_listener(plays.on_session)
    guard = config.stash.get(_GUARD, None)
    if guard is not None:
        guard.stop()


# -- fixtures ------------------------------------------------------------------------------
@pytest.fixture
def llmvcr_config() -> dict[str, Any]:
    """Default options for this module's cassettes; override it in a conftest or module, like vcr_config."""
    return {}


def _options(
    request: pytest.FixtureRequest, config: dict[str, Any]
) -> tuple[str | None, dict[str, Any], bool]:
    """The cassette name and options for this test, and whether CI chose its record mode.

    Precedence, lowest first: ``llmvcr_config``, the marker, then ``--llmvcr-record-mode``; with
    none of them naming a record mode, CI means ``none``. vcrpy's keys (a ``vcr_config`` renamed)
    are read as ``llmvcr.pytest_plugin._pytest_recording.translate`` says; the project's own ``vcr_config``
    tells how its pytest-recording cassettes were matched.
    """
    merged: dict[str, Any] = dict(config)
    name: str | None = None
    marker = request.node.get_closest_marker("llmvcr")
    if marker is not None:
        if marker.args:
            name = str(marker.args[0])
        merged.update(marker.kwargs)
        name = merged.pop("name", name)
    merged, ignored = _pytest_recording.translate(merged)
    stats = request.config.stash.get(_STATS, None)
    if ignored and stats is not None:
        stats.ignored_options.update(ignored)
    if "match_on" not in merged and "recorded_match_on" not in merged:
        recorded = _pytest_recording.recorded_match_on(request)
        if recorded:
            merged["recorded_match_on"] = recorded
    if request.config.getoption("llmvcr_fail_on_stale"):
        merged["on_stale"] = "fail"
    mode = request.config.getoption("llmvcr_record_mode")
    by_ci = False
    if mode is not None:
        merged["record_mode"] = mode
    elif "record_mode" not in merged and ci_record_mode():
        merged["record_mode"] = ci_record_mode()
        by_ci = True
    return name, merged, by_ci


def _path(request: pytest.FixtureRequest, name: str | None) -> str:
    """The test's cassette: llmvcr's name for it, the file pytest-recording wrote for it, or the
    name earlier releases gave (with a warning to rename it)."""
    if name is not None:
        return cassette_path(request.node, name)
    ours = cassette_path(request.node, cassette_name(request.node))
    if os.path.lexists(ours):
        return ours
    theirs = _pytest_recording.cassette_path(request, _pytest_recording.vcr_config(request))
    return theirs if os.path.lexists(theirs) else cassette_path(request.node)


class _Missing(CassetteContext):
    """A marked test's cassette that does not exist and may not be recorded: the test runs, as under
    pytest-recording, and its first LLM call fails with ``why`` (what to run to record it)."""

    def __init__(self, path: str, options: Options, why: str) -> None:
        super().__init__(path, options)
        self.why = why

    def session(self) -> Session:
        cassette = Cassette(self.path)
        cassette.read_only = self.why
        return open_session(self.path, self.options, record_mode="none", cassette=cassette, persist=False)


@pytest.fixture
def llmvcr_cassette(request: pytest.FixtureRequest, llmvcr_config: dict[str, Any]) -> Iterator[Cassette]:
    """The test's ``Cassette``, active for the whole test.

    What a pytest-recording test reads from ``vcr`` is here too: ``requests`` (each entry's request,
    its body parsed), ``play_counts`` (``vcr.play_count`` is their sum) and ``all_played``.
    """
    name, options, by_ci = _options(request, llmvcr_config)
    path = _path(request, name)
    built = Options.build(**options)
    context = CassetteContext(path, built)
    context.quiet_when_empty = True  # a test that made no LLM call is named in the run's summary
    try:
        cassette = context.__enter__()
    except CassetteNotFoundError:
        why = " (the default when CI is set)" if by_ci else ""
        context = _Missing(
            path,
            built,
            f"{request.node.nodeid}: no cassette at {path}, and record_mode='none'{why} forbids "
            f"recording. Record it locally and commit it: pytest '{request.node.nodeid}' "
            f"--llmvcr-record-mode=once",
        )
        cassette = context.__enter__()
    try:
        yield cassette
    except BaseException:
        context.close(failed=True)
        raise
    else:  # a test that failed stopped early: its unused entries are no case for pruning
        context.close(failed=request.node.stash.get(_CALL_FAILED, False))


class _VcrFixture:
    """Registered when the ini option ``llmvcr_vcr_fixture`` is true: pytest-recording's fixture name."""

    @pytest.fixture(name="vcr")
    def vcr(self, llmvcr_cassette: Cassette) -> Cassette:
        """The test's llmvcr cassette under pytest-recording's name (``vcr.requests``, ``vcr.play_count``)."""
        return llmvcr_cassette


@pytest.fixture(autouse=True)
def _llmvcr_marker(request: pytest.FixtureRequest) -> Iterator[None]:
    stats: RunSummary | None = request.config.stash.get(_STATS, None)
    if stats is not None:
        stats.test = request.node.nodeid
    plays: PlayLog | None = request.config.stash.get(_PLAYS, None)
    if plays is not None:
        plays.test = request.node.nodeid
    if (
        request.node.get_closest_marker("llmvcr") is not None
        and "llmvcr_cassette" not in request.fixturenames
    ):
        request.getfixturevalue("llmvcr_cassette")
    guard: Guard | None = request.config.stash.get(_GUARD, None)
    if guard is not None:
        guard.test = request.node.nodeid
        # pytest-recording and cassetter mark their tests "vcr": their cassette answers, not llmvcr
        guard.other_recorder = request.node.get_closest_marker("vcr") is not None
        guard.watch_sdks()
    yield


_STATS = pytest.StashKey[RunSummary]()
_GUARD = pytest.StashKey[Guard]()
_PLAYS = pytest.StashKey[PlayLog]()
_RUN = pytest.StashKey[str]()
_SETTINGS = pytest.StashKey[tuple[str | None, str, str]]()
_CALL_FAILED = pytest.StashKey[bool]()
_KEYS = pytest.StashKey[dict[str, str]]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    excinfo = call.excinfo
    explained = excinfo is not None and raised_by_llmvcr(excinfo) and not item.config.getoption("fulltrace")
    shortened = to_user_code(excinfo) if excinfo is not None and explained else None
    if shortened is not None:  # the user's line that made the call, then the message: not the SDK's code
        call.excinfo = shortened
    if excinfo is not None and isinstance(excinfo.value, ReplayDivergence):
        _name_the_test(excinfo.value, item.nodeid)
        _report(item, excinfo.value)
    outcome = yield
    if excinfo is not None and explained and shortened is None:  # in setup, in llmvcr's own fixture
        outcome.get_result().longrepr = excinfo.exconly()  # type: ignore[attr-defined]
    if excinfo is not None and placeholder_keys.AUTH_ERRORS.search(str(excinfo.value)):
        hint = placeholder_keys.AUTH_HINT if on_ci() else placeholder_keys.RECORD_HINT
        _hint(outcome.get_result(), hint)  # type: ignore[attr-defined]
    if outcome.get_result().failed:  # type: ignore[attr-defined]
        if call.when == "call":
            item.stash[_CALL_FAILED] = True
        # a failed test's cassettes are not evidence for prune, unless it failed only for the
        # entries it left unused (on_unplayed="fail")
        unplayed = excinfo is not None and excinfo.errisinstance(UnplayedEntriesError)
        plays = item.config.stash.get(_PLAYS, None)
        if plays is not None and not unplayed:
            plays.test_failed(item.nodeid)
        stats = item.config.stash.get(_STATS, None)
        if stats is not None:
            stats.failed.add(item.nodeid)


def _hint(report: Any, line: str) -> None:
    """One line of llmvcr's under a failure whose cause the SDK named in its own words."""
    add = getattr(report.longrepr, "addsection", None)
    if add is not None:
        add("llmvcr", line)
    else:
        report.sections.append(("llmvcr", line))


def _name_the_test(err: ReplayDivergence, nodeid: str) -> None:
    """The divergence message's generic re-record command, made the one for this test."""
    if err.args and isinstance(err.args[0], str) and "-k <test>" in err.args[0]:
        err.args = (err.args[0].replace("pytest: -k <test>", f"pytest '{nodeid}'"), *err.args[1:])


def _report(item: pytest.Item, err: ReplayDivergence) -> None:
    """``--llmvcr-report``: the divergence drawn side by side in a page the message names. The page
    code (llmvcr.view) is imported only when the option is given."""
    option = item.config.getoption("llmvcr_report")
    if option:
        path = resolve("llmvcr.view.report:on_divergence")(item.config, err, item.nodeid, option)
        if path:
            resolve("llmvcr.view.report:name_the_page")(err, path)


def pytest_sessionfinish(session: pytest.Session) -> None:
    plays = session.config.stash.get(_PLAYS, None)
    if plays is not None:
        plays.write()
    prune_used()  # parsed cassettes no run used for a month leave the cache (at most one walk a day)
    stats = session.config.stash.get(_STATS, None)
    workeroutput = getattr(session.config, "workeroutput", None)
    if stats is not None and workeroutput is not None:  # a pytest-xdist worker: the controller prints
        workeroutput["llmvcr_summary"] = stats.as_json()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """pytest-xdist: a worker finished; add its counts, usage and plan to the controller's reports."""
    data = getattr(node, "workeroutput", {}).get("llmvcr_summary")
    stats = node.config.stash.get(_STATS, None)
    if data and stats is not None:
        stats.merge(data)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    stats = config.stash.get(_STATS, None)
    if stats is not None and config.getini("llmvcr_summary"):
        for line in stats.lines(verbose=config.get_verbosity() > 0):
            terminalreporter.write_line(line)
