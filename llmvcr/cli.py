"""The ``llmvcr`` command: list, show, diff, convert, scan and prune cassettes.

    llmvcr ls [DIR]                       cassettes with entry counts, providers, models, size
    llmvcr show CASSETTE                  the conversation, streams collapsed into text
    llmvcr diff A B                       entry by entry, structurally
    llmvcr convert SRC --to FORMAT -o OUT [--from FORMAT]
    llmvcr scan PATH...                   exit 1 when anything looks like a credential
    llmvcr prune CASSETTE                 drop the entries the last run did not play

Errors are one line on stderr and exit status 2; ``diff``, ``scan`` and ``prune`` exit 1 for
"different", "found" and "nothing to go by".
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

from . import __version__
from .cassette import Cassette, Entry
from .convert import JSON, read_call, stream_finished
from .diff import shorten_pair, structural_diff
from .errors import CassetteFormatError, LLMVCRError
from .redact import find_secrets
from .session import resolve_path
from .storage import atomic_write, document_of, dump_document, file_lock, load_cassette, parse_document

SOURCES = ("llmvcr", "vcrpy", "regista", "agentskit")
TARGETS = ("regista", "agentskit", "llmvcr-json", "llmvcr-yaml")
_SUFFIXES = (".yaml", ".yml", ".json")


# -- reading any supported format -----------------------------------------------------------------
def sniff(path: str) -> str:
    """The format of a file: ``regista`` (.jsonl), ``vcrpy`` (interactions), ``agentskit`` (chunks), else ``llmvcr``."""
    if path.lower().endswith(".jsonl"):
        return "regista"
    from .convert.vcrpy import read_document

    try:
        document = read_document(path)
    except CassetteFormatError:
        return "llmvcr"  # unreadable: let the llmvcr loader say precisely why
    if isinstance(document, dict) and "interactions" in document:
        return "vcrpy"
    entries = document.get("entries") if isinstance(document, dict) else None
    if isinstance(entries, list) and entries and isinstance(entries[0], dict) and "chunks" in entries[0]:
        return "agentskit"
    return "llmvcr"


def load_any(path: str, fmt: str | None = None) -> Cassette:
    """A cassette from a file of any supported format (sniffed when ``fmt`` is None)."""
    fmt = fmt or sniff(path)
    if fmt == "vcrpy":
        from .convert.vcrpy import from_vcrpy

        cassette = from_vcrpy(path)
    elif fmt == "regista":
        from .convert.regista import from_regista_trace

        cassette = from_regista_trace(path)
    elif fmt == "agentskit":
        from .convert.agentskit import from_agentskit

        cassette = from_agentskit(path)
    else:
        return load_cassette(path)
    cassette.path = path
    return cassette


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB"):
        if n < 1024 or unit == "MB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"


def _models(cassette: Cassette) -> list[str]:
    models = (e.request.body.get("model") for e in cassette.entries if isinstance(e.request.body, dict))
    return sorted({str(m) for m in models if m})


# -- commands ---------------------------------------------------------------------------------------
def cmd_ls(args: argparse.Namespace, out: TextIO) -> int:
    root = args.dir
    if not os.path.isdir(root):
        raise FileNotFoundError(f"{root}: no such directory")
    rows: list[tuple[str, str, str, str, str]] = []
    skipped: list[str] = []
    for directory, _, files in sorted(os.walk(root)):
        for name in sorted(files):
            if not name.lower().endswith(_SUFFIXES):
                continue
            path = os.path.join(directory, name)
            try:
                cassette = load_cassette(path)
                providers = ", ".join(sorted({e.provider for e in cassette.entries})) or "-"
            except LLMVCRError as err:
                skipped.append(f"{path}: {err}")
                continue
            rows.append((os.path.relpath(path, root), str(len(cassette)), providers,
                         ", ".join(_models(cassette)) or "-", _size(os.path.getsize(path))))
    if not rows:
        print(f"no llmvcr cassettes under {root}", file=out)
    else:
        header = ("cassette", "entries", "providers", "models", "size")
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(5)]
        for row in [header, *rows]:
            print("  ".join(cell.ljust(w) if i != 1 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))).rstrip(),
                  file=out)
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
        return [f"{arrow}{role} calls {block['name']} {json.dumps(block['input'], ensure_ascii=False)} [{block['id']}]"]
    flag = " (error)" if block.get("is_error") else ""
    return [_indent(block["content"], f"{arrow}tool result [{block['tool_use_id']}]{flag}: ")]


def show_lines(cassette: Cassette) -> Iterator[str]:
    """The cassette as a readable conversation: only what each call adds to the one before it."""
    seed = f", seed {cassette.seed!r}" if cassette.seed is not None else ""
    yield f"{cassette.path or '(in memory)'}: {len(cassette)} entries{seed}"
    history: list[JSON] = []
    system = None
    for position, entry in enumerate(cassette.entries):
        call = read_call(entry, position)
        body = entry.request.body if isinstance(entry.request.body, dict) else {}
        streamed = ", streamed" if entry.response.stream is not None else ""
        truncated = ", truncated" if entry.response.truncated and not stream_finished(entry.response.stream or []) else ""
        yield ""
        yield (f"[{position}] {entry.provider} {entry.request.method} {entry.request.path}"
               f" · {body.get('model', '-')} · {entry.response.status}{streamed}{truncated}")
        if call is None:
            summary = json.dumps(body.get("input", body), ensure_ascii=False)
            yield f"    request: {summary[:200]}" + ("…" if len(summary) > 200 else "")
            continue
        messages = call.request["messages"]
        fresh = messages[len(history):] if messages[: len(history)] == history and history else messages
        if call.request["system"] and (call.request["system"] != system or fresh is messages):
            yield _indent(call.request["system"], "    system: ")
        system = call.request["system"]
        for message in fresh:
            for block in message["content"]:
                yield from _block_lines(message["role"], block, "    ")
        if call.response is None:
            yield f"  → error: {call.error}"
            history = []
            continue
        for block in call.response["message"]["content"]:
            yield from _block_lines("assistant", block, "  → ")
        u = call.response["usage"]
        yield f"    ({call.response['stop_reason']}; {u['input_tokens']} in, {u['output_tokens']} out)"
        history = messages + [call.response["message"]]


def cmd_show(args: argparse.Namespace, out: TextIO) -> int:
    for line in show_lines(load_any(resolve_path(args.cassette), args.from_format)):
        print(line, file=out)
    return 0


def _tree(entry: Entry) -> JSON:
    res = entry.response
    response: JSON = {"status": res.status, "headers": dict(res.headers)}
    if res.stream is not None:  # arrival offsets always differ between two recordings
        response["stream"] = [{k: v for k, v in event.items() if k != "t"} for event in res.stream]
    else:
        response["body"] = res.body
    response.update({"truncated": res.truncated, "failure": res.failure})
    return {"provider": entry.provider, "request": entry.request.normalised(), "response": response}


def _show_value(value: Any) -> str:
    return "(absent)" if value == "<missing>" else repr(value)


def cmd_diff(args: argparse.Namespace, out: TextIO) -> int:
    a = load_any(resolve_path(args.a), args.from_format)
    b = load_any(resolve_path(args.b), args.from_format)
    print(f"A: {a.path} ({len(a)} entries)\nB: {b.path} ({len(b)} entries)", file=out)
    differ = False
    for i in range(max(len(a), len(b))):
        if i >= len(a) or i >= len(b):
            side, entry = ("B", b.entry(i)) if i >= len(a) else ("A", a.entry(i))
            print(f"[{i}] only in {side}: {entry.provider} {entry.request.method} {entry.request.path}", file=out)
            differ = True
            continue
        rows = structural_diff(_tree(a.entry(i)), _tree(b.entry(i)), prefix=f"[{i}]")
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


def cmd_convert(args: argparse.Namespace, out: TextIO) -> int:
    cassette = load_any(args.src, args.from_format)
    target = args.output
    if args.to == "regista":
        from .convert.regista import to_regista_trace

        target = to_regista_trace(cassette, target)
    elif args.to == "agentskit":
        from .convert.agentskit import to_agentskit

        target = to_agentskit(cassette, target)
    else:
        fmt = args.to.removeprefix("llmvcr-")
        wanted = (".json",) if fmt == "json" else (".yaml", ".yml")
        if not target.lower().endswith(wanted):
            raise CassetteFormatError(target, f"{args.to} output needs a {' or '.join(wanted)} path "
                                      "(llmvcr reads a cassette by its extension)")
        with file_lock(target):
            atomic_write(target, dump_document(document_of(cassette), fmt))
    print(f"wrote {target} ({args.to}, {len(cassette)} entries from {args.src})", file=out)
    return 0


def _documents(path: str) -> Iterator[Any]:
    """Every document a file holds, as plain data; the raw text when it does not parse."""
    with open(path, "rb") as f:
        data = f.read()
    text = data.decode("utf-8", "replace")
    try:
        if path.lower().endswith(".jsonl"):
            yield from (json.loads(line) for line in text.splitlines() if line.strip())
        elif path.lower().endswith(".json"):
            yield json.loads(text)
        else:
            import yaml

            from .convert.vcrpy import VcrLoader

            yield yaml.load(data, Loader=VcrLoader)  # VcrLoader is a SafeLoader
    except ValueError:
        yield text
    except Exception:  # noqa: BLE001 - any YAML error: scan the text itself
        yield text


def _files(paths: Sequence[str]) -> Iterator[str]:
    for path in paths:
        if os.path.isdir(path):
            for directory, _, files in sorted(os.walk(path)):
                yield from (os.path.join(directory, n) for n in sorted(files) if n.lower().endswith((*_SUFFIXES, ".jsonl")))
        elif os.path.exists(path):
            yield path
        else:
            raise FileNotFoundError(f"{path}: no such file or directory")


def cmd_scan(args: argparse.Namespace, out: TextIO) -> int:
    found = 0
    scanned = 0
    for path in _files(args.paths):
        scanned += 1
        for number, document in enumerate(_documents(path)):
            where = f"{path}:{number + 1}" if path.lower().endswith(".jsonl") else path
            for tree_path, kind, excerpt in find_secrets(document):
                print(f"{where}: {tree_path.lstrip('.') or '(text)'}: {kind} ({excerpt})", file=out)
                found += 1
    print(f"{found} possible secret(s) in {scanned} file(s)" if found else f"no secrets found in {scanned} file(s)",
          file=out if not found else sys.stderr)
    return 1 if found else 0


def cmd_prune(args: argparse.Namespace, out: TextIO) -> int:
    path = resolve_path(args.cassette)
    with open(path, "rb") as f:
        document = parse_document(f.read(), path)
    entries = document.get("entries") or []
    played = ((document.get("metadata") or {}).get("last_run") or {}).get("played")
    if not isinstance(played, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in played):
        print(f"{path}: no metadata.last_run.played list of entry indexes, so nothing says which entries the last "
              "run used; run the tests with the cassette first", file=sys.stderr)
        return 1
    keep = sorted({i for i in played if 0 <= i < len(entries)})
    dropped = len(entries) - len(keep)
    if not args.dry_run and dropped:
        document["entries"] = [entries[i] for i in keep]
        document["metadata"]["last_run"]["played"] = list(range(len(keep)))
        with file_lock(path):
            atomic_write(path, dump_document(document, "json" if path.lower().endswith(".json") else "yaml"))
    verb = "would drop" if args.dry_run else "dropped"
    print(f"{path}: kept {len(keep)} of {len(entries)} entries, {verb} {dropped}", file=out)
    return 0


# -- the parser -------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="llmvcr", description="Inspect, compare, convert and clean llmvcr cassettes.")
    parser.add_argument("--version", action="version", version=f"llmvcr {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    ls = commands.add_parser("ls", help="list cassettes with entry counts, providers, models and size",
                             description="List the llmvcr cassettes under DIR (recursively).")
    ls.add_argument("dir", nargs="?", default="cassettes", metavar="DIR", help="folder to list (default: cassettes)")
    ls.set_defaults(run=cmd_ls)

    show = commands.add_parser("show", help="print a cassette as a readable conversation",
                               description="Print each call's new messages and the answer (streams collapsed into "
                                           "text, tool calls and results inline). Reads llmvcr, vcrpy, regista and "
                                           "agentskit files.")
    show.add_argument("cassette", metavar="CASSETTE", help="a path, or a name under cassettes/")
    show.add_argument("--from", dest="from_format", choices=SOURCES, help="input format (default: detected)")
    show.set_defaults(run=cmd_show)

    diff = commands.add_parser("diff", help="compare two cassettes entry by entry",
                               description="Structural diff of two cassettes, entry by entry (stream timings "
                                           "ignored). Exit 1 when they differ.")
    diff.add_argument("a", metavar="A")
    diff.add_argument("b", metavar="B")
    diff.add_argument("--from", dest="from_format", choices=SOURCES, help="input format (default: detected)")
    diff.add_argument("--limit", type=int, default=20, help="differing paths shown per entry (default 20)")
    diff.set_defaults(run=cmd_diff)

    convert = commands.add_parser("convert", help="convert between llmvcr, regista, agentskit and vcrpy",
                                  description="Convert SRC (llmvcr, vcrpy, regista or agentskit, detected unless "
                                              "--from says) to a regista trace, an agentskit cassette or an "
                                              "llmvcr cassette.")
    convert.add_argument("src", metavar="SRC")
    convert.add_argument("--to", required=True, choices=TARGETS, help="output format")
    convert.add_argument("-o", "--output", required=True, metavar="OUT", help="output file")
    convert.add_argument("--from", dest="from_format", choices=SOURCES, help="input format (default: detected)")
    convert.set_defaults(run=cmd_convert)

    scan = commands.add_parser("scan", help="look for credentials in cassettes; exit 1 if any",
                               description="Scan every YAML, JSON and JSONL document under PATH for strings that "
                                           "look like API keys, bearer tokens, private keys or credential headers.")
    scan.add_argument("paths", nargs="+", metavar="PATH")
    scan.set_defaults(run=cmd_scan)

    prune = commands.add_parser("prune", help="drop entries the last run never played",
                                description="Keep only the entries listed in metadata.last_run.played; exit 1 "
                                            "when the cassette has no such record.")
    prune.add_argument("cassette", metavar="CASSETTE")
    prune.add_argument("--dry-run", action="store_true", help="say what would go, change nothing")
    prune.set_defaults(run=cmd_prune)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (``python -m llmvcr`` and the ``llmvcr`` script)."""
    args = build_parser().parse_args(argv)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            status: int = args.run(args, sys.stdout)
        for warning in caught:
            print(f"llmvcr: warning: {warning.message}", file=sys.stderr)
        return status
    except (LLMVCRError, OSError) as err:
        print(f"llmvcr: error: {' '.join(str(err).split())}", file=sys.stderr)  # one line, always
        return 2
    except KeyboardInterrupt:
        return 130
