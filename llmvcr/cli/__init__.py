"""The ``llmvcr`` command: list, show, diff, convert, scan and prune cassettes.

    llmvcr ls [DIR]                       cassettes with entry counts, providers, models, size
    llmvcr show CASSETTE                  the conversation, streams collapsed into text
    llmvcr diff A B [--html FILE]         entry by entry, structurally (side by side in a page)
    llmvcr convert SRC --to FORMAT -o OUT [--from FORMAT] [--layout linear|full]
                                          SRC may be a folder: every file in it
    llmvcr scan PATH...                   exit 1 when anything looks like a credential
    llmvcr prune PATH...                  drop the entries the last run did not play
    llmvcr rehash CASSETTE...             after a hand edit: check every entry, count them, store hashes
    llmvcr verify PATH... [--junit-xml F] re-send recorded requests live; report drift in the answers' shape
    llmvcr plan [PYTEST_ARGS...]          replay the suite; what to re-record, by cause, with its cost
    llmvcr migrate [PATH] [--write]       a pytest-recording suite onto llmvcr's marker (a diff first)
    llmvcr serve [--port N] [--upstream P=URL]  a local proxy: any language's SDK records and replays
    llmvcr mcp --cassette F -- COMMAND    a stdio MCP server for any client, recorded or answered from F
    llmvcr view PATH... [-o FILE] [--open] one self-contained HTML page of cassettes

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
from ..view.command import add_parser as add_view_parser
from . import fresh
from .files import cmd_convert, cmd_prune, cmd_rehash, cmd_scan
from .fresh import arg
from .inspect import cmd_diff, cmd_ls, cmd_show
from .mcp import add_parser as add_mcp_parser
from .migrate import add_parser as add_migrate_parser
from .reading import SOURCES, TARGETS
from .serve import add_parser as add_serve_parser

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
_COMMANDS: list[fresh.Command] = [
    (
        "ls",
        cmd_ls,
        "list cassettes with entry counts, providers, models and size",
        "List the cassettes under DIR (recursively): llmvcr's, and those llmvcr reads in place "
        f"({_IN_PLACE}), each named with its format. Files of other formats are named on stderr with the "
        "command that imports them.",
        [
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
    (
        "show",
        cmd_show,
        "print a cassette as a readable conversation",
        "Print each call's new messages and the answer (streams collapsed into text, tool calls and results "
        f"inline). Reads {', '.join(SOURCES)} files, and says which it read.",
        [arg("cassette", metavar="CASSETTE", help="a path, or a name under cassettes/"), _FROM],
    ),
    (
        "diff",
        cmd_diff,
        "compare two cassettes entry by entry",
        "Structural diff of two cassettes, entry by entry (stream timings ignored). Exit 1 when they differ.",
        [
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
    (
        "convert",
        cmd_convert,
        f"convert any format llmvcr reads to {', '.join(TARGETS)}",
        f"Convert SRC ({_SOURCES}; detected unless --from says) to {', '.join(TARGETS)}. When SRC is a "
        "folder, every file in it is converted into the folder OUT under the same relative path and a table "
        "says what became of each; the exit status is 2 when any failed (OUT may be SRC: `llmvcr convert "
        "tests/cassettes --from vcrpy --to llmvcr-yaml -o tests/cassettes` migrates a pytest-recording "
        "suite in place, keeping any cassette that also holds non-LLM calls).",
        [
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
    (
        "scan",
        cmd_scan,
        "look for credentials in cassettes; exit 1 if any",
        "Scan every YAML, JSON and JSONL document under PATH for strings that look like API keys, bearer "
        "tokens, private keys or credential headers.",
        [arg("paths", nargs="+", metavar="PATH")],
    ),
    (
        "prune",
        cmd_prune,
        "drop entries the last run never played",
        "Drop the entries the last test run did not use, as recorded in the play store the pytest plugin (or "
        "llmvcr.freshness.playlog.PlayLog) keeps in pytest's cache (.pytest_cache/d/llmvcr). Refuses when no "
        "run recorded it, when a test using it failed, or when the file changed since.",
        [
            arg("cassettes", nargs="+", metavar="PATH", help="cassette files or folders"),
            arg("--dry-run", action="store_true", help="say what would go, change nothing"),
        ],
    ),
    (
        "rehash",
        cmd_rehash,
        "after editing a cassette by hand: check every entry, count them, store edited hashes",
        "Check every entry of each CASSETTE, write the entry count in its header again and store the "
        "request_hash of each request edited by hand (nothing else changes). Run it after removing entries "
        "by hand (a file holding fewer entries than its header counts is refused as truncated) or editing a "
        "prompt (replay then warns no more).",
        [arg("cassettes", nargs="+", metavar="CASSETTE", help="cassette files")],
    ),
    *fresh.COMMANDS,
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

    for name, run, help_text, description, arguments in _COMMANDS:
        command = commands.add_parser(name, help=help_text, description=description)
        for names, kwargs in arguments:
            command.add_argument(*names, **kwargs)
        command.set_defaults(run=run)
    add_migrate_parser(commands)
    add_serve_parser(commands)
    add_mcp_parser(commands)
    add_view_parser(commands)
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
