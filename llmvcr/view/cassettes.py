"""Cassettes as the page holds them: read in any format llmvcr reads, with their calls, age, expiry,
what the last run left unplayed, and each entry's raw form once (in the linear layout's references).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from ..cassette import Cassette, Entry
from ..cassette.age import age_text, recorded_at
from ..cassette.linear import LISTS, pack
from ..cassette.schema import entry_to_mapping
from ..convert import JSON
from ..convert.tool_calls import asked_by
from ..errors import CommandError, LLMVCRError
from ..freshness.playlog import PlayRecord, read_record, read_records
from ..storage.formats import OWN, by_name, readable, resolve, suffixes
from ..storage.sniff import detect
from .calls import Threads, call_data
from .mcp import link_mcp

FILES = suffixes(readable())  # every file a folder may hold that llmvcr reads
_NOT_CASSETTES = (".llmvcr-plays.json", ".llmvcr-tmp-")


def load(path: str) -> tuple[Cassette, str]:
    """The cassette at ``path`` in whichever format it is (detected as ``llmvcr show`` does), and
    that format's name."""
    try:
        fmt = detect(path)
        spec = by_name(fmt).read
        if spec is None:
            raise CommandError(f"{path}: llmvcr cannot read {fmt} files; convert it first (llmvcr convert)")
        cassette: Cassette = resolve(spec)(path)
    except RecursionError:  # a parser that recurses per level: JSON nested thousands deep
        raise CommandError(
            f"{path}: nested too deeply to read (thousands of levels of lists or objects); no recorder "
            f"writes that, so the file is damaged or not a cassette"
        ) from None
    if fmt != OWN:
        cassette.path = path
    return cassette, fmt


def cassette_files(paths: Sequence[str]) -> Iterator[str]:
    """The files named, and every cassette-like file under each folder named, in a stable order."""
    for path in paths:
        if os.path.isdir(path):
            for directory, folders, files in sorted(os.walk(path)):
                folders[:] = sorted(f for f in folders if not f.startswith("."))
                for name in sorted(files):
                    if name.lower().endswith(FILES) and not name.startswith(_NOT_CASSETTES):
                        yield os.path.join(directory, name)
        elif os.path.isfile(path):
            yield path
        else:
            raise CommandError(f"{path}: no such file or folder; name a cassette or a folder of them")


def raw_entry(entry: Entry) -> JSON:
    """An entry as its file holds it, with each stream event's arrival offset ``t`` kept in it."""
    mapping = entry_to_mapping(entry)
    response = dict(mapping["response"])
    if entry.response.stream is not None:
        response.pop("timing", None)
        response["stream"] = entry.response.stream
    mapping["response"] = response
    return mapping


def _continues(raw: Any) -> int | None:
    """The entry a packed request's conversation list extends (the linear layout's ``extends``)."""
    request = raw.get("request") if isinstance(raw, dict) else None
    body = request.get("body") if isinstance(request, dict) else None
    for name in LISTS:
        value = body.get(name) if isinstance(body, dict) else None
        if isinstance(value, dict):
            found = value.get("extends", value.get("same_as"))
            return found if isinstance(found, int) else None
    return None


_READ = object()  # cassette_data's record not given: read it


def _unplayed(cassette: Cassette, record: Any = _READ) -> tuple[JSON | None, set[int]]:
    """What the last run recorded for this file, and the entries it left unplayed (a record of an
    older version of the file, whose hashes no longer fit, marks nothing)."""
    if not cassette.path:
        return None, set()
    if record is _READ:
        record = read_record(cassette.path)
    if not isinstance(record, PlayRecord):
        return None, set()
    fits = record.entries == len(cassette) and all(
        p < len(cassette) and cassette.stored_hash(p) == h for p, h in record.unplayed.items()
    )
    unplayed = sorted(record.unplayed) if fits else []
    data = {
        "run": record.run,
        "finished": record.finished,
        "failed_tests": record.failed_tests,
        "fits": fits,
        "unplayed": unplayed,
    }
    return data, set(unplayed)


def _age(cassette: Cassette, now: datetime, max_age: timedelta | None) -> JSON:
    when = recorded_at(cassette.recorded_with)
    if when is None:
        return {"at": None, "age": None, "seconds": None, "expired": None, "max_age": None}
    age = now - when
    return {
        "at": when.isoformat(timespec="seconds").replace("+00:00", "Z"),
        "age": age_text(age) if age.total_seconds() >= 0 else "recorded in the future",
        "seconds": age.total_seconds(),
        "expired": age > max_age if max_age is not None else None,
        "max_age": age_text(max_age) if max_age is not None else None,
    }


def cassette_data(
    cassette: Cassette,
    fmt: str,
    *,
    now: datetime | None = None,
    max_age: timedelta | None = None,
    record: object = _READ,
) -> JSON:
    """Everything the page shows of one cassette; ``calls[i]`` and ``raw[i]`` are entry ``i``
    (``record``: the last run's, when read already; else it is read here)."""
    now = now or datetime.now(timezone.utc)
    entries = [cassette.entry(i) for i in range(len(cassette))]
    raw, _ = pack([raw_entry(e) for e in entries])  # a repeated conversation is held once
    threads = Threads()
    calls = [call_data(entry, i, threads, _continues(raw[i])) for i, entry in enumerate(entries)]
    for position, asked in asked_by(entries).items():
        calls[position]["tool"]["asked_by"] = {"call": asked.call, "id": asked.tool_use_id}
    link_mcp(calls, entries)
    played, unplayed = _unplayed(cassette, record)
    for call in calls:
        call["unplayed"] = call["i"] in unplayed
    usd = [c["usd"] for c in calls if c["usd"] is not None]
    age = _age(cassette, now, max_age)
    return {
        "path": cassette.path,
        "name": os.path.basename(cassette.path) if cassette.path else "(in memory)",
        "format": fmt,
        "layout": cassette.layout if fmt == OWN else None,
        "seed": cassette.seed,
        "recorded_with": cassette.recorded_with,
        "metadata": cassette.metadata,
        "age": age,
        "played": played,
        "stale": bool(unplayed) or bool(age["expired"]),
        "providers": sorted({c["provider"] for c in calls}),
        "models": sorted({c["model"] for c in calls if c["model"]}),
        "totals": {
            "calls": len(calls),
            "in": sum(c["in"] for c in calls),
            "out": sum(c["out"] for c in calls),
            "usd": sum(usd) if usd else None,
            "unpriced": len(calls) - len(usd),
            "ms": sum(c["ms"] for c in calls if c["ms"] is not None),
            "unplayed": len(unplayed),
        },
        "calls": calls,
        "raw": raw,
    }


def unreadable(path: str, err: Exception) -> JSON:
    """A folder's file that did not read: listed in the index with the reason, never left out."""
    return {"path": path, "name": os.path.basename(path), "error": " ".join(str(err).split())}


def gather(
    paths: Sequence[str], *, now: datetime | None = None, max_age: timedelta | None = None
) -> list[JSON]:
    """Every cassette named or under a folder named; a file that does not read is kept with its
    error (and warned about) when it came from a folder, and raises when it was named."""
    named = {p for p in paths if os.path.isfile(p)}
    found: list[JSON] = []
    files = list(cassette_files(paths))
    records = read_records(files)  # each play store read once, not once per cassette
    for path in files:
        try:
            cassette, fmt = load(path)
        except LLMVCRError as err:
            if path in named:
                raise
            warnings.warn(f"{path}: not shown: {' '.join(str(err).split())}", stacklevel=2)
            found.append(unreadable(path, err))
            continue
        found.append(cassette_data(cassette, fmt, now=now, max_age=max_age, record=records[path]))
    if not found:
        raise CommandError(f"no cassettes under {', '.join(paths)}; name a cassette file or a folder of them")
    return found
