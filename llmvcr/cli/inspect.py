"""``llmvcr ls``, ``show`` and ``diff``: looking at cassettes."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from ..cassette import Cassette, Entry
from ..convert import JSON, Call, api_stop_reason, read_call
from ..convert.tool_calls import asked_by, tool_call_of, tool_lines
from ..errors import CommandError, LLMVCRError
from ..matching.diff import shorten_pair, structural_diff
from ..storage.files import load_cassette
from ..storage.formats import OWN, in_place
from ..view import write_diff
from ..view.compare import entry_tree
from ..wire import error_message, lookup, model_of, stream_finished
from ..wire import mcp as mcp_wire
from .reading import SUFFIXES, cassette_folders, entries, existing, load_any, models, size, sniff


# -- commands ---------------------------------------------------------------------------------------
def listed(name: str, suffixes: tuple[str, ...]) -> bool:
    return name.lower().endswith(suffixes) and not name.startswith((".llmvcr-plays.json", ".llmvcr-tmp-"))


def files_under(paths: Sequence[str], suffixes: tuple[str, ...]) -> Iterator[str]:
    """Each path given, and the files ending in ``suffixes`` in each folder given, in order."""
    for path in paths:
        if os.path.isdir(path):
            for directory, _, files in sorted(os.walk(path)):
                yield from (os.path.join(directory, n) for n in sorted(files) if listed(n, suffixes))
        elif os.path.exists(path):
            yield path
        else:
            raise CommandError(f"{path}: no such file or folder; check the path")


def cmd_ls(args: argparse.Namespace, out: TextIO) -> int:
    if args.dir is None and not os.path.isdir("cassettes"):
        # as the pytest plugin keeps them: a 'cassettes' folder beside each test file
        roots = cassette_folders()
        if not roots:
            raise CommandError(
                "no 'cassettes' folder here or below; name the folder that holds the cassettes "
                "(llmvcr ls tests/cassettes)"
            )
        return _list(roots, ".", out)
    root = args.dir or "cassettes"
    if os.path.isfile(root):
        raise CommandError(f"{root} is a file; llmvcr ls lists a folder (llmvcr show {root} prints this one)")
    if not os.path.isdir(root):
        raise CommandError(
            f"{root}: no such folder; name the folder that holds the cassettes (llmvcr ls tests/cassettes)"
        )
    return _list([root], root, out)


def _list(roots: list[str], base: str, out: TextIO) -> int:
    """One table of the cassettes under ``roots``, named relative to ``base``."""
    rows: list[tuple[str, str, str, str, str]] = []
    skipped: list[str] = []
    for directory, _, files in sorted(w for root in roots for w in os.walk(root)):
        for name in sorted(files):
            if not listed(name, SUFFIXES):
                continue
            path = os.path.join(directory, name)
            fmt = sniff(path)
            try:
                cassette = load_any(path, fmt) if fmt in in_place() else load_cassette(path)
                providers = ", ".join(sorted({e.provider for e in cassette.entries})) or "-"
            except LLMVCRError as err:
                if fmt not in in_place() and fmt != OWN:
                    kind = f"{'an' if fmt[:1] in 'aeiou' else 'a'} {fmt} cassette"
                    skipped.append(
                        f"{path}: {kind} (llmvcr convert {path} --to llmvcr-yaml -o OUT imports it)"
                    )
                else:
                    skipped.append(str(err))  # names the file, the interaction and what to do
                continue
            # another recorder's cassette is listed for what llmvcr replays from it, and named
            kind = f" ({fmt}, read in place)" if fmt in in_place() else ""
            rows.append(
                (
                    os.path.relpath(path, base) + kind,
                    str(len(cassette)),
                    providers,
                    ", ".join(models(cassette)) or "-",
                    size(os.path.getsize(path)),
                )
            )
    if not rows:
        print(f"no llmvcr cassettes under {', '.join(roots)}", file=out)
    else:
        header = ("cassette", "entries", "providers", "models", "size")
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(5)]
        for row in [header, *rows]:
            print(
                "  ".join(
                    cell.ljust(w) if i != 1 else cell.rjust(w)
                    for i, (cell, w) in enumerate(zip(row, widths, strict=False))
                ).rstrip(),
                file=out,
            )
    for line in skipped:
        print(f"skipped {line}", file=sys.stderr)
    return 0


def _indent(text: str, prefix: str) -> str:
    lines = text.split("\n") or [""]
    return prefix + ("\n" + " " * len(prefix)).join(lines)


def _block_lines(role: str, block: JSON, arrow: str) -> list[str]:
    kind = block["type"]
    if kind == "text":
        return [_indent(block["text"], f"{arrow}{role}: ")]
    if kind == "thinking":
        return [_indent(block["thinking"], f"{arrow}{role} (thinking): ")]
    if kind == "tool_use":
        return [
            f"{arrow}{role} calls {block['name']} "
            f"{json.dumps(block['input'], ensure_ascii=False)} [{block['id']}]"
        ]
    flag = " (error)" if block.get("is_error") else ""
    return [_indent(block["content"], f"{arrow}tool result [{block['tool_use_id']}]{flag}: ")]


def _heading(position: int, entry: Entry) -> str:
    """An entry's first line: where it went, the model, the status, and whether it streamed or was cut."""
    res = entry.response
    wire_format = lookup(entry.provider)
    streams = wire_format.answers_with_stream(res) if wire_format else res.stream is not None
    streamed = ", streamed" if streams else ""
    cut = res.truncated and not stream_finished(res.stream or [], entry.provider)
    truncated = ", truncated" if cut else ""
    return (
        f"[{position}] {entry.provider} {entry.request.method} {entry.request.path}"
        f" · {model_of(entry.provider, entry.request) or '-'} · {res.status}{streamed}{truncated}"
    )


def _other_lines(entry: Entry) -> Iterator[str]:
    """An entry that is not a model call (embeddings, token counts): its request, and its error."""
    body = entry.request.body if isinstance(entry.request.body, dict) else {}
    res = entry.response
    summary = json.dumps(body.get("input", body), ensure_ascii=False)
    yield f"    request: {summary[:200]}" + ("…" if len(summary) > 200 else "")
    error = error_message(entry.provider, res.body) if res.status >= 400 else None
    if error is not None:
        yield f"  → error: {error}"


@dataclass
class _Conversation:
    """The conversation so far (empty after a failed call) and its system prompt: a call shows only
    what it adds to them."""

    history: list[JSON] = field(default_factory=list)
    system: str | None = None

    def lines(self, call: Call) -> Iterator[str]:
        messages = call.request["messages"]
        history = self.history
        fresh = messages[len(history) :] if messages[: len(history)] == history and history else messages
        if call.request["system"] and (call.request["system"] != self.system or fresh is messages):
            yield _indent(call.request["system"], "    system: ")
        self.system = call.request["system"]
        for message in fresh:
            for block in message["content"]:
                yield from _block_lines(message["role"], block, "    ")
        if call.response is None:
            yield f"  → error: {call.error}"
            self.history = []
            return
        for block in call.response["message"]["content"]:
            yield from _block_lines("assistant", block, "  → ")
        u = call.response["usage"]
        reason = api_stop_reason(call.api, call.response["stop_reason"])  # "stop", not "end_turn"
        yield f"    ({reason}; {u['input_tokens']} in, {u['output_tokens']} out)"
        self.history = [*messages, call.response["message"]]


def show_lines(cassette: Cassette, fmt: str = "llmvcr") -> Iterator[str]:
    """The cassette as a readable conversation: only what each call adds to the one before it."""
    seed = f", seed {cassette.seed!r}" if cassette.seed is not None else ""
    kind = "" if fmt == "llmvcr" else f" (a {fmt} cassette, shown as llmvcr replays it)"
    yield f"{cassette.path or '(in memory)'}: {entries(len(cassette))}{seed}{kind}"
    conversation = _Conversation()
    every = cassette.entries
    asked = asked_by(every)
    for position, entry in enumerate(every):
        yield ""
        if mcp_wire.is_mcp(entry):
            yield from _mcp_lines(position, entry)
            continue
        tool = tool_call_of(entry)
        if tool is not None:
            yield f"[{position}] tool {tool.name} · {entry.response.status}"
            yield from tool_lines(tool, asked.get(position))
            continue
        call = read_call(entry, position)
        yield _heading(position, entry)
        yield from _other_lines(entry) if call is None else conversation.lines(call)


def _mcp_lines(position: int, entry: Entry) -> Iterator[str]:
    """An MCP request on the timeline: the server, the method (a tool's name), the params, the answer."""
    req, res = entry.request, entry.response
    body = req.body if isinstance(req.body, dict) else {}
    tool = f" {body['name']}" if req.method == "tools/call" and "name" in body else ""
    yield f"[{position}] mcp {req.method}{tool} · {req.path} · {res.status}"
    shown = body.get("arguments", body) if tool else body
    if shown:
        text = json.dumps(shown, ensure_ascii=False)
        yield f"    params: {text[:200]}" + ("…" if len(text) > 200 else "")
    answer = res.body if isinstance(res.body, dict) else {}
    if "error" in answer:
        yield f"  → error: {(answer['error'] or {}).get('message')}"
    else:
        result = answer.get("result")
        content = result.get("content") if isinstance(result, dict) else None
        texts = [c.get("text") for c in content or [] if isinstance(c, dict) and c.get("type") == "text"]
        text = " ".join(t for t in texts if t) if texts else json.dumps(result, ensure_ascii=False)
        yield f"  → {text[:200]}" + ("…" if len(text) > 200 else "")
    if res.stream:
        yield f"    ({len(res.stream)} messages while in flight)"


def cmd_show(args: argparse.Namespace, out: TextIO) -> int:
    path = existing(args.cassette)
    fmt = args.from_format or sniff(path)
    for line in show_lines(load_any(path, fmt), fmt):
        print(line, file=out)
    return 0


def _show_value(value: Any) -> str:
    return "(absent)" if value == "<missing>" else repr(value)


def cmd_diff(args: argparse.Namespace, out: TextIO) -> int:
    a = load_any(existing(args.a), args.from_format)
    b = load_any(existing(args.b), args.from_format)
    print(f"A: {a.path} ({entries(len(a))})\nB: {b.path} ({entries(len(b))})", file=out)
    if args.html:
        print(f"wrote {write_diff(a, b, args.html)}", file=out)
    differ = False
    for i in range(max(len(a), len(b))):
        if i >= len(a) or i >= len(b):
            side, entry = ("B", b.entry(i)) if i >= len(a) else ("A", a.entry(i))
            print(
                f"[{i}] only in {side}: {entry.provider} {entry.request.method} {entry.request.path}",
                file=out,
            )
            differ = True
            continue
        rows = structural_diff(entry_tree(a.entry(i)), entry_tree(b.entry(i)), prefix=f"[{i}]")
        if not rows:
            print(f"[{i}] same", file=out)
            continue
        differ = True
        print(f"[{i}] differs at {len(rows)} path(s):", file=out)
        for path, left, right in rows[: args.limit]:
            if isinstance(left, str) and isinstance(right, str) and "<missing>" not in (left, right):
                left, right = shorten_pair(left, right)
            print(f"    {path}: A {_show_value(left)} != B {_show_value(right)}", file=out)
        if len(rows) > args.limit:
            print(f"    … and {len(rows) - args.limit} more", file=out)
    return 1 if differ else 0
