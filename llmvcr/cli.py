"""The ``llmvcr`` command: list, show, diff, convert, scan and prune cassettes.

    llmvcr ls [DIR]                       cassettes with entry counts, providers, models, size
    llmvcr show CASSETTE                  the conversation, streams collapsed into text
    llmvcr diff A B                       entry by entry, structurally
    llmvcr convert SRC --to FORMAT -o OUT [--from FORMAT]   SRC may be a folder: every file in it
    llmvcr scan PATH...                   exit 1 when anything looks like a credential
    llmvcr prune CASSETTE                 drop the entries the last run did not play

Errors are one line on stderr (what went wrong, with which file, and what to do) and exit status 2;
``diff`` and ``scan`` exit 1 for "different" and "found".
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import warnings
from collections.abc import Iterator, Sequence
from typing import Any, NoReturn, TextIO

from .cassette import Cassette, Entry
from .convert import JSON, read_call, stream_finished
from .diff import shorten_pair, structural_diff
from .errors import CassetteFormatError, CommandError, LLMVCRError
from .options import resolve_path
from .playlog import read_record, store_for, update_record
from .redact import find_secrets
from .schema import LLMVCR_VERSION
from .storage import atomic_write, document_of, dump_document, file_lock, load_cassette, parse_document

SOURCES = ("llmvcr", "vcrpy", "regista", "agentskit")
TARGETS = ("regista", "agentskit", "llmvcr-json", "llmvcr-yaml")
_SUFFIXES = (".yaml", ".yml", ".json")
_TARGET_SUFFIX = {"regista": ".jsonl", "agentskit": ".json", "llmvcr-json": ".json", "llmvcr-yaml": ".yaml"}
_KNOWN = (
    "llmvcr reads llmvcr cassettes, vcrpy/pytest-recording cassettes, regista traces (.jsonl) "
    "and agentskit cassettes"
)


def existing(argument: str) -> str:
    """A file named on the command line: the path as given when it exists, else a cassette name."""
    if os.path.isfile(argument):
        return argument
    resolved = resolve_path(argument)
    if resolved != argument and os.path.isfile(resolved):
        return resolved
    if os.path.isdir(argument):
        raise CommandError(
            f"{argument} is a folder; name a cassette file in it (llmvcr ls {argument} lists them)"
        )
    also = f" (nor {resolved})" if resolved != argument else ""
    raise CommandError(f"{argument}: no such file{also}; check the path (llmvcr ls DIR lists cassettes)")


# -- reading any supported format -----------------------------------------------------------------
_TOP_KEY = re.compile(r"^([A-Za-z_]\w*)\s*:", re.MULTILINE)


def sniff(path: str) -> str:
    """The format of a file: ``regista`` (.jsonl), ``vcrpy`` (interactions), ``agentskit`` (chunks),
    else ``llmvcr``."""
    if path.lower().endswith(".jsonl"):
        return "regista"
    if not path.lower().endswith(".json"):
        # YAML: the top-level keys at the start of the file settle it without parsing it all
        try:
            with open(path, "rb") as f:
                head = f.read(65536).decode("utf-8", "replace")
        except OSError:
            return "llmvcr"
        keys = set(_TOP_KEY.findall(head))
        if "interactions" in keys:
            return "vcrpy"
        if keys & {"version", "entries", "recorded_with", "seed"}:
            return "llmvcr"
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
    """A cassette from a file of any supported format (sniffed when ``fmt`` is None).

    A file that does not read as its format raises ``CassetteFormatError`` saying what to try.
    """
    given = fmt
    fmt = fmt or sniff(path)
    try:
        cassette = _load(path, fmt)
    except CassetteFormatError as err:
        text = str(err)
        if given is not None and given != sniff(path):
            text = (
                text.removesuffix("; is this a regista trace?")
                + f"; is it really a {given} file? leave out --from to detect the format"
            )
        elif fmt == "llmvcr" and ("not an llmvcr cassette" in text or "top level must be" in text):
            text += f"; {_KNOWN}, and this is none of them"
        raise _reworded(err, text) from None
    if fmt != "llmvcr":
        cassette.path = path
    return cassette


def _reworded(err: CassetteFormatError, text: str) -> CassetteFormatError:
    new = CassetteFormatError(err.path, "")
    new.args = (text,)
    new.entry, new.field = err.entry, err.field
    return new


def _load(path: str, fmt: str) -> Cassette:
    if fmt == "vcrpy":
        from .convert.vcrpy import from_vcrpy

        return from_vcrpy(path)
    if fmt == "regista":
        from .convert.regista import from_regista_trace

        return from_regista_trace(path)
    if fmt == "agentskit":
        from .convert.agentskit import from_agentskit

        return from_agentskit(path)
    return load_cassette(path)


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
def _listed(name: str, suffixes: tuple[str, ...]) -> bool:
    return name.lower().endswith(suffixes) and not name.startswith((".llmvcr-plays.json", ".llmvcr-tmp-"))


def cmd_ls(args: argparse.Namespace, out: TextIO) -> int:
    root = args.dir
    if os.path.isfile(root):
        raise CommandError(f"{root} is a file; llmvcr ls lists a folder (llmvcr show {root} prints this one)")
    if not os.path.isdir(root):
        raise CommandError(
            f"{root}: no such folder; name the folder that holds the cassettes (llmvcr ls tests/cassettes)"
        )
    rows: list[tuple[str, str, str, str, str]] = []
    skipped: list[str] = []
    for directory, _, files in sorted(os.walk(root)):
        for name in sorted(files):
            if not _listed(name, _SUFFIXES):
                continue
            path = os.path.join(directory, name)
            try:
                cassette = load_cassette(path)
                providers = ", ".join(sorted({e.provider for e in cassette.entries})) or "-"
            except LLMVCRError as err:
                fmt = sniff(path)
                if fmt != "llmvcr":
                    kind = "an agentskit cassette" if fmt == "agentskit" else f"a {fmt} cassette"
                    skipped.append(
                        f"{path}: {kind} (llmvcr convert {path} --to llmvcr-yaml -o OUT imports it)"
                    )
                else:
                    skipped.append(str(err))  # names the file
                continue
            rows.append(
                (
                    os.path.relpath(path, root),
                    str(len(cassette)),
                    providers,
                    ", ".join(_models(cassette)) or "-",
                    _size(os.path.getsize(path)),
                )
            )
    if not rows:
        print(f"no llmvcr cassettes under {root}", file=out)
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
        truncated = (
            ", truncated"
            if entry.response.truncated and not stream_finished(entry.response.stream or [])
            else ""
        )
        yield ""
        yield (
            f"[{position}] {entry.provider} {entry.request.method} {entry.request.path}"
            f" · {body.get('model', '-')} · {entry.response.status}{streamed}{truncated}"
        )
        if call is None:
            summary = json.dumps(body.get("input", body), ensure_ascii=False)
            yield f"    request: {summary[:200]}" + ("…" if len(summary) > 200 else "")
            continue
        messages = call.request["messages"]
        fresh = messages[len(history) :] if messages[: len(history)] == history and history else messages
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
        history = [*messages, call.response["message"]]


def cmd_show(args: argparse.Namespace, out: TextIO) -> int:
    for line in show_lines(load_any(existing(args.cassette), args.from_format)):
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
    a = load_any(existing(args.a), args.from_format)
    b = load_any(existing(args.b), args.from_format)
    print(f"A: {a.path} ({len(a)} entries)\nB: {b.path} ({len(b)} entries)", file=out)
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


def write_as(cassette: Cassette, target: str, to: str) -> str:
    """Write ``cassette`` at ``target`` in format ``to``; returns the path written."""
    if to == "regista":
        from .convert.regista import to_regista_trace

        return to_regista_trace(cassette, target)
    if to == "agentskit":
        from .convert.agentskit import to_agentskit

        return to_agentskit(cassette, target)
    fmt = to.removeprefix("llmvcr-")
    wanted = (".json",) if fmt == "json" else (".yaml", ".yml")
    if not target.lower().endswith(wanted):
        raise CommandError(
            f"{target}: {to} output needs a {' or '.join(wanted)} path "
            "(llmvcr reads a cassette by its extension); rename -o"
        )
    with file_lock(target):
        atomic_write(target, dump_document(document_of(cassette), fmt))
    return target


def cmd_convert(args: argparse.Namespace, out: TextIO) -> int:
    if os.path.isdir(args.src):
        return _convert_folder(args, out)
    src = existing(args.src)
    if os.path.isdir(args.output):
        raise CommandError(f"{args.output} is a folder; -o names the output file when SRC is a file")
    cassette = load_any(src, args.from_format)
    target = write_as(cassette, args.output, args.to)
    print(f"wrote {target} ({args.to}, {len(cassette)} entries from {src})", file=out)
    return 0


def _convert_folder(args: argparse.Namespace, out: TextIO) -> int:
    """Every file of SRC (recursively) that is not already in the target format, into OUT with the
    same relative paths (OUT may be SRC: a migration in place)."""
    if os.path.isfile(args.output):
        raise CommandError(f"{args.output} is a file; when SRC is a folder, -o names the output folder")
    own = {"llmvcr-json": "llmvcr", "llmvcr-yaml": "llmvcr"}.get(args.to, args.to)
    converted = failed = 0
    for directory, _, files in sorted(os.walk(args.src)):
        for name in sorted(files):
            if not _listed(name, (*_SUFFIXES, ".jsonl")):
                continue
            path = os.path.join(directory, name)
            fmt = sniff(path)
            if args.from_format is not None and fmt != args.from_format:
                print(f"skipped {path}: not a {args.from_format} file", file=sys.stderr)
                continue
            if fmt == own and args.from_format is None:
                print(f"skipped {path}: already {args.to}", file=sys.stderr)
                continue
            relative = os.path.relpath(path, args.src)
            target = os.path.join(args.output, os.path.splitext(relative)[0] + _TARGET_SUFFIX[args.to])
            if args.to == "llmvcr-yaml" and relative.lower().endswith(".yml"):
                target = os.path.join(args.output, relative)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    cassette = load_any(path, fmt)
                except LLMVCRError as err:
                    print(f"llmvcr: error: {' '.join(str(err).split())}", file=sys.stderr)
                    failed += 1
                    continue
            left_out = [str(w.message) for w in caught if "left out" in str(w.message)]
            if not len(cassette):
                print(f"skipped {path}: no Anthropic or OpenAI calls in it", file=sys.stderr)
                continue
            if left_out and fmt == "vcrpy" and os.path.abspath(target) == os.path.abspath(path):
                print(
                    f"kept {path}: it also holds calls llmvcr does not replay, which vcrpy still needs; "
                    f"convert it to another path (llmvcr convert {path} --to {args.to} -o OTHER)",
                    file=sys.stderr,
                )
                continue
            for message in left_out:
                print(f"llmvcr: warning: {message}", file=sys.stderr)
            write_as(cassette, target, args.to)
            converted += 1
            print(f"wrote {target} ({args.to}, {len(cassette)} entries from {path})", file=out)
    print(f"converted {converted} file(s) from {args.src} into {args.output}", file=out)
    return 2 if failed else 0


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
    except Exception:
        yield text


def _files(paths: Sequence[str]) -> Iterator[str]:
    for path in paths:
        if os.path.isdir(path):
            for directory, _, files in sorted(os.walk(path)):
                yield from (
                    os.path.join(directory, n) for n in sorted(files) if _listed(n, (*_SUFFIXES, ".jsonl"))
                )
        elif os.path.exists(path):
            yield path
        else:
            raise CommandError(f"{path}: no such file or folder; check the path")


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
    print(
        f"{found} possible secret(s) in {scanned} file(s)"
        if found
        else f"no secrets found in {scanned} file(s)",
        file=out if not found else sys.stderr,
    )
    return 1 if found else 0


def _hashes(document: JSON, path: str) -> list[str]:
    entries = document.get("entries")
    if not isinstance(entries, list):
        raise CassetteFormatError(path, "no 'entries' list: this is not an llmvcr cassette", field="entries")
    return [str(e.get("request_hash")) if isinstance(e, dict) else "" for e in entries]


def cmd_prune(args: argparse.Namespace, out: TextIO) -> int:
    path = existing(args.cassette)
    record = read_record(path)
    if record is None:
        raise CommandError(
            f"{path}: no run has recorded what it played (the pytest plugin keeps it in "
            f"{store_for(path)} at the end of a run); run the tests that use it, then prune"
        )
    if record.failed_tests:
        raise CommandError(
            f"{path}: the last run's {', '.join(record.failed_tests)} failed, so it may have stopped "
            "before using every entry; make the tests pass, then prune"
        )
    with file_lock(path):
        with open(path, "rb") as f:
            document = parse_document(f.read(), path)
        hashes = _hashes(document, path)
        if len(hashes) != record.entries or any(
            p >= len(hashes) or hashes[p] != h for p, h in record.unplayed.items()
        ):
            raise CommandError(
                f"{path}: changed since the last run recorded its plays ({record.entries} entries then, "
                f"{len(hashes)} now); run the tests that use it again, then prune"
            )
        drop = set(record.unplayed)
        if not args.dry_run and drop:
            document["entries"] = [e for i, e in enumerate(document["entries"]) if i not in drop]
            atomic_write(path, dump_document(document, "json" if path.lower().endswith(".json") else "yaml"))
    if not args.dry_run and drop:
        update_record(
            path,
            lambda previous: (
                None
                if previous is None
                else type(previous)(previous.run, previous.finished, previous.entries - len(drop), {}, [])
            ),
        )
    verb = "would drop" if args.dry_run else "dropped"
    print(
        f"{path}: kept {len(hashes) - len(drop)} of {len(hashes)} entries, {verb} {len(drop)} "
        f"(not played by the run of {record.finished})",
        file=out,
    )
    return 0


# -- the parser -------------------------------------------------------------------------------------
class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors on one line that say where the help is."""

    def error(self, message: str) -> NoReturn:
        if "required: COMMAND" in message or "required: command" in message:
            message = "no command given"
        self.exit(2, f"{self.prog}: error: {message}; see '{self.prog} --help'\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="llmvcr",
        description="Inspect, compare, convert and clean llmvcr cassettes.",
        epilog="Errors are one line on stderr with exit status 2; diff and scan exit 1 for "
        "'different' and 'found'.",
    )
    parser.add_argument("--version", action="version", version=f"llmvcr {LLMVCR_VERSION}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    ls = commands.add_parser(
        "ls",
        help="list cassettes with entry counts, providers, models and size",
        description="List the llmvcr cassettes under DIR (recursively). Files of other "
        "formats are named on stderr with the command that imports them.",
    )
    ls.add_argument(
        "dir", nargs="?", default="cassettes", metavar="DIR", help="folder to list (default: cassettes)"
    )
    ls.set_defaults(run=cmd_ls)

    show = commands.add_parser(
        "show",
        help="print a cassette as a readable conversation",
        description="Print each call's new messages and the answer (streams collapsed into "
        "text, tool calls and results inline). Reads llmvcr, vcrpy, regista and "
        "agentskit files.",
    )
    show.add_argument("cassette", metavar="CASSETTE", help="a path, or a name under cassettes/")
    show.add_argument("--from", dest="from_format", choices=SOURCES, help="input format (default: detected)")
    show.set_defaults(run=cmd_show)

    diff = commands.add_parser(
        "diff",
        help="compare two cassettes entry by entry",
        description="Structural diff of two cassettes, entry by entry (stream timings "
        "ignored). Exit 1 when they differ.",
    )
    diff.add_argument("a", metavar="A")
    diff.add_argument("b", metavar="B")
    diff.add_argument("--from", dest="from_format", choices=SOURCES, help="input format (default: detected)")
    diff.add_argument("--limit", type=int, default=20, help="differing paths shown per entry (default 20)")
    diff.set_defaults(run=cmd_diff)

    convert = commands.add_parser(
        "convert",
        help="convert between llmvcr, regista, agentskit and vcrpy",
        description="Convert SRC (llmvcr, vcrpy, regista or agentskit, detected unless "
        "--from says) to a regista trace, an agentskit cassette or an "
        "llmvcr cassette. When SRC is a folder, every file in it is "
        "converted into the folder OUT under the same relative path "
        "(OUT may be SRC: `llmvcr convert tests/cassettes --from vcrpy "
        "--to llmvcr-yaml -o tests/cassettes` migrates a pytest-recording "
        "suite in place, keeping any cassette that also holds non-LLM calls).",
    )
    convert.add_argument("src", metavar="SRC", help="a file, or a folder of files")
    convert.add_argument("--to", required=True, choices=TARGETS, help="output format")
    convert.add_argument(
        "-o", "--output", required=True, metavar="OUT", help="output file (a folder when SRC is one)"
    )
    convert.add_argument(
        "--from", dest="from_format", choices=SOURCES, help="input format (default: detected)"
    )
    convert.set_defaults(run=cmd_convert)

    scan = commands.add_parser(
        "scan",
        help="look for credentials in cassettes; exit 1 if any",
        description="Scan every YAML, JSON and JSONL document under PATH for strings that "
        "look like API keys, bearer tokens, private keys or credential headers.",
    )
    scan.add_argument("paths", nargs="+", metavar="PATH")
    scan.set_defaults(run=cmd_scan)

    prune = commands.add_parser(
        "prune",
        help="drop entries the last run never played",
        description="Drop the entries the last test run did not use, as recorded in the "
        "play store the pytest plugin (or llmvcr.playlog.PlayLog) keeps in pytest's cache "
        "(.pytest_cache/d/llmvcr). Refuses when no run recorded it, when a test using it "
        "failed, or when the file changed since.",
    )
    prune.add_argument("cassette", metavar="CASSETTE")
    prune.add_argument("--dry-run", action="store_true", help="say what would go, change nothing")
    prune.set_defaults(run=cmd_prune)
    return parser


def _one_line(err: BaseException) -> str:
    if isinstance(err, OSError) and not isinstance(err, LLMVCRError) and err.strerror:
        where = f"{err.filename}: " if err.filename else ""
        return f"{where}{err.strerror.lower()}"
    return " ".join(str(err).split())


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (``python -m llmvcr`` and the ``llmvcr`` script)."""
    args = build_parser().parse_args(argv)
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
