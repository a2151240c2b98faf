"""The ``llmvcr`` command: one row of :data:`_COMMANDS` per subcommand (its name, the function that runs
it, its help, its description and its arguments), read by :func:`build_parser`. Adding a command is
adding a row; ``docs/cli.md``'s reference is generated from this table (``python docs/hooks.py``).

Errors are one line on stderr (what went wrong, with which file, and what to do) and exit status 2;
``diff`` and ``scan`` exit 1 for "different" and "found".
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import warnings
from collections.abc import Sequence
from typing import Any, NoReturn

from ..cassette.linear import LAYOUTS
from ..cassette.schema import LLMVCR_VERSION
from ..errors import LLMVCRError
from ..options import did_you_mean
from ..storage.formats import by_name, in_place
from ..storage.parse_cache import yaml_parser
from ..view.command import cmd_view
from ..view.pages import DEFAULT_OUTPUT
from . import fresh
from .command import Command, arg
from .files import cmd_convert, cmd_prune, cmd_rehash, cmd_scan
from .fresh import cmd_plan, cmd_verify
from .inspect import cmd_diff, cmd_ls, cmd_show
from .mcp import MCP
from .migrate import cmd_migrate
from .reading import SOURCES, TARGETS
from .serve import SERVE

_IN_PLACE = ", ".join(by_name(n).title for n in in_place())  # other recorders' cassettes, read in place
_SOURCES = ", ".join(by_name(n).title for n in SOURCES)

# -- the parser -------------------------------------------------------------------------------------
_FLAGS: set[str] = set()  # every option of every command, for "did you mean"
_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)$")


class _Version(argparse.Action):
    """``--version``: llmvcr's version and which parser reads YAML cassettes (the slow one says so)."""

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> NoReturn:
        sys.stdout.write(f"llmvcr {LLMVCR_VERSION} (YAML: {yaml_parser()})\n")
        parser.exit()


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors on one line that say where the help is, and the closest valid
    name for a mistyped command, option or value."""

    def add_argument(self, *names: Any, **kwargs: Any) -> argparse.Action:
        _FLAGS.update(n for n in names if isinstance(n, str) and n.startswith("--"))
        return super().add_argument(*names, **kwargs)

    def error(self, message: str) -> NoReturn:
        if "required: COMMAND" in message or "required: command" in message:
            message = "no command given"
        self.exit(2, f"{self.prog}: error: {message}{_suggestion(message)}; see '{self.prog} --help'\n")


def _suggestion(message: str) -> str:
    """``; did you mean '--layout'?`` for argparse's unknown-option and invalid-choice errors."""
    choice = _CHOICE.search(message)
    if choice is not None:
        valid = re.findall(r"'([^']*)'", choice.group(2))
        return did_you_mean(choice.group(1), valid)
    if message.startswith("unrecognized arguments: "):
        for word in message.removeprefix("unrecognized arguments: ").split():
            hint = did_you_mean(word.split("=", 1)[0], _FLAGS) if word.startswith("-") else ""
            if hint:
                return hint
    return ""


_FROM = arg("--from", dest="from_format", choices=SOURCES, help="input format (default: detected)")
_COMMANDS: list[Command] = [
    Command(
        "ls",
        cmd_ls,
        help="list cassettes with entry counts, providers, models and size",
        description="List the cassettes under DIR (recursively): llmvcr's, and those llmvcr reads in place "
        f"({_IN_PLACE}), each named with its format. Files of other formats are named on stderr with the "
        "command that imports them.",
        arguments=[
            arg(
                "dir",
                nargs="?",
                default=None,
                metavar="DIR",
                help="folder to list (default: ./cassettes, else every 'cassettes' folder below here, "
                "where the pytest plugin keeps them beside the tests)",
            )
        ],
    ),
    Command(
        "show",
        cmd_show,
        help="print a cassette as a readable conversation",
        description="Print each call's new messages and the answer (streams collapsed into text, tool "
        "calls and results "
        f"inline). Reads {', '.join(SOURCES)} files, and says which it read.",
        arguments=[arg("cassette", metavar="CASSETTE", help="a path, or a name under cassettes/"), _FROM],
    ),
    Command(
        "diff",
        cmd_diff,
        help="compare two cassettes entry by entry",
        description="Structural diff of two cassettes, entry by entry (stream timings ignored). Exit 1 "
        "when they differ.",
        arguments=[
            arg("a", metavar="A"),
            arg("b", metavar="B"),
            _FROM,
            arg("--limit", type=int, default=20, help="differing paths shown per entry (default 20)"),
            arg(
                "--html",
                metavar="FILE",
                help="also write the two side by side, changes highlighted, to this page",
            ),
        ],
    ),
    Command(
        "convert",
        cmd_convert,
        help=f"convert any format llmvcr reads to {', '.join(TARGETS)}",
        description=f"Convert SRC ({_SOURCES}; detected unless --from says) to {', '.join(TARGETS)}. When "
        "SRC is a "
        "folder, every file in it is converted into the folder OUT under the same relative path and a table "
        "says what became of each; the exit status is 2 when any failed (OUT may be SRC: `llmvcr convert "
        "tests/cassettes --from vcrpy --to llmvcr-yaml -o tests/cassettes` migrates a pytest-recording "
        "suite in place, keeping any cassette that also holds non-LLM calls).",
        arguments=[
            arg("src", metavar="SRC", help="a file, or a folder of files"),
            arg("--to", required=True, choices=TARGETS, help="output format"),
            arg(
                "-o", "--output", required=True, metavar="OUT", help="output file (a folder when SRC is one)"
            ),
            _FROM,
            arg(
                "--layout",
                choices=LAYOUTS,
                help="llmvcr output: 'linear' stores each message once (format version 2), 'full' "
                "writes every request whole (version 1, read by every llmvcr release); default: the source's "
                "own, 'linear' for other formats",
            ),
        ],
    ),
    Command(
        "scan",
        cmd_scan,
        help="look for credentials in cassettes; exit 1 if any",
        description="Scan every YAML, JSON and JSONL document under PATH for strings that look like API "
        "keys, bearer "
        "tokens, private keys or credential headers.",
        arguments=[arg("paths", nargs="+", metavar="PATH")],
    ),
    Command(
        "prune",
        cmd_prune,
        help="drop entries the last run never played",
        description="Drop the entries the last test run did not use, as recorded in the play store the "
        "pytest plugin (or "
        "llmvcr.freshness.playlog.PlayLog) keeps in pytest's cache (.pytest_cache/d/llmvcr). Refuses when no "
        "run recorded it, when a test using it failed, or when the file changed since.",
        arguments=[
            arg("cassettes", nargs="+", metavar="PATH", help="cassette files or folders"),
            arg("--dry-run", action="store_true", help="say what would go, change nothing"),
        ],
    ),
    Command(
        "rehash",
        cmd_rehash,
        help="after editing a cassette by hand: check every entry, count them, store edited hashes",
        description="Check every entry of each CASSETTE, write the entry count in its header again and "
        "store the "
        "request_hash of each request edited by hand (nothing else changes). Run it after removing entries "
        "by hand (a file holding fewer entries than its header counts is refused as truncated) or editing a "
        "prompt (replay then warns no more).",
        arguments=[arg("cassettes", nargs="+", metavar="CASSETTE", help="cassette files")],
    ),
    Command(
        "verify",
        cmd_verify,
        help="re-send recorded requests to the live API and report drift in the answers' shape",
        description="Send every request of each cassette to the live API again (keys from "
        "ANTHROPIC_API_KEY / "
        "OPENAI_API_KEY) and report, per cassette, what changed in the shape of the answer: fields added or "
        "removed, types changed, stream event types new or gone, an error where a success was recorded. "
        "Differing text is not drift. Rewrites nothing. Exit 1 on drift, 2 when a request could not be "
        "checked.",
        arguments=[
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
    Command(
        "plan",
        cmd_plan,
        help="replay the suite and plan what to re-record, with its cost",
        description="Run pytest replay-only (--llmvcr-plan) and print every missing, diverging and expired "
        "cassette and "
        "every unplayed entry, grouped by cause, with the estimated live cost of re-recording each group. "
        "Arguments go to pytest as they are (test paths, -k, --llmvcr-max-age=30d). Then record within a "
        "budget: pytest --llmvcr-record-budget=USD ...",
        arguments=[arg("pytest_args", nargs=argparse.REMAINDER, metavar="PYTEST_ARGS")],
    ),
    Command(
        "migrate",
        cmd_migrate,
        help="move a pytest-recording suite's LLM tests onto llmvcr (a diff first; --write applies it)",
        description="Rewrite @pytest.mark.vcr to @pytest.mark.llmvcr, vcr_config to llmvcr_config, a "
        "test's vcr argument to llmvcr_cassette and pytest-recording's addopts flags, in the test files, "
        "conftests and pytest config under PATH. Tests whose cassettes also hold calls to other hosts "
        "stay on pytest-recording. Prints the diff and what it did and left; writes only with --write.",
        arguments=[
            arg("path", nargs="?", default=".", metavar="PATH", help="folder or file (default: .)"),
            arg("--write", action="store_true", help="apply the changes (default: show them)"),
            arg(
                "--convert",
                action="store_true",
                help="with --write: also convert the migrated tests' cassettes to llmvcr's format, in place "
                "(those of tests left on pytest-recording stay vcrpy's)",
            ),
        ],
    ),
    SERVE,
    MCP,
    Command(
        "view",
        cmd_view,
        help="write one self-contained HTML page of cassettes (a timeline, conversations, costs)",
        description="Write one HTML file with everything inside (no network, no server) for the "
        "cassettes at PATH: files or folders, in any format llmvcr reads. It shows a timeline of the "
        "calls with stream events at their arrival offsets and a player, each call as a conversation "
        "with its raw request and response, tokens and list-price dollars, age and expiry, and the "
        "entries the last test run did not play. Several cassettes get an index with a filter.",
        arguments=[
            arg("paths", nargs="+", metavar="PATH", help="cassette files or folders of them"),
            arg(
                "-o",
                "--output",
                default=DEFAULT_OUTPUT,
                metavar="FILE",
                help=f"the page (default: {DEFAULT_OUTPUT})",
            ),
            arg("--open", action="store_true", help="open the page in the default browser"),
            arg(
                "--max-age",
                metavar="AGE",
                help="mark cassettes recorded longer ago than AGE expired ('30d', '12h')",
            ),
        ],
    ),
]


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="llmvcr",
        description="Inspect, compare, convert and clean llmvcr cassettes.",
        epilog="Errors are one line on stderr with exit status 2; diff and scan exit 1 for "
        "'different' and 'found'.",
    )
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and YAML parser; exit")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    for row in _COMMANDS:
        command = commands.add_parser(row.name, help=row.help, description=row.description)
        for names, kwargs in row.arguments:
            command.add_argument(*names, **kwargs)
        command.set_defaults(run=row.run)
    return parser


def _one_line(err: BaseException) -> str:
    if isinstance(err, OSError) and not isinstance(err, LLMVCRError) and err.strerror:
        where = f"{err.filename}: " if err.filename else ""
        return f"{where}{err.strerror.lower()}"
    return " ".join(str(err).split())


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (``python -m llmvcr`` and the ``llmvcr`` script)."""
    given = list(sys.argv[1:] if argv is None else argv)
    if given[:1] == ["plan"] and given[1:] not in (["-h"], ["--help"]):  # the rest is pytest's, as given
        return fresh.run_plan(given[1:])
    args = build_parser().parse_args(given)
    for stream in (sys.stdout, sys.stderr):  # a console that cannot show a character gets a '?'
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="replace")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            status: int = args.run(args, sys.stdout)
        for warning in caught:
            print(f"llmvcr: warning: {' '.join(str(warning.message).split())}", file=sys.stderr)
        return status
    except BrokenPipeError:  # `llmvcr show ... | head`: the reader left; say nothing
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except (LLMVCRError, OSError) as err:
        print(f"llmvcr: error: {_one_line(err)}", file=sys.stderr)  # one line, always
        return 2
    except KeyboardInterrupt:
        return 130
