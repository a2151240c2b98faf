"""The one HTML file: the package's template, style and scripts, and the data as a JSON island.

Nothing in the page reaches the network: its Content-Security-Policy allows only its own inline
script and style (by hash) and ``data:`` images, so even a URL inside a recorded response loads
nothing. The data sits in a ``<script type="application/json">`` with every ``<``, ``>`` and ``&``
escaped, so a response holding ``</script><script>`` stays text; the scripts render it with
``textContent`` only. A string repeated anywhere in the data (a system prompt sent on every call, a
reply that is also the next request's message) is stored once in a table.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
import warnings
from collections import Counter
from datetime import datetime, timezone
from importlib import resources
from typing import Any

import orjson

from ..cassette.schema import release
from ..convert import JSON
from ..errors import CommandError
from ..redaction import Redactor, find_secrets
from ..redaction.secret_shapes import may_hold_shape
from ..storage.writer import atomic_write
from ..wire.headers import CREDENTIAL_HEADERS

SCRIPTS = ("common.js", "conversation.js", "cassette.js", "index.js", "compare.js", "main.js")
SHARED_MIN = 48  # a string this long or longer is stored once when it repeats
_REF, _LITERAL = "\x01", "\x02"  # a table reference; a string that started with one of these
_SLOT = re.compile(r"\{\{(\w+)\}\}")


def _static(name: str) -> str:
    return resources.files(__package__).joinpath("static", name).read_text(encoding="utf-8")


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


# -- repeated strings --------------------------------------------------------------------------
def _strings(node: Any, found: list[str]) -> None:
    """Every string of a JSON tree (values, not keys) into ``found``."""
    kind = type(node)
    if kind is str:
        found.append(node)
    elif kind is dict:
        for value in node.values():
            if type(value) is str:
                found.append(value)
            elif type(value) in (dict, list):
                _strings(value, found)
    elif kind is list:
        for value in node:
            if type(value) is str:
                found.append(value)
            elif type(value) in (dict, list):
                _strings(value, found)


def _shared(node: Any, index: dict[str, str]) -> Any:
    """``node`` with each string in ``index`` replaced (a string leaf is looked up in place, not
    through a call: a 1,000-call page holds some 100,000 of them)."""
    kind = type(node)
    if kind is str:
        return index.get(node, node)
    if kind is dict:
        return {
            key: index.get(value, value)
            if type(value) is str
            else _shared(value, index)
            if type(value) in (dict, list)
            else value
            for key, value in node.items()
        }
    if kind is list:
        return [
            index.get(value, value)
            if type(value) is str
            else _shared(value, index)
            if type(value) in (dict, list)
            else value
            for value in node
        ]
    return node


def share_strings(data: Any) -> tuple[Any, list[str]]:
    """``data`` with each long repeated string replaced by a reference into the returned table."""
    found: list[str] = []
    _strings(data, found)
    counts = Counter(text for text in found if len(text) >= SHARED_MIN)
    table = [text for text, n in counts.items() if n > 1]
    index = {text: f"{_REF}{i}" for i, text in enumerate(table)}
    index.update((text, _LITERAL + text) for text in found if text[:1] in (_REF, _LITERAL))
    return _shared(data, index), table


# -- secrets -----------------------------------------------------------------------------------
def _placeholder(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("<REDACTED")


def _keys(node: Any, found: list[str]) -> None:
    """Every object key of a JSON tree into ``found`` (a key can be a key: ``{"sk-ant-...": 1}``)."""
    if isinstance(node, dict):
        for key, value in node.items():
            found.append(str(key))
            _keys(value, found)
    elif isinstance(node, list):
        for value in node:
            _keys(value, found)


# a run of base64 (or base64url) long enough to wrap a key, short enough not to be an image
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{24,2048}={0,2}(?![A-Za-z0-9+/=_-])")
_WRAPPED = "<REDACTED:base64-wrapped-key>"


def _unwrapped(run: str) -> str:
    padded = run + "=" * (-len(run) % 4)
    try:
        raw = base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
    except ValueError:
        return ""
    return raw.decode("utf-8", "ignore")


def _wraps_key(run: str) -> bool:
    text = _unwrapped(run)
    return bool(text) and may_hold_shape(text.encode()) and any(True for _ in find_secrets(text))


def _unwrap_keys(text: str) -> str:
    """``text`` with each base64 run that decodes to something key-shaped replaced."""
    return _BASE64.sub(lambda m: _WRAPPED if _wraps_key(m.group()) else m.group(), text)


def _may_hold_secret(node: Any) -> bool:
    """A quick look at the whole tree as JSON: False when no key shape and no credential header can
    be in it (most pages), so each string need not be scanned on its own."""
    found: list[str] = []
    _strings(node, found)
    _keys(node, found)
    text = "\n".join(found)
    if may_hold_shape(text.encode("utf-8")) or any(_wraps_key(m.group()) for m in _BASE64.finditer(text)):
        return True
    lower = orjson.dumps(node).lower()
    return any(f'"{name}":'.encode() in lower for name in CREDENTIAL_HEADERS)


def secrets_in(node: Any) -> list[tuple[str, str]]:
    """``(path, kind)`` of every key-shaped string (``llmvcr scan``'s shapes), an object's key and a
    key wrapped in base64 too, credential headers whose value is already a placeholder excepted."""
    if not _may_hold_secret(node):
        return []
    found = []
    for path, kind, excerpt in find_secrets(node):
        if kind == "credential-header" and excerpt.startswith("<REDAC"):
            continue
        found.append((path, kind))
    keys: list[str] = []
    _keys(node, keys)
    found += [("(an object's key)", kind) for _, kind, _ in find_secrets(keys)]
    texts: list[str] = []
    _strings(node, texts)
    found += [
        ("(base64)", "base64-wrapped-key")
        for text in texts + keys
        for m in _BASE64.finditer(text)
        if _wraps_key(m.group())
    ]
    return found


def _scrub(node: Any, redactor: Redactor) -> Any:
    if isinstance(node, str):
        return _unwrap_keys(redactor.text(node))
    if isinstance(node, dict):
        return {
            _scrub(key, redactor) if isinstance(key, str) else key: (
                "<REDACTED:credential-header>"
                if isinstance(key, str) and key.lower() in CREDENTIAL_HEADERS and not _placeholder(value)
                else _scrub(value, redactor)
            )
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_scrub(value, redactor) for value in node]
    return node


def _in_file(path: str, kind: str) -> str:
    """``.raw[3].response.body.x`` as ``entry 3: response.body.x (kind)``."""
    position, _, rest = path.partition(".raw[")[2].partition("]")
    return f"entry {position}: {rest.lstrip('.')} ({kind})"


def redacted(data: Any, where: str) -> Any:
    """``data`` with nothing key-shaped left: a file holding a key (redacted on disk it should be)
    is shown with the key replaced and a warning naming the file; a key that stays raises."""
    found = secrets_in(data)
    if not found:
        return data
    # named as in the file (entry N: its path) where the page keeps the entry as stored
    places = [_in_file(p, kind) for p, kind in found if ".raw[" in p] or [
        f"{p.lstrip('.')} ({kind})" for p, kind in found
    ]
    paths = ", ".join(places[:5])
    more = f" and {len(places) - 5} more" if len(places) > 5 else ""
    where = Redactor().text(where)  # a file named like a key: not in the terminal either
    warnings.warn(
        f"{where}: holds what looks like a credential at {paths}{more}; the page shows it redacted. "
        f"Check the file with: llmvcr scan {where}",
        stacklevel=3,
    )
    cleaned = _scrub(data, Redactor())
    if secrets_in(cleaned):
        raise CommandError(f"{where}: a credential could not be redacted from the page; nothing written")
    return cleaned


# -- the file ----------------------------------------------------------------------------------
def island(data: Any) -> str:
    """JSON that a ``<script type="application/json">`` holds as text whatever the strings hold."""
    text = orjson.dumps(data).decode("utf-8")
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render(kind: str, title: str, data: JSON) -> str:
    """The page for ``data`` (``kind``: ``cassettes``, ``divergence`` or ``diff``) as HTML text."""
    payload, strings = share_strings(data)
    document = {
        "kind": kind,
        "title": title,
        "generated": datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "llmvcr": release(),
        "strings": strings,
        "data": payload,
    }
    style = _static("page.css")
    script = "\n".join(_static(name) for name in SCRIPTS)
    csp = (
        f"default-src 'none'; img-src data:; style-src {_hash(style)}; script-src {_hash(script)}; "
        "base-uri 'none'; form-action 'none'"
    )
    slots = {
        "title": html.escape(title),
        "csp": csp,
        "style": style,
        "script": script,
        "data": island(document),
    }
    return _SLOT.sub(lambda m: slots[m.group(1)], _static("page.html"))


def write(path: str, kind: str, title: str, data: JSON) -> str:
    """Write the page to ``path`` (whole or not at all) and return the path."""
    atomic_write(path, render(kind, title, data).encode("utf-8"))
    return path
