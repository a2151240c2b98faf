"""The pytest plugin: a marker, two fixtures, command-line flags and an end-of-run summary.

Configuration flows in one visible order: marker options, then the ``llmvcr_config`` fixture,
then the command line (``--llmvcr-record-mode`` overrides every cassette, as in pytest-recording).
"""

from __future__ import annotations

import hashlib
import os
import re
import sysconfig
import uuid
import warnings
from collections.abc import Iterator
from types import TracebackType
from typing import Any

import pytest

from . import _active, pytest_fresh
from ._guard import Guard
from ._summary import RunSummary
from .api import CassetteContext
from .errors import CassetteNotFoundError, LLMVCRError, UnplayedEntriesError
from .options import RECORD_MODES, Options, settings
from .parse_cache import prune_used
from .playlog import PlayLog
from .redact import Redactor
from .runs import set_run


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("llmvcr", "record and replay LLM SDK calls")
    group.addoption(
        "--llmvcr-record-mode",
        choices=RECORD_MODES,
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
    pytest_fresh.addoption(group)  # unplayed entries, expiry, usage, the re-record planner


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "llmvcr(name=None, **options): record/replay this test's LLM calls in "
        "cassettes/<module>/<test>.yaml; options as for llmvcr.use_cassette",
    )
    stats = RunSummary()
    config.stash[_STATS] = stats
    _active.add_listener(stats.on_session)
    # what this run plays, for `llmvcr prune`; xdist workers share the controller's run id
    cache = getattr(config, "cache", None)  # absent under -p no:cacheprovider: the user's cache folder
    store = str(cache.mkdir("llmvcr")) if cache is not None else None
    run = getattr(config, "workerinput", {}).get("testrunuid")
    plays = PlayLog(run, store)
    # record_mode="all" replaces a cassette once per run, then merges: the run is this test session
    config.stash[_RUN] = set_run(run or uuid.uuid4().hex)
    config.stash[_PLAYS] = plays
    _active.add_listener(plays.on_session)
    # every cassette of the run, marked or opened by the test itself: the flag overrides each one;
    # on CI, one that names no record mode replays only
    config.stash[_SETTINGS] = (settings.record_mode, settings.default_record_mode)
    settings.record_mode = config.getoption("llmvcr_record_mode") or settings.record_mode
    if on_ci():
        settings.default_record_mode = "none"
    config.pluginmanager.register(pytest_fresh.FreshPlugin(config, stats), "llmvcr-fresh")
    block = config.getoption("llmvcr_block_network")
    if block is not False and (block or on_ci()):
        allowed = {h.strip() for h in config.getoption("llmvcr_allowed_hosts").split(",") if h.strip()}
        guard = Guard(allowed, block_sockets=bool(block))
        config.stash[_GUARD] = guard
        guard.start()


def on_ci() -> bool:
    """``CI`` is set to a true value (``false``, ``0``, ``no``, ``off`` and empty mean not CI)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no", "off")


def pytest_unconfigure(config: pytest.Config) -> None:
    if _RUN in config.stash:
        set_run(config.stash[_RUN])  # the run of an outer session (pytester) goes on
    if _SETTINGS in config.stash:
        settings.record_mode, settings.default_record_mode = config.stash[_SETTINGS]
    stats = config.stash.get(_STATS, None)
    if stats is not None:
        _active.remove_listener(stats.on_session)
    plays = config.stash.get(_PLAYS, None)
    if plays is not None:
        _active.remove_listener(plays.on_session)
    guard = config.stash.get(_GUARD, None)
    if guard is not None:
        guard.stop()


# -- naming --------------------------------------------------------------------------------
_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_LEGACY_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]+")
_REDACTED = re.compile(r"<REDACTED:([a-z-]+)>")
_LONGEST = 250  # bytes of a cassette's file name before ".yaml" (escaped names are ASCII)


def _escape(text: str) -> str:
    """Each character outside ``[A-Za-z0-9_.-]`` as ``%XX`` per UTF-8 byte: an escape, not a
    replacement, so two different ids never share a file (``a/b`` -> ``a%2Fb``, ``a b`` -> ``a%20b``)."""
    return "".join(
        c if c in _SAFE else "".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass")) for c in text
    )


def _redacted(text: str) -> str:
    # a key in a test id must not become a file name (nor reach the play log or a summary)
    return _REDACTED.sub(r"REDACTED-\1", Redactor().text(text))


def cassette_name(node: pytest.Item) -> str:
    """``test_chat.py::TestX::test_one[gpt-4o/a b]`` -> ``test_chat/TestX.test_one[gpt-4o%2Fa%20b]``.

    Ids made of ``[A-Za-z0-9_.-]`` are kept as they are; other characters are percent-escaped.
    """
    module = os.path.splitext(os.path.basename(str(node.path)))[0]
    head, bracket, params = node.nodeid.partition("[")  # a parameter id may hold "::" itself
    base = ".".join(head.split("::")[1:]) or node.name.partition("[")[0]
    name = _escape(_redacted(base))
    if bracket:
        name += f"[{_escape(_redacted(params[:-1] if params.endswith(']') else params))}]"
    if len(name) > _LONGEST:  # a file name holds 255 bytes: cut, and tell the cut names apart by hash
        name = name[: _LONGEST - 20] + "~" + hashlib.sha256(name.encode()).hexdigest()[:16]
    return f"{module}/{name}"


def legacy_cassette_name(node: pytest.Item) -> str:
    """The name earlier releases gave (unsafe runs replaced, so different ids could share it)."""
    module = os.path.splitext(os.path.basename(str(node.path)))[0]
    name = _redacted(".".join(node.nodeid.split("::")[1:]) or node.name)
    base, bracket, params = name.partition("[")
    safe = _LEGACY_UNSAFE.sub("_", base)
    if bracket:
        safe += "[" + _LEGACY_UNSAFE.sub("-", params.rstrip("]")).strip("-") + "]"
    return f"{module}/{safe}"


def cassette_path(node: pytest.Item, name: str | None = None) -> str:
    directory = node.config.getoption("llmvcr_dir") or os.path.join(
        os.path.dirname(str(node.path)), "cassettes"
    )
    relative = name if name is not None else cassette_name(node)
    if not relative.endswith((".yaml", ".yml", ".json")):
        relative += ".yaml"
    path = os.path.join(directory, relative)
    if name is None and not os.path.lexists(path):
        legacy = os.path.join(directory, legacy_cassette_name(node) + ".yaml")
        if legacy != path and os.path.lexists(legacy):
            warnings.warn(
                f"{node.nodeid}: its cassette is now named {path}; using {legacy}, its old name, "
                f"which other ids may share. Rename the file (git mv), or re-record it",
                FutureWarning,
                stacklevel=2,
            )
            return legacy
    return path


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
    none of them naming a record mode, CI means ``none``.
    """
    merged: dict[str, Any] = dict(config)
    name: str | None = None
    marker = request.node.get_closest_marker("llmvcr")
    if marker is not None:
        if marker.args:
            name = str(marker.args[0])
        merged.update(marker.kwargs)
        name = merged.pop("name", name)
    mode = request.config.getoption("llmvcr_record_mode")
    by_ci = False
    if mode is not None:
        merged["record_mode"] = mode
    elif "record_mode" not in merged and on_ci():
        merged["record_mode"] = "none"  # CI replays; recording is done locally and committed
        by_ci = True
    return name, merged, by_ci


@pytest.fixture
def llmvcr_cassette(request: pytest.FixtureRequest, llmvcr_config: dict[str, Any]) -> Iterator[Any]:
    """The test's ``Cassette``, active for the whole test."""
    name, options, by_ci = _options(request, llmvcr_config)
    path = cassette_path(request.node, name)
    context = CassetteContext(path, Options.build(**options))
    try:
        cassette = context.__enter__()
    except CassetteNotFoundError:
        why = " (the default when CI is set)" if by_ci else ""
        raise CassetteNotFoundError(
            f"{request.node.nodeid}: no cassette at {path}, and record_mode='none'{why} forbids "
            f"recording. Record it locally and commit it: pytest '{request.node.nodeid}' "
            f"--llmvcr-record-mode=once"
        ) from None
    try:
        yield cassette
    except BaseException as err:
        context.__exit__(type(err), err, err.__traceback__)
        raise
    else:
        context.__exit__(None, None, None)


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
_SETTINGS = pytest.StashKey[tuple[str | None, str]]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    excinfo = call.excinfo
    explained = excinfo is not None and _raised_by_llmvcr(excinfo) and not item.config.getoption("fulltrace")
    shortened = _to_user_code(excinfo) if excinfo is not None and explained else None
    if shortened is not None:  # the user's line that made the call, then the message: not the SDK's code
        call.excinfo = shortened
    outcome = yield
    if excinfo is not None and explained and shortened is None:  # in setup, in llmvcr's own fixture
        outcome.get_result().longrepr = excinfo.exconly()  # type: ignore[attr-defined]
    plays = item.config.stash.get(_PLAYS, None)
    # a test failed only for entries it left unused (on_unplayed="fail") may still be pruned
    unplayed = excinfo is not None and excinfo.errisinstance(UnplayedEntriesError)
    if plays is not None and outcome.get_result().failed and not unplayed:  # type: ignore[attr-defined]
        plays.test_failed(item.nodeid)  # a failed test's cassettes are not evidence for prune


_LIBRARIES = tuple(
    os.path.normcase(os.path.realpath(sysconfig.get_paths()[name]) + os.sep)
    for name in ("stdlib", "platstdlib", "purelib", "platlib")
)
_OWN = os.path.normcase(os.path.dirname(os.path.realpath(__file__)) + os.sep)


def _to_user_code(
    excinfo: pytest.ExceptionInfo[BaseException],
) -> pytest.ExceptionInfo[BaseException] | None:
    """The exception with its traceback ending at the last frame of the user's code: no SDK, llmvcr
    or standard library frame after it (None: no frame is the user's). The exception is not changed."""
    frames: list[TracebackType] = []
    tb: TracebackType | None = excinfo.tb
    while tb is not None:
        frames.append(tb)
        tb = tb.tb_next
    last = max((i for i, t in enumerate(frames) if _user_code(t.tb_frame.f_code.co_filename)), default=None)
    if last is None or last == len(frames) - 1:
        return None if last is None else excinfo
    shortened = TracebackType(None, frames[last].tb_frame, frames[last].tb_lasti, frames[last].tb_lineno)
    for t in reversed(frames[:last]):  # a copy of the chain: pytest rebuilds entries from it
        shortened = TracebackType(shortened, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return pytest.ExceptionInfo.from_exc_info((type(excinfo.value), excinfo.value, shortened))


def _raised_by_llmvcr(excinfo: pytest.ExceptionInfo[BaseException]) -> bool:
    """llmvcr's errors, and a bad option (a ``ValueError`` raised in llmvcr): the message says it all."""
    if excinfo.errisinstance(LLMVCRError):
        return True
    tb: TracebackType | None = excinfo.tb
    innermost = ""
    while tb is not None:
        innermost, tb = tb.tb_frame.f_code.co_filename, tb.tb_next
    return excinfo.errisinstance(ValueError) and os.path.normcase(os.path.realpath(innermost)).startswith(
        _OWN
    )


def _user_code(filename: str) -> bool:
    path = os.path.normcase(os.path.realpath(filename))
    return not path.startswith((*_LIBRARIES, _OWN)) and "site-packages" not in path


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
    """pytest-xdist: a worker finished; add its counts to the controller's summary."""
    data = getattr(node, "workeroutput", {}).get("llmvcr_summary")
    stats = node.config.stash.get(_STATS, None)
    if data and stats is not None:
        stats.merge(data)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    stats = config.stash.get(_STATS, None)
    if stats is not None:
        for line in stats.lines(verbose=config.get_verbosity() > 0):
            terminalreporter.write_line(line)
