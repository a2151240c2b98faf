"""``llmvcr view PATH... [-o report.html] [--open] [--max-age 30d]``."""

from __future__ import annotations

import argparse
import os
import pathlib
import webbrowser
from typing import TextIO

from ..cassette.age import parse_age
from ..errors import CommandError
from .pages import write_view


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
