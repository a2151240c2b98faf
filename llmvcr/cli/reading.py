"""Reading any format the command knows: llmvcr, vcrpy/pytest-recording, regista and agentskit files."""

from __future__ import annotations

import os
import re

from ..cassette import Cassette
from ..convert.agentskit import from_agentskit
from ..convert.otel import from_otel
from ..convert.regista import from_regista_trace
from ..convert.vcrpy import FOREIGN, NoLLMCallsError, foreign_format, from_vcrpy, read_document
from ..errors import CassetteFormatError, CommandError
from ..options import resolve_path
from ..storage import load_cassette
from ..wire import model_of

SOURCES = ("llmvcr", "vcrpy", "cassetter", "langchain-gz", "regista", "agentskit", "otel")
TARGETS = ("regista", "agentskit", "llmvcr-json", "llmvcr-yaml")
SUFFIXES = (".yaml", ".yml", ".json", ".yaml.gz", ".yml.gz")
TARGET_SUFFIX = {"regista": ".jsonl", "agentskit": ".json", "llmvcr-json": ".json", "llmvcr-yaml": ".yaml"}
_KNOWN = (
    "llmvcr reads llmvcr cassettes, vcrpy/pytest-recording, cassetter and LangChain (.yaml.gz) "
    "cassettes, regista traces (.jsonl), agentskit cassettes and OTLP JSON exports of GenAI spans"
)


def existing(argument: str) -> str:
    """A file named on the command line: the path as given, else a cassette name under the cassette
    directory, else that name in the ``cassettes`` folders pytest tests keep beside them."""
    if os.path.isfile(argument):
        return argument
    resolved = resolve_path(argument)
    if resolved != argument and os.path.isfile(resolved):
        return resolved
    if os.path.isdir(argument):
        raise CommandError(
            f"{argument} is a folder; name a cassette file in it (llmvcr ls {argument} lists them)"
        )
    found = _beside_tests(argument)
    if len(found) == 1:
        return found[0]
    if found:
        raise CommandError(f"{argument} names several cassettes: {', '.join(found[:5])}; give the path")
    also = f" (nor {resolved})" if resolved != argument else ""
    raise CommandError(
        f"{argument}: no such file{also}, nor in a 'cassettes' folder below here; check the path "
        f"(llmvcr ls DIR lists cassettes)"
    )


_SKIPPED = frozenset({".git", ".venv", "venv", "node_modules", ".tox", ".pytest_cache", "__pycache__"})


def cassette_folders() -> list[str]:
    """The ``cassettes`` folders below the current one, where the pytest plugin keeps each test
    file's cassettes (``tests/cassettes``, ``tests/api/cassettes``...); none inside another."""
    found: list[str] = []
    for directory, folders, _ in os.walk("."):
        if os.path.basename(directory) == "cassettes":
            found.append(os.path.normpath(directory))
            folders[:] = []
            continue
        folders[:] = sorted(f for f in folders if f not in _SKIPPED and not f.startswith(".venv"))
    return found


def _beside_tests(name: str) -> list[str]:
    """``test_chat/test_one`` or ``test_one.yaml`` in any ``cassettes`` folder below the current one."""
    wanted = name if name.lower().endswith(SUFFIXES) else None
    found: list[str] = []
    for directory, folders, _ in os.walk("."):
        folders[:] = sorted(f for f in folders if f not in _SKIPPED and not f.startswith(".venv"))
        if os.path.basename(directory) != "cassettes":
            continue
        candidates = [wanted] if wanted else [name + suffix for suffix in SUFFIXES]
        found += [
            os.path.join(directory, c) for c in candidates if os.path.isfile(os.path.join(directory, c))
        ]
    return [os.path.normpath(p) for p in found]


# -- reading any supported format -----------------------------------------------------------------
_TOP_KEY = re.compile(r"^([A-Za-z_]\w*)\s*:", re.MULTILINE)


_CASSETTER = re.compile(
    r"^\s+body:\s*\n\s+type:\s*(?:json|text|binary|none)\s*$|^\s+recorded_at:", re.MULTILINE
)


def sniff(path: str) -> str:
    """The format of a file: ``otel`` (OTLP JSON), ``regista`` (.jsonl), ``vcrpy``, ``cassetter`` or
    ``langchain-gz`` (interactions), ``agentskit`` (chunks), else ``llmvcr``."""
    try:
        with open(path, "rb") as f:
            first = f.read(65536)
    except OSError:
        first = b""
    foreign = foreign_format(first)
    if foreign == "langchain-gz":
        return foreign
    if foreign is not None and _CASSETTER.search(first.decode("utf-8", "replace")):
        return "cassetter"
    if path.lower().endswith((".jsonl", ".json")):
        try:
            with open(path, "rb") as f:
                start = f.read(4096)
        except OSError:
            start = b""
        if b'"resourceSpans"' in start or b'"resourceLogs"' in start:
            return "otel"
    if path.lower().endswith(".jsonl"):
        return "regista"
    if not path.lower().endswith(".json"):
        # YAML: the top-level keys at the start of the file settle it without parsing it all
        head = first.decode("utf-8", "replace")
        keys = set(_TOP_KEY.findall(head))
        if "interactions" in keys:
            return "vcrpy"
        if keys & {"version", "entries", "recorded_with", "seed"}:
            return "llmvcr"

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
    except NoLLMCallsError:
        raise  # said plainly already; the caller may keep such a file for vcrpy
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
    if fmt in FOREIGN:
        return from_vcrpy(path)
    if fmt == "regista":
        return from_regista_trace(path)
    if fmt == "agentskit":
        return from_agentskit(path)
    if fmt == "otel":
        return from_otel(path)
    return load_cassette(path)


def entries(n: int) -> str:
    """``1 entry``, ``2 entries``."""
    return f"{n:,} {'entry' if n == 1 else 'entries'}"


def size(n: int) -> str:
    for unit in ("B", "KB", "MB"):
        if n < 1024 or unit == "MB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"


def models(cassette: Cassette) -> list[str]:
    """The models a cassette's calls name (by each provider's wire description)."""
    return sorted({m for e in cassette.entries if (m := model_of(e.provider, e.request))})
