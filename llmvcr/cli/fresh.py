"""``llmvcr verify`` (a live drift check, JUnit XML for CI) and ``llmvcr plan`` (the re-record plan of a
replay-only pytest run)."""

from __future__ import annotations

import argparse
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import TextIO

from ..freshness.budget import Tally, cassette_cost
from ..freshness.usage import prices_available
from ..freshness.verify import Report, Target, verify_cassette
from ..storage.writer import atomic_write
from ..wording import plural, shown
from .inspect import files_under
from .reading import SUFFIXES, load_any

__all__ = ["cmd_plan", "cmd_verify", "junit_xml", "run_plan"]


def _target(args: argparse.Namespace) -> Target:
    urls: dict[str, str] = {}
    for given in args.base_url:
        provider, sep, url = given.partition("=")
        if sep and "://" not in provider:
            urls[provider] = url
        else:
            urls["*"] = given
    return Target(urls, timeout=args.timeout, mcp=list(args.mcp), mcp_calls=args.mcp_calls)


def cmd_verify(args: argparse.Namespace, out: TextIO) -> int:
    target = _target(args)
    cassettes = [load_any(path) for path in files_under(args.paths, SUFFIXES)]
    requests = sum(len(c) for c in cassettes)
    cost = Tally().merge(*(cassette_cost(c) for c in cassettes))
    shown_cost = cost.dollars(" at list price")
    about = shown_cost if shown_cost == "unpriced" else f"about {shown_cost}"
    priced = f", {about}" if prices_available() else ""
    sending = f"{plural(requests, 'recorded request')} of {plural(len(cassettes), 'cassette')}"
    out.write(f"llmvcr verify: sending {sending}{priced}\n")
    reports = [verify_cassette(c, target) for c in cassettes]
    for report in reports:
        where = shown(report.path)
        if report.drift:
            found = f"{plural(len(report.drift), 'change')} in {plural(report.checked, 'answer')}"
            out.write(f"  {where}: DRIFT ({found})\n")
            out.writelines(f"    {d}\n" for d in report.drift)
        elif report.problems:
            total = report.checked + len(report.problems)
            out.write(f"  {where}: NOT CHECKED ({len(report.problems)} of {total} requests)\n")
        else:
            out.write(f"  {where}: ok ({plural(report.checked, 'answer')}, same shape)\n")
        out.writelines(f"    not checked: {p}\n" for p in report.problems)
    drifted = sum(1 for r in reports if r.drift)
    unchecked = sum(1 for r in reports if r.problems)
    out.write(
        f"llmvcr verify: {drifted} of {len(reports)} cassettes drifted"
        + (f", {unchecked} not fully checked" if unchecked else "")
        + ("; nothing was rewritten" + (" (re-record the drifted ones)" if drifted else ""))
        + "\n"
    )
    if args.junit_xml:
        atomic_write(args.junit_xml, junit_xml(reports))
        out.write(f"llmvcr verify: JUnit XML written to {args.junit_xml}\n")
    return 1 if drifted else 2 if unchecked else 0


def junit_xml(reports: Sequence[Report]) -> bytes:
    """One test case per cassette: a failure for drift, an error for requests that were not checked."""
    suite = ET.Element(
        "testsuite",
        name="llmvcr verify",
        tests=str(len(reports)),
        failures=str(sum(1 for r in reports if r.drift)),
        errors=str(sum(1 for r in reports if r.problems and not r.drift)),
    )
    for report in reports:
        case = ET.SubElement(suite, "testcase", classname="llmvcr.freshness.verify", name=shown(report.path))
        if report.drift:
            message = f"{plural(len(report.drift), 'change')} in the answers' shape"
            failure = ET.SubElement(case, "failure", message=message)
            failure.text = "\n".join(str(d) for d in report.drift)
        elif report.problems:
            error = ET.SubElement(case, "error", message="not checked")
            error.text = "\n".join(report.problems)
    text: bytes = ET.tostring(suite, encoding="utf-8", xml_declaration=True)
    return text + b"\n"


def cmd_plan(args: argparse.Namespace, out: TextIO) -> int:
    out.flush()
    return run_plan(args.pytest_args)


def run_plan(pytest_args: Sequence[str]) -> int:
    """``pytest --llmvcr-plan PYTEST_ARGS``: its exit status (1 when a replay failed)."""
    extra = [a for a in pytest_args if a != "--"]
    # the plan, not the tracebacks of the replays that failed (a later --tb=... wins)
    return subprocess.call([sys.executable, "-m", "pytest", "--llmvcr-plan", "--tb=no", *extra])
