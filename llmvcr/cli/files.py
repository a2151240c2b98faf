"""``llmvcr convert``, ``scan``, ``prune`` and ``rehash``: changing and checking cassette files."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import warnings
from collections.abc import Iterator
from typing import Any, TextIO

from ..cassette import Cassette
from ..cassette.linear import without
from ..convert import JSON
from ..convert.vcrpy import NoLLMCallsError, read_document, vcr_loader
from ..errors import CassetteFormatError, CommandError, LLMVCRError
from ..freshness.playlog import read_record, store_for, update_record
from ..redaction import find_secrets
from ..storage.files import dump_document, format_of, parse_checked, parse_document
from ..storage.formats import OWN, by_name, in_place, resolve, suffixes
from ..storage.validation import END_KEY, END_MARKER, read_cassette, seal_text
from ..storage.writer import atomic_write, file_lock
from ..wording import plural
from .inspect import files_under, listed
from .reading import SOURCES, TARGET_SUFFIX, entries, existing, load_any, sniff

FILES = suffixes(SOURCES)  # every file a format llmvcr reads comes in (cassettes and traces)
LLMVCR_TARGETS = tuple(name for name in TARGET_SUFFIX if by_name(name).named_by_suffix)


def write_as(cassette: Cassette, target: str, to: str, layout: str | None = None) -> str:
    """Write ``cassette`` at ``target`` in format ``to`` (an llmvcr one in ``layout``, else the
    cassette's own); returns the path written."""
    fmt = by_name(to)
    if layout is not None and not fmt.named_by_suffix:
        raise CommandError(f"--layout is for {' and '.join(LLMVCR_TARGETS)} output, not {to}; leave it out")
    if layout is not None:  # argparse allows "linear" and "full" only
        cassette.layout = "linear" if layout == "linear" else "full"
    if fmt.write is None:  # argparse offers only writable formats
        raise CommandError(f"llmvcr does not write {to} files; --to takes one of {', '.join(TARGET_SUFFIX)}")
    if fmt.named_by_suffix and not target.lower().endswith(fmt.suffixes):
        raise CommandError(
            f"{target}: {to} output needs a {' or '.join(fmt.suffixes)} path "
            "(llmvcr reads a cassette by its extension); rename -o"
        )
    written: str = resolve(fmt.write)(cassette, target)
    return written


def cmd_convert(args: argparse.Namespace, out: TextIO) -> int:
    if os.path.isdir(args.src):
        return _convert_folder(args, out)
    src = existing(args.src)
    output = args.output
    if os.path.isdir(output) or output.endswith(
        ("/", os.sep)
    ):  # a folder (made if missing): SRC's name in it
        stem = os.path.basename(src)
        stem = stem[: -len(".gz")] if stem.lower().endswith(".gz") else stem
        output = os.path.join(output, os.path.splitext(stem)[0] + TARGET_SUFFIX[args.to])
    cassette = load_any(src, args.from_format)
    empty = _nothing_converted(src, args.from_format or sniff(src), len(cassette))
    if empty is not None:
        raise CommandError(f"{src}: {empty}")
    os.makedirs(os.path.dirname(output) or ".", exist_ok=True)
    target = write_as(cassette, output, args.to, args.layout)
    print(f"wrote {target} ({args.to}, {entries(len(cassette))} from {src})", file=out)
    return 0


def _nothing_converted(path: str, fmt: str, count: int) -> str | None:
    """Why converting ``path`` must fail when another tool's file gave no entry, else None: a
    conversion never succeeds empty (an empty llmvcr cassette converts to an empty one)."""
    if count or fmt == OWN:
        return None
    return (
        f"no call in this {fmt} file could be converted (0 entries; the warnings above say what was "
        "left out and why); nothing written"
    )


def _target(args: argparse.Namespace, path: str) -> str:
    relative = os.path.relpath(path, args.src)
    if relative.lower().endswith(by_name(args.to).suffixes):  # a .yml file stays .yml
        return os.path.join(args.output, relative)
    stem = relative[: -len(".gz")] if relative.lower().endswith(".gz") else relative
    return os.path.join(args.output, os.path.splitext(stem)[0] + TARGET_SUFFIX[args.to])


def _convert_folder(args: argparse.Namespace, out: TextIO) -> int:
    """Every file of SRC (recursively) that is not already in the target format, into OUT with the
    same relative paths (OUT may be SRC: a migration in place). Ends with a table of every file:
    what it was, what became of it; exit status 2 when any file failed."""
    if os.path.isfile(args.output):
        raise CommandError(f"{args.output} is a file; when SRC is a folder, -o names the output folder")
    rows: list[tuple[str, str, str, str]] = []  # file, format, entries, result
    for directory, _, files in sorted(os.walk(args.src)):
        for name in sorted(files):
            if listed(name, FILES):
                path = os.path.join(directory, name)
                rows.append(_convert_one(args, path, out))
    converted = sum(1 for row in rows if row[3].startswith("wrote"))
    failed = sum(1 for row in rows if row[3].startswith("FAILED"))
    if rows:
        header = ("file", "format", "entries", "result")
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(3)]
        for row in [header, *rows]:
            print("  ".join([*(c.ljust(w) for c, w in zip(row, widths, strict=False)), row[3]]), file=out)
    tail = f"; {failed} failed (see above; fix or convert them one by one)" if failed else ""
    print(f"converted {converted} file(s) from {args.src} into {args.output}{tail}", file=out)
    return 2 if failed else 0


def _convert_one(args: argparse.Namespace, path: str, out: TextIO) -> tuple[str, str, str, str]:
    fmt = sniff(path)
    # --from vcrpy reads cassetter's files too: the same reader reads both
    family = args.from_format is not None and by_name(fmt).read == by_name(args.from_format).read
    if args.from_format is not None and fmt != args.from_format and not family:
        print(f"skipped {path}: not a {args.from_format} file", file=sys.stderr)
        return (path, fmt, "-", f"skipped: not {args.from_format}")
    target = _target(args, path)
    same_kind = fmt == OWN and by_name(args.to).named_by_suffix and format_of(path) == format_of(target)
    if same_kind and args.from_format is None and args.layout is None:
        return (path, fmt, "-", f"skipped: already {args.to}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            cassette = load_any(path, fmt)
        except NoLLMCallsError as err:
            why = f"none of its {err.interactions} interaction(s) is an LLM call (to {', '.join(err.hosts)})"
            print(f"kept {path}: {why}; left to vcrpy", file=sys.stderr)
            return (path, fmt, "0", f"kept: {why}, left to vcrpy")
        except LLMVCRError as err:
            message = " ".join(str(err).split())
            print(f"llmvcr: error: {message}", file=sys.stderr)
            return (path, fmt, "-", f"FAILED: {message.removeprefix(path).lstrip(':, ')}")
    left_out = [str(w.message) for w in caught if "left out" in str(w.message)]
    if left_out and fmt in in_place() and os.path.abspath(target) == os.path.abspath(path):
        print(
            f"kept {path}: it also holds calls llmvcr does not replay, which vcrpy still needs; "
            f"convert it to another path (llmvcr convert {path} --to {args.to} -o OTHER)",
            file=sys.stderr,
        )
        return (path, fmt, str(len(cassette)), "kept: also holds non-LLM calls vcrpy needs")
    for warning in caught:
        print(f"llmvcr: warning: {' '.join(str(warning.message).split())}", file=sys.stderr)
    empty = _nothing_converted(path, fmt, len(cassette))
    if empty is not None:
        print(f"llmvcr: error: {path}: {empty}", file=sys.stderr)
        return (path, fmt, "0", f"FAILED: {empty}")
    write_as(cassette, target, args.to, args.layout)  # the table says so: no line of its own
    return (path, fmt, str(len(cassette)), f"wrote {target}")


def _documents(path: str) -> Iterator[Any]:
    """Every document a file holds, as plain data; the raw text when it does not parse."""
    with open(path, "rb") as f:
        data = f.read()
    text = data.decode("utf-8", "replace")
    if path.lower().endswith(".gz"):  # LangChain's gzip: the YAML inside, or the error saying why not
        try:
            yield read_document(path, data)
        except LLMVCRError as err:
            yield str(err)
        return
    try:
        if path.lower().endswith(".jsonl"):
            yield from (json.loads(line) for line in text.splitlines() if line.strip())
        elif path.lower().endswith(".json"):
            yield json.loads(text)
        else:
            import yaml

            yield yaml.load(data, Loader=vcr_loader())  # a SafeLoader
    except ValueError:
        yield text
    except Exception:
        yield text


def cmd_scan(args: argparse.Namespace, out: TextIO) -> int:
    found = 0
    scanned = 0
    with_hits: set[str] = set()
    for path in files_under(args.paths, FILES):
        scanned += 1
        fmt = sniff(path)
        kind = f" ({fmt} cassette)" if fmt in in_place() else ""
        for number, document in enumerate(_documents(path)):
            where = f"{path}:{number + 1}" if path.lower().endswith(".jsonl") else path + kind
            for tree_path, kind, excerpt in find_secrets(document):
                print(f"{where}: {tree_path.lstrip('.') or '(text)'}: {kind} ({excerpt})", file=out)
                found += 1
                with_hits.add(path)
    print(
        f"{plural(found, 'possible secret')} in {len(with_hits)} of {plural(scanned, 'file')}"
        if found
        else f"no secrets found in {plural(scanned, 'file')}",
        file=out if not found else sys.stderr,
    )
    return 1 if found else 0


def _hashes(document: JSON, path: str) -> list[str]:
    entries = document.get("entries")
    if not isinstance(entries, list):
        raise CassetteFormatError(path, "no 'entries' list: this is not an llmvcr cassette", field="entries")
    return [str(e.get("request_hash")) if isinstance(e, dict) else "" for e in entries]


def cmd_prune(args: argparse.Namespace, out: TextIO) -> int:
    """Prune each cassette named, and every cassette in each folder named (skipping those no run
    recorded); a cassette that cannot be pruned is an error line, and the others still are."""
    failed = 0
    for argument in args.cassettes:
        in_folder = os.path.isdir(argument)
        for path in files_under([argument], FILES) if in_folder else [existing(argument)]:
            if path.lower().endswith(".jsonl"):
                continue
            if in_folder and read_record(path) is None:
                print(f"{path}: skipped (no run has recorded what it played)", file=out)
                continue
            try:
                _prune(path, args.dry_run, out)
            except CommandError as err:
                print(f"llmvcr: error: {err}", file=sys.stderr)
                failed += 1
    return 2 if failed else 0


def _prune(path: str, dry_run: bool, out: TextIO) -> None:
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
        if not dry_run and drop:
            document["entries"] = without(document, drop, path)
            atomic_write(path, dump_document(document, "json" if path.lower().endswith(".json") else "yaml"))
    if not dry_run and drop:
        update_record(
            path,
            lambda previous: (
                None
                if previous is None
                else type(previous)(previous.run, previous.finished, previous.entries - len(drop), {}, [])
            ),
        )
    verb = "would drop" if dry_run else "dropped"
    print(
        f"{path}: kept {len(hashes) - len(drop)} of {entries(len(hashes))}, {verb} {len(drop)} "
        f"(not played by the run of {record.finished})",
        file=out,
    )


def cmd_rehash(args: argparse.Namespace, out: TextIO) -> int:
    """Check every entry of each cassette named, write its entry count again, store the hash of
    each request edited by hand, and end it with its end marker (after a hand edit)."""
    failed = 0
    for argument in args.cassettes:
        try:
            path = existing(argument)
            with file_lock(path):
                count, edited, marked = _rehash(path)
        except LLMVCRError as err:
            print(f"llmvcr: error: {' '.join(str(err).split())}", file=sys.stderr)
            failed += 1
            continue
        hashes = f"; request_hash of entry {', '.join(map(str, edited))} stored anew" if edited else ""
        marker = f"; end marker added ({END_KEY}: true)" if marked else ""
        print(f"{path}: {entries(count)}, counted in its header{hashes}{marker}", file=out)
    return 2 if failed else 0


def _rehash(path: str) -> tuple[int, list[int], bool]:
    """Count the entries again, store each hand-edited request's hash as its request reads now, and
    add the end marker to a file written before it existed. A file cut short is refused: its
    header promises an end marker it does not end with."""
    data = read_cassette(path)
    document, stale = parse_checked(data, path, counted=False, cached=False)  # every entry checked
    marked = document.get(END_MARKER) is not True
    count = len(document["entries"] or [])
    edited = sorted(stale)
    if format_of(path) == "json":  # JSON holds no comments: written out again
        for i in edited:
            document["entries"][i]["request_hash"] = stale[i]
        new = dump_document(document, "json")
    else:  # YAML: only the count, the marker and the edited hashes change; comments and layout stay
        new = _new_hashes(seal_text(data, path, count), stale, count, path)
    parse_document(new, path)
    if new != data:
        atomic_write(path, new)
    return count, edited, marked


_HASH_LINE = re.compile(rb"^([ \t-]*request_hash:[ \t]*['\"]?)([A-Za-z0-9_:]+)", re.MULTILINE)


def _new_hashes(data: bytes, fresh: dict[int, str], count: int, path: str) -> bytes:
    edited = sorted(fresh)
    if not edited:
        return data
    lines = list(_HASH_LINE.finditer(data))
    if len(lines) != count:  # one request_hash line per entry, in order, or no edit by position
        raise CommandError(
            f"{path}: entries {', '.join(map(str, edited[:10]))} were edited by hand, but their "
            f"request_hash lines could not be told apart; save it again instead "
            f"(llmvcr convert {path} --to llmvcr-yaml -o {path})"
        )
    out, at = [], 0
    for i in edited:
        match = lines[i]
        out += [data[at : match.start(2)], fresh[i].encode()]
        at = match.end(2)
    return b"".join([*out, data[at:]])
