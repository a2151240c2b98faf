"""``llmvcr verify`` (a live drift check, JUnit XML for CI) and ``llmvcr plan`` (the re-record plan of a
replay-only pytest run)."""

from __future__ import annotations

import argparse
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from ..cassette.age import plural
from ..freshness.budget import Tally, cassette_cost
from ..freshness.check import shown
from ..freshness.usage import prices_available
from ..freshness.verify import Report, Target, verify_cassette
from ..storage.writer import atomic_write
from .inspect import files_under
from .reading import SUFFIXES, load_any

__all__ = ["COMMANDS", "Arg", "Command", "arg", "cmd_plan", "cmd_verify", "junit_xml", "run_plan"]


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


Arg = tuple[tuple[str, ...], dict[str, Any]]
# a subcommand as ``cli.build_parser`` reads it: name, the function that runs it, help, description, arguments
Command = tuple[str, Callable[..., int], str, str, list[Arg]]


def arg(*names: str, **kwargs: Any) -> Arg:
    """One ``add_argument`` call of a subcommand, as data."""
    return names, kwargs


# verify, plan: keeping cassettes true to the live API
COMMANDS: list[Command] = [
    (
        "verify",
        cmd_verify,
        "re-send recorded requests to the live API and report drift in the answers' shape",
        "Send every request of each cassette to the live API again (keys from ANTHROPIC_API_KEY / "
        "OPENAI_API_KEY) and report, per cassette, what changed in the shape of the answer: fields added or "
        "removed, types changed, stream event types new or gone, an error where a success was recorded. "
        "Differing text is not drift. Rewrites nothing. Exit 1 on drift, 2 when a request could not be "
        "checked.",
        [
            arg("paths", nargs="+", metavar="PATH", help="cassette files or folders"),
            arg(
                "--base-url",
                action="append",
                default=[],
                metavar="[PROVIDER=]URL",
                help="where requests go, as the provider's SDK takes it (default: the provider's API, "
                "or ANTHROPIC_BASE_URL / OPENAI_BASE_URL); without PROVIDER= for every provider. anthropic: "
                "scheme://host[/prefix] (https://api.anthropic.com); openai: the same with or without the "
                "SDK's /v1 (https://api.openai.com/v1, http://gw/v1); google and registered providers have "
                "no default and no key is sent for them (a gateway that adds it): google=http://gw. The "
                "recorded path is appended, its start not repeated when the URL already ends with it",
            ),
            arg(
                "--mcp",
                action="append",
                default=[],
                metavar="COMMAND|URL",
                help="an MCP server to send the cassette's read-only MCP requests to (repeatable): a stdio "
                "server's command line ('uvx mcp-server-time') or a streamable HTTP server's URL, matched "
                "to the cassette's servers as recording names them. A stdio server not given is started "
                "from its recorded name when its command is on the PATH",
            ),
            arg(
                "--mcp-calls",
                action="store_true",
                help="also send recorded MCP tools/call requests again (a tool may have side effects)",
            ),
            arg("--junit-xml", metavar="FILE", help="also write the result as JUnit XML"),
            arg("--timeout", type=float, default=60.0, help="seconds per request (default 60)"),
        ],
    ),
    (
        "plan",
        cmd_plan,
        "replay the suite and plan what to re-record, with its cost",
        "Run pytest replay-only (--llmvcr-plan) and print every missing, diverging and expired cassette and "
        "every unplayed entry, grouped by cause, with the estimated live cost of re-recording each group. "
        "Arguments go to pytest as they are (test paths, -k, --llmvcr-max-age=30d). Then record within a "
        "budget: pytest --llmvcr-record-budget=USD ...",
        [arg("pytest_args", nargs=argparse.REMAINDER, metavar="PYTEST_ARGS")],
    ),
]
