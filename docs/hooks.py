"""mkdocs hooks: the runner's settings on a code fence (```python test="pytest") are left out of the
page. Also the writer of the command's reference in `docs/cli.md`, generated from the command's own
table (`llmvcr.cli`), so the page reads the same on GitHub and in the site:

    python docs/hooks.py        # after adding or changing a command

`mkdocs.yml` names this file under `hooks:`; `tests/test_docs.py` fails when the page and the table differ.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from llmvcr.cli import build_parser

CLI_PAGE = Path(__file__).resolve().parent / "cli.md"
CLI_BEGIN = "<!-- generated from the llmvcr command's table by `python docs/hooks.py`; do not edit -->"
CLI_END = "<!-- end of the generated reference -->"
# the settings tests/test_docs_examples.py reads after the language; GitHub reads the first word only
_FENCE_SETTINGS = re.compile(r"^(\s*```python)[ \t]+\S.*$", re.M)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Drop the runner's fence settings."""
    return _FENCE_SETTINGS.sub(r"\1", markdown)


def with_reference(page: str) -> str:
    """The CLI page with the reference between its markers written again from the parser."""
    head, begin, rest = page.partition(CLI_BEGIN)
    _, end, tail = rest.partition(CLI_END)
    if not (begin and end):
        raise ValueError(f"{CLI_PAGE.name} has lost its markers: {CLI_BEGIN} ... {CLI_END}")
    return f"{head}{CLI_BEGIN}\n\n{cli_reference(build_parser())}\n{CLI_END}{tail}"


def cli_reference(parser: argparse.ArgumentParser) -> str:
    """Markdown for the command and each subcommand: what it does, its usage, and every argument."""
    out = [_command(parser, parser.prog)]
    for name, sub in _subcommands(parser).items():
        out.append(_command(sub, f"{parser.prog} {name}", level=3))
    return "\n".join(out)


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _command(parser: argparse.ArgumentParser, title: str, level: int = 2) -> str:
    usage = " ".join(parser.format_usage().removeprefix("usage: ").split())
    lines = [f"{'#' * level} `{title}`", ""]
    if parser.description:
        lines += [" ".join(parser.description.split()), ""]
    lines += ["```text", usage, "```", ""]
    rows = [_row(a) for a in parser._actions if not isinstance(a, argparse._SubParsersAction)]
    if rows:
        lines += ["| argument | meaning |", "| --- | --- |", *rows, ""]
    if parser.epilog:
        lines += [" ".join(parser.epilog.split()), ""]
    return "\n".join(lines)


def _row(action: argparse.Action) -> str:
    if action.option_strings:
        name = ", ".join(action.option_strings)
        if action.nargs != 0:  # a value follows; its choices are listed in the meaning
            name += f" {action.metavar or ('VALUE' if action.choices else action.dest.upper())}"
    else:
        name = str(action.metavar or action.dest)
    meaning = " ".join((action.help or "").split())
    if action.choices is not None and not isinstance(action.choices, dict):
        meaning += f" (one of: {', '.join(f'`{c}`' for c in action.choices)})"
    return f"| `{name}` | {_cell(meaning)} |"


def _cell(text: str) -> str:
    """A table cell: a pipe would end it early."""
    return text.replace("|", "\\|")


if __name__ == "__main__":
    page = CLI_PAGE.read_text(encoding="utf-8")
    written = with_reference(page)
    if written != page:
        CLI_PAGE.write_text(written, encoding="utf-8")
    sys.stdout.write(f"{CLI_PAGE.name}: {'written' if written != page else 'already current'}\n")
