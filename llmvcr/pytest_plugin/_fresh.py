"""The pytest side of keeping cassettes fresh: the flags for unplayed entries and expiry, the usage
and cost per test (``--llmvcr-usage-json``), the re-record plan (``--llmvcr-plan``) and the record
budget (``--llmvcr-record-budget``).

Registered by the llmvcr plugin (``pytest_plugin``); the checks themselves are in
``llmvcr.freshness.check``. The flags override every cassette's own setting, as
``--llmvcr-record-mode`` does.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from .. import _active
from ..cassette.age import EXPIRY_POLICIES, UNPLAYED_POLICIES, parse_age
from ..errors import CassetteNotFoundError, LLMVCRError, RecordBudgetSpent, ReplayDivergence
from ..freshness.check import add_listener, policy, swap_listeners
from ..freshness.plan import Budget, Plan, missing_path
from ..freshness.usage import PRICES_HINT, prices_available
from ..options import settings
from ._summary import RunSummary

__all__ = ["FreshPlugin", "addoption"]


def _age(value: str) -> Any:
    try:
        return parse_age(value)
    except ValueError as err:
        raise pytest.UsageError(f"--llmvcr-max-age: {err}") from None


def addoption(group: Any) -> None:
    """The flags, in llmvcr's option group."""
    group.addoption(
        "--llmvcr-on-unplayed",
        choices=UNPLAYED_POLICIES,
        default=None,
        help="a passing test that left recorded entries unused: warn (default), fail, or ignore",
    )
    group.addoption(
        "--llmvcr-max-age",
        default=None,
        metavar="AGE",
        help="a cassette recorded longer ago than AGE ('30d', '12h', '2w') is expired",
    )
    group.addoption(
        "--llmvcr-expiry",
        choices=EXPIRY_POLICIES,
        default=None,
        help="what an expired cassette does: warn (default), fail, or re-record (never on CI, "
        "where it warns)",
    )
    group.addoption(
        "--llmvcr-usage-json",
        default=None,
        metavar="PATH",
        help="write the tokens and list-price dollars each test replayed and recorded to PATH (JSON)",
    )
    group.addoption(
        "--llmvcr-plan",
        action="store_true",
        default=False,
        help="replay only, and print what needs re-recording (missing, diverging, expired, unplayed), "
        "grouped by cause with the estimated live cost of each group",
    )
    group.addoption(
        "--llmvcr-record-budget",
        type=float,
        default=None,
        metavar="USD",
        help="record cassettes only until USD list-price dollars are spent; later ones are skipped "
        "and named (a cassette is recorded whole or not at all)",
    )


class FreshPlugin:
    """Sets the run's freshness policy from the flags, names the running test in messages, and
    hands findings to the end-of-run summary."""

    def __init__(self, config: pytest.Config, stats: RunSummary) -> None:
        self.config = config
        self.stats = stats
        self.saved = (policy.on_unplayed, policy.max_age, policy.expiry)
        max_age = config.getoption("llmvcr_max_age")
        policy.on_unplayed = config.getoption("llmvcr_on_unplayed") or policy.on_unplayed
        policy.max_age = _age(max_age) if max_age else policy.max_age
        policy.expiry = config.getoption("llmvcr_expiry") or policy.expiry
        self.outer = swap_listeners([stats.on_finding])
        self.ledger = stats.usage
        self.cache = getattr(config, "cache", None)  # absent under -p no:cacheprovider
        if self.cache is not None and self.cache.get(_TOLD, False):
            self.ledger.prices_hint = False  # "dollars omitted" is said once per project
        _active.add_listener(self.ledger.on_session)
        self.saved_mode, self.saved_gate = settings.record_mode, policy.gate
        self.plan: Plan | None = None
        if config.getoption("llmvcr_plan"):  # replay only; findings are collected, never acted on
            self.plan = stats.plan = Plan()
            settings.record_mode = "none"
            policy.expiry = "warn"
            policy.on_unplayed = "warn"
            add_listener(self.plan.on_finding)
        usd = config.getoption("llmvcr_record_budget")
        self.budget: Budget | None = None
        if usd is not None:
            if not math.isfinite(usd) or usd < 0:  # a negative budget would skip every cassette
                raise pytest.UsageError(
                    f"--llmvcr-record-budget={usd}: give the most list-price dollars to spend, 0 or more "
                    "(e.g. --llmvcr-record-budget=0.50)"
                )
            if not prices_available():
                raise pytest.UsageError(f"--llmvcr-record-budget needs list prices; {PRICES_HINT}")
            if getattr(config.option, "numprocesses", None):  # each worker would spend the whole budget
                raise pytest.UsageError("--llmvcr-record-budget counts one process's spending; drop -n")
            self.budget = Budget(usd, self.ledger.spent)
            policy.gate = self.budget.gate

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        policy.test = self.ledger.test = item.nodeid

    def pytest_runtest_logfinish(self) -> None:
        policy.test = self.ledger.test = ""

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        path = self.config.getoption("llmvcr_usage_json")
        # a pytest-xdist worker hands its usage to the controller, which writes the file
        if path and not hasattr(session.config, "workeroutput"):
            self.ledger.write(path)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        outcome = yield
        excinfo = call.excinfo
        if excinfo is None:
            return
        report = outcome.get_result()
        if excinfo.errisinstance(RecordBudgetSpent):  # not a failure: the run chose not to pay for it
            report.outcome = "skipped"
            report.longrepr = (str(item.path), item.location[1] or 0, f"Skipped: {excinfo.value}")
        if self.plan is None:
            return
        missing = missing_path(str(excinfo.value))  # a marked test whose cassette is missing fails
        if missing and excinfo.errisinstance((CassetteNotFoundError, ReplayDivergence)):  # at its call
            self.plan.add("missing", missing, item.nodeid)
        elif excinfo.errisinstance(ReplayDivergence):
            error = excinfo.value
            assert isinstance(error, ReplayDivergence)
            first = error.diff[0] if error.diff else None
            detail = f"{first[0]} changed" if first else ""
            self.plan.add("diverging", error.cassette_path, item.nodeid, detail)
        elif report.failed and not excinfo.errisinstance(LLMVCRError):  # the test's own error
            self.plan.test_failed(item.nodeid, excinfo.value)

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        lines = self.ledger.lines() if self.config.getini("llmvcr_summary") else []
        if self.budget is not None:
            lines += self.budget.lines()
        if self.plan is not None:
            lines += self.plan.lines()
        for line in lines:
            terminalreporter.write_line(line)
        if self.cache is not None and any(PRICES_HINT in line for line in lines):
            self.cache.set(_TOLD, True)
        path = self.config.getoption("llmvcr_usage_json")
        if path:
            terminalreporter.write_line(f"llmvcr: usage and cost per test written to {path}")

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        policy.on_unplayed, policy.max_age, policy.expiry = self.saved
        policy.test = ""
        swap_listeners(self.outer)
        settings.record_mode, policy.gate = self.saved_mode, self.saved_gate
        _active.remove_listener(self.ledger.on_session)


_TOLD = "llmvcr/prices-hint-shown"
