"""Reading any format the command knows (:data:`~llmvcr.storage.formats.FORMATS`), and finding a file."""

from __future__ import annotations

import os

from ..cassette import Cassette
from ..convert.vcrpy import NoLLMCallsError
from ..errors import CassetteFormatError, CommandError
from ..options import resolve_path
from ..storage.formats import OWN, by_name, in_place, known, readable, resolve, suffixes, writable
from ..storage.sniff import detect
from ..wire import model_of

SOURCES = readable()
TARGETS = writable()
SUFFIXES = suffixes((OWN, *in_place()))  # cassettes: llmvcr's and those it reads in place
TARGET_SUFFIX = {name: by_name(name).suffixes[0] for name in TARGETS}


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
def sniff(path: str) -> str:
    """The format of a file (see :data:`llmvcr.storage.formats.FORMATS`); ``llmvcr`` when none claims it."""
    return detect(path)


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
        elif fmt == OWN and ("not an llmvcr cassette" in text or "top level must be" in text):
            text += f"; {known()}, and this is none of them"
        raise _reworded(err, text) from None
    if fmt != OWN:
        cassette.path = path
    return cassette


def _reworded(err: CassetteFormatError, text: str) -> CassetteFormatError:
    new = CassetteFormatError(err.path, "")
    new.args = (text,)
    new.entry, new.field = err.entry, err.field
    return new


def _load(path: str, fmt: str) -> Cassette:
    spec = by_name(fmt).read
    if spec is None:  # argparse offers only readable formats
        raise CommandError(f"llmvcr cannot read {fmt} files; --from takes {', '.join(SOURCES)}")
    cassette: Cassette = resolve(spec)(path)
    return cassette


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
