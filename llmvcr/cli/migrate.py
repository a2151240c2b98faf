"""``llmvcr migrate [PATH]``: move a pytest-recording suite's LLM tests onto llmvcr's marker.

What it rewrites, in each test module and conftest under PATH:

- ``@pytest.mark.vcr`` (with or without options) and ``pytestmark = pytest.mark.vcr`` become
  ``llmvcr`` (the plugin reads vcrpy's options from the marker);
- a ``vcr_config`` fixture becomes ``llmvcr_config`` (the plugin reads vcrpy's keys in it), and so does
  every fixture or test that asks for it;
- a test's ``vcr`` argument becomes ``llmvcr_cassette`` (``vcr.play_count`` its sum of ``play_counts``);
- ``--record-mode`` and ``--block-network`` in pytest's ``addopts`` get their llmvcr flags.

What it leaves on pytest-recording, and says why: a test whose cassette holds calls to other hosts
(vcrpy answers those), a marker naming extra cassette files. The cassettes stay where they are: the
plugin reads them in place. Nothing is written without ``--write``; first comes the diff.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import glob
import os
import re
import warnings
from dataclasses import dataclass, field
from typing import TextIO

from ..convert.vcrpy import NoLLMCallsError, from_vcrpy
from ..errors import CommandError, LLMVCRError
from ..storage.formats import by_name
from ..storage.sniff import foreign_format
from ..wording import plural
from .files import LLMVCR_TARGETS, write_as

CONFIG_FILES = ("pytest.ini", "setup.cfg", "tox.ini", "pyproject.toml")
_SKIP_DIRS = frozenset({".git", ".venv", "venv", "node_modules", "__pycache__", ".tox", "cassettes"})


@dataclass
class Plan:
    """What a migration changes and what it leaves, file by file."""

    new_text: dict[str, str] = field(default_factory=dict)  # path -> rewritten text
    done: list[str] = field(default_factory=list)  # one line per change
    left: list[str] = field(default_factory=list)  # one line per thing left on pytest-recording
    cassettes: set[str] = field(default_factory=set)  # the migrated tests' pytest-recording files
    kept: set[str] = field(default_factory=set)  # the files of tests left on pytest-recording


@dataclass(frozen=True)
class _Edit:
    line: int  # 1-based
    start: int  # byte offsets in the line
    end: int
    text: str


def _is_vcr_mark(node: ast.AST, name: str = "vcr") -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    return (
        isinstance(target, ast.Attribute)
        and target.attr == name
        and isinstance(target.value, ast.Attribute)
        and target.value.attr == "mark"
    )


def _mark_edit(node: ast.AST) -> _Edit:
    target = node.func if isinstance(node, ast.Call) else node
    assert (
        isinstance(target, ast.Attribute)
        and target.end_lineno is not None
        and target.end_col_offset is not None
    )
    return _Edit(target.end_lineno, target.end_col_offset - len("vcr"), target.end_col_offset, "llmvcr")


def _cassettes_of(test_file: str, name: str, cls: str | None) -> list[str]:
    """pytest-recording's files for a test (its default folder and name, parametrised ids too)."""
    module = os.path.splitext(os.path.basename(test_file))[0]
    folder = os.path.join(os.path.dirname(test_file), "cassettes", module)
    stem = glob.escape(f"{cls}.{name}" if cls else name)
    found = glob.glob(os.path.join(glob.escape(folder), stem + ".*")) + glob.glob(
        os.path.join(glob.escape(folder), stem + "[[]*].*")
    )
    return sorted(found)


def _needs_vcrpy(path: str) -> str | None:
    """Why a cassette must stay with vcrpy (it answers calls to other hosts), or None."""
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            from_vcrpy(path)
    except NoLLMCallsError:
        return f"{path} holds no LLM call"
    except LLMVCRError as err:
        return f"{path} cannot be read by llmvcr ({' '.join(str(err).split())[:160]})"
    others = [str(w.message) for w in caught if "left out" in str(w.message)]
    return f"{path} also holds calls to other hosts, which vcrpy answers" if others else None


class _Module:
    """One Python file's rewrite."""

    def __init__(self, path: str, text: str, plan: Plan) -> None:
        self.path, self.text, self.plan = path, text, plan
        self.tree = ast.parse(text, path)
        self.edits: list[_Edit] = []

    def _where(self, node: ast.AST) -> str:
        return f"{os.path.relpath(self.path)}:{getattr(node, 'lineno', 0)}"

    def _tests(self, body: list[ast.stmt], cls: str | None) -> list[tuple[str, str | None]]:
        out: list[tuple[str, str | None]] = []
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
                out.append((node.name, cls))
            elif isinstance(node, ast.ClassDef):
                out += self._tests(node.body, node.name)
        return out

    def _why_left(self, tests: list[tuple[str, str | None]], mark: ast.AST) -> str | None:
        if isinstance(mark, ast.Call) and mark.args:
            return "its marker names extra cassette files, which llmvcr does not combine"
        for name, cls in tests:
            for cassette in _cassettes_of(self.path, name, cls):
                why = _needs_vcrpy(cassette)
                if why is not None:
                    return why
        return None

    def _marks(self, decorators: list[ast.expr], tests: list[tuple[str, str | None]], what: str) -> None:
        for mark in decorators:
            if _is_vcr_mark(mark, "llmvcr"):  # migrated before: its files are the migrated tests' too
                self.plan.cassettes.update(
                    c for name, cls in tests for c in _cassettes_of(self.path, name, cls)
                )
            if not _is_vcr_mark(mark):
                continue
            why = self._why_left(tests, mark)
            files = {c for name, cls in tests for c in _cassettes_of(self.path, name, cls)}
            (self.plan.cassettes if why is None else self.plan.kept).update(files)
            if why is None:
                self.edits.append(_mark_edit(mark))
                self.plan.done.append(f"{self._where(mark)}: {what}: @pytest.mark.vcr -> @pytest.mark.llmvcr")
            else:
                self.plan.left.append(f"{self._where(mark)}: {what} stays on pytest-recording: {why}")

    def visit(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.ClassDef):
                self._marks(node.decorator_list, self._tests(node.body, node.name), f"class {node.name}")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                cls = self._class_of(node)
                self._marks(node.decorator_list, [(node.name, cls)], node.name)
                self._fixtures(node)
        for node in self.tree.body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
            ):
                marks = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
                self._marks(list(marks), self._tests(self.tree.body, None), "pytestmark")

    def _class_of(self, fn: ast.AST) -> str | None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.ClassDef) and fn in node.body:
                return node.name
        return None

    def _rename(self, node: ast.AST, new: str) -> None:
        assert node.end_lineno is not None and node.end_col_offset is not None  # type: ignore[attr-defined]
        line, col = node.lineno, node.col_offset  # type: ignore[attr-defined]
        old = node.arg if isinstance(node, ast.arg) else getattr(node, "id", "")
        self.edits.append(_Edit(line, col, col + len(old), new))

    def _fixtures(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if fn.name == "vcr_config":
            line = self.text.splitlines()[fn.lineno - 1].encode()
            col = line.find(b"vcr_config", fn.col_offset)
            self.edits.append(_Edit(fn.lineno, col, col + len("vcr_config"), "llmvcr_config"))
            self.plan.done.append(f"{self._where(fn)}: fixture vcr_config -> llmvcr_config")
        names = {a.arg: a for a in fn.args.args + fn.args.kwonlyargs}
        renames = {"vcr_config": "llmvcr_config", "vcr": "llmvcr_cassette"}
        for old, new in renames.items():
            if old not in names or (old == "vcr" and not fn.name.startswith("test")):
                continue
            self._rename(names[old], new)
            for node in ast.walk(fn):
                if (
                    old == "vcr"
                    and isinstance(node, ast.Attribute)
                    and node.attr == "play_count"
                    and isinstance(node.value, ast.Name)
                    and node.value.id == "vcr"
                ):
                    assert node.end_col_offset is not None
                    self.edits.append(
                        _Edit(
                            node.lineno,
                            node.col_offset,
                            node.end_col_offset,
                            "sum(llmvcr_cassette.play_counts)",
                        )
                    )
                elif isinstance(node, ast.Name) and node.id == old and not self._inside_play_count(fn, node):
                    self._rename(node, new)
            self.plan.done.append(f"{self._where(fn)}: {fn.name}: argument {old} -> {new}")

    @staticmethod
    def _inside_play_count(fn: ast.AST, name: ast.Name) -> bool:
        return any(
            isinstance(n, ast.Attribute) and n.attr == "play_count" and n.value is name for n in ast.walk(fn)
        )

    def rewritten(self) -> str:
        lines = self.text.splitlines(keepends=True)
        for edit in sorted(set(self.edits), key=lambda e: (e.line, e.start), reverse=True):
            raw = lines[edit.line - 1].encode()
            lines[edit.line - 1] = (raw[: edit.start] + edit.text.encode() + raw[edit.end :]).decode()
        return "".join(lines)


_FLAGS = (("--record-mode", "--llmvcr-record-mode"), ("--block-network", "--llmvcr-block-network"))


def _config(path: str, text: str, plan: Plan, keep_old: bool) -> str:
    """pytest-recording's flags in ``addopts`` get llmvcr's (kept too while tests stay on vcr)."""
    out = []
    for number, line in enumerate(text.splitlines(keepends=True), 1):
        if "addopts" in line:
            for old, new in _FLAGS:
                pattern = re.compile(rf"(?<![\w-]){re.escape(old)}(=\S+)?(?=[\s\"',\]]|$)")
                match = pattern.search(line)
                if match is None:
                    continue
                value = match.group(1) or ""
                if value == "=rewrite":
                    value = "=all"
                replacement = f"{match.group(0)} {new}{value}" if keep_old else f"{new}{value}"
                line = line[: match.start()] + replacement + line[match.end() :]
                plan.done.append(f"{os.path.relpath(path)}:{number}: addopts {old} -> {new}")
        out.append(line)
    return "".join(out)


def plan_migration(root: str) -> Plan:
    """What ``llmvcr migrate root`` would change (nothing is written)."""
    plan = Plan()
    if not os.path.exists(root):
        raise CommandError(f"{root}: no such file or folder")
    files = [root] if os.path.isfile(root) else []
    for directory, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        files += [os.path.join(directory, n) for n in sorted(names)]
    for path in files:
        name = os.path.basename(path)
        if not (name.endswith(".py") and (name.startswith("test") or name == "conftest.py")):
            continue
        with open(path, encoding="utf-8") as f:
            text = f.read()
        if "vcr" not in text:  # "llmvcr" too
            continue
        try:
            module = _Module(path, text, plan)
        except SyntaxError as err:
            plan.left.append(f"{os.path.relpath(path)}: not migrated, it does not parse ({err.msg})")
            continue
        module.visit()
        new = module.rewritten()
        if new != text:
            plan.new_text[path] = new
    keep_old = bool(plan.left)
    for path in files:
        if os.path.basename(path) in CONFIG_FILES:
            with open(path, encoding="utf-8") as f:
                text = f.read()
            new = _config(path, text, plan, keep_old)
            if new != text:
                plan.new_text[path] = new
    return plan


def cmd_migrate(args: argparse.Namespace, out: TextIO) -> int:
    """Print the diff and the report; with ``--write``, apply it."""
    plan = plan_migration(args.path)
    for path, new in sorted(plan.new_text.items()):
        with open(path, encoding="utf-8") as f:
            old = f.read()
        shown = os.path.relpath(path)
        out.writelines(
            difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{shown}", f"b/{shown}")
        )
        if args.write:
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)
    verb = "changed" if args.write else "would change"
    if plan.new_text:
        print(f"\nllmvcr migrate: {verb} {plural(len(plan.new_text), 'file')}:", file=out)
    else:
        print(
            "\nllmvcr migrate: nothing to change (no test left on pytest-recording that llmvcr can take)",
            file=out,
        )
    for line in plan.done:
        print(f"  {line}", file=out)
    if plan.left:
        print(f"left on pytest-recording ({len(plan.left)}; keep it installed for them):", file=out)
        for line in plan.left:
            print(f"  {line}", file=out)
    if args.convert and args.write:
        _convert(plan, out)
    if not args.write and plan.new_text:
        print(f"nothing written; apply it with: llmvcr migrate {args.path} --write", file=out)
    elif plan.new_text and not args.convert:
        print(
            "next: run the suite offline (CI=true pytest); the cassettes are read in place and matched as "
            "pytest-recording matched them. To record with llmvcr, convert the migrated tests' "
            f"cassettes (and only those): llmvcr migrate {args.path} --write --convert",
            file=out,
        )
    return 0


def _convert(plan: Plan, out: TextIO) -> None:
    """The migrated tests' cassettes, converted in place; the files of tests left on pytest-recording
    stay vcrpy's (a folder convert would turn them into files pytest-recording cannot read)."""
    done = 0
    for path in sorted(plan.cassettes - plan.kept):
        with open(path, "rb") as f:
            if foreign_format(f.read(65536)) is None:
                continue  # already llmvcr's
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cassette = from_vcrpy(path)
        to = next(name for name in LLMVCR_TARGETS if path.lower().endswith(by_name(name).suffixes))
        write_as(cassette, path, to)
        done += 1
        for warning in caught:
            print(f"  {os.path.relpath(path)}: {' '.join(str(warning.message).split())}", file=out)
    kept = (
        f"; kept {plural(len(plan.kept), 'cassette')} of tests left on pytest-recording" if plan.kept else ""
    )
    print(f"converted {plural(done, 'cassette')} in place{kept}", file=out)
