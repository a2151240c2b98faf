"""``llmvcr view PATH... [-o report.html] [--open] [--max-age 30d]``."""

from __future__ import annotations

import argparse
import os
import pathlib
import webbrowser
from typing import Any, TextIO

from ..cassette.age import parse_age
from ..errors import CommandError
from .pages import DEFAULT_OUTPUT, write_view


def add_parser(commands: Any) -> None:
    """The ``view`` command, added to the ``llmvcr`` command's subparsers."""
    view = commands.add_parser(
        "view",
        help="write one self-contained HTML page of cassettes (a timeline, conversations, costs)",
        description="Write one HTML file with everything inside (no network, no server) for the "
        "cassettes at PATH: files or folders, in any format llmvcr reads. It shows a timeline of the "
        "calls with stream events at their arrival offsets and a player, each call as a conversation "
        "with its raw request and response, tokens and list-price dollars, age and expiry, and the "
        "entries the last test run did not play. Several cassettes get an index with a filter.",
    )
    view.add_argument("paths", nargs="+", metavar="PATH", help="cassette files or folders of them")
    view.add_argument(
        "-o", "--output", default=DEFAULT_OUTPUT, metavar="FILE", help=f"the page (default: {DEFAULT_OUTPUT})"
    )
    view.add_argument("--open", action="store_true", help="open the page in the default browser")
    view.add_argument(
        "--max-age", metavar="AGE", help="mark cassettes recorded longer ago than AGE expired ('30d', '12h')"
    )
    view.set_defaults(run=cmd_view)


def cmd_view(args: argparse.Namespace, out: TextIO) -> int:
    try:
        max_age = parse_age(args.max_age) if args.max_age else None
    except ValueError as err:
        raise CommandError(f"--max-age: {err}") from None
    if os.path.isdir(args.output):
        raise CommandError(f"{args.output} is a folder; -o names the page to write (-o report.html)")
    path = write_view(args.paths, args.output, max_age=max_age)
    size = os.path.getsize(path)
    print(f"wrote {path} ({size / 1024:.1f} KB)", file=out)
    if args.open:
        webbrowser.open(pathlib.Path(path).resolve().as_uri())
    return 0
