"""mkdocs hooks: the command's reference is generated from its argparse parser, and the runner's settings
on a code fence (```python test="pytest") are left out of the page.

`mkdocs.yml` names this file under `hooks:`; `tests/test_docs.py` checks the generated reference.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from llmvcr.cli import build_parser

CLI_MARKER = "<!-- generated: the llmvcr command's reference -->"
# the settings tests/test_docs_examples.py reads after the language; GitHub reads the first word only
_FENCE_SETTINGS = re.compile(r"^(\s*```python)[ \t]+\S.*$", re.M)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Drop the runner's fence settings; fill the CLI page's marker with the parser's reference."""
    markdown = _FENCE_SETTINGS.sub(r"\1", markdown)
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_reference(build_parser()))
    return markdown


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
