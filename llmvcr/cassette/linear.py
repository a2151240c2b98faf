"""The linear cassette layout (format version 2): each message, system prompt and tool list once.

An agent loop sends its whole conversation again on every call, so a cassette that writes each
request in full grows with the square of the session, and a change to turn 3 shows in every later
entry of a PR diff. In the linear layout a request names the earlier entry it continues and
writes only what is new::

    body:
      system: {same_as: 0}     # the value entry 0 holds
      tools: {same_as: 0}
      messages:
        extends: 4             # entry 4's messages, then these
        append:
        - role: user
          content: ...

An MCP answer repeated whole (the same ``tools/list`` on every connection) is written once too: its
``response.body.result`` is ``{same_as: N}``, entry N's answer.

A reference names an earlier entry only (its position in ``entries``, from 0), so a writer can
add entries one at a time. Loading rebuilds every request in full before anything else sees it:
request hashes, matching, divergence diffs (``request.body.messages[12]``) and every match mode
see exactly what the full layout (format version 1) gives.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any, Literal

import orjson

from ..errors import CassetteFormatError

FULL_VERSION = 1  # every request written out in full
LINEAR_VERSION = 2  # requests may refer to earlier entries
FORMAT_VERSION = LINEAR_VERSION  # the newest format this llmvcr reads
Layout = Literal["linear", "full"]
LAYOUTS: tuple[str, ...] = ("linear", "full")
DEFAULT_LAYOUT: Layout = "linear"

# Conversation lists: Anthropic and OpenAI chat ``messages``, OpenAI responses ``input``, Gemini ``contents``.
LISTS = ("messages", "input", "contents")
# Values an agent sends unchanged on every call.
SHARED = (
    "system",
    "instructions",
    "systemInstruction",
    "system_instruction",
    "tools",
    "toolConfig",
    "tool_config",
    "response_format",
    "text",
    "output_config",
    "generationConfig",
)
_FIELDS = frozenset((*LISTS, *SHARED))
MIN_BYTES = 64  # a repeated value shorter than this (as JSON) is written again: a reference is no shorter


def represent_dict(dumper: Any, value: dict[Any, Any]) -> Any:
    """PyYAML's mapping, with a ``{same_as: N}`` reference on one line (as a PR diff reads best)."""
    flow = True if value.keys() == {"same_as"} else None
    return dumper.represent_mapping("tag:yaml.org,2002:map", value, flow_style=flow)


def layout_of(version: Any) -> Layout:
    """The layout a file of format ``version`` was written in."""
    return "linear" if version == LINEAR_VERSION else "full"


def _body(raw: Any) -> dict[str, Any] | None:
    request = raw.get("request") if isinstance(raw, dict) else None
    body = request.get("body") if isinstance(request, dict) else None
    return body if isinstance(body, dict) else None


def _with_body(raw: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    # New mappings around the shared values: the parsed document and the entries stay as they were.
    return {**raw, "request": {**raw["request"], "body": body}}


RESULT = "@result"  # the field name an MCP answer's ``response.body.result`` is known by


def _answer(raw: Any) -> dict[str, Any] | None:
    """An MCP entry's response body holding a ``result`` (the one response value shared)."""
    if not isinstance(raw, dict) or raw.get("provider") != "mcp":
        return None
    response = raw.get("response")
    body = response.get("body") if isinstance(response, dict) else None
    return body if isinstance(body, dict) and "result" in body else None


def _with_answer(raw: dict[str, Any], result: Any) -> dict[str, Any]:
    response = raw["response"]
    return {**raw, "response": {**response, "body": {**response["body"], "result": result}}}


def _unpack_answer(
    raw: Any, out: Any, full: dict[str, Any], get: Callable[[int], Any], position: int, path: str
) -> Any:
    """``out`` (``raw`` with its request unpacked) with its MCP answer resolved; ``full`` learns it."""
    answer = _answer(raw)
    if answer is None:
        return out
    value = answer["result"]
    if _reference(value) is not None:
        value = _resolve(value, RESULT, get, position, path)
        out = _with_answer(out, value)
    full[RESULT] = value
    return out


def _reference(value: Any) -> Mapping[str, Any] | None:
    if isinstance(value, dict) and (value.keys() == {"same_as"} or value.keys() == {"extends", "append"}):
        return value
    return None


# -- reading ------------------------------------------------------------------------------------------
def unpack(entries: list[Any], path: str) -> list[Any]:
    """The entries of a version-2 file with every reference replaced by the value it names.

    A broken reference raises ``CassetteFormatError`` naming the entry and the field. One pass in
    file order, for a file read whole (a first load checks every entry): :class:`Unpacker` gives the
    same entry by entry, but built on it this pass took over twice as long (9.2 against 3.8 ms for
    1,000 entries).
    """
    values: list[dict[str, Any]] = []  # per entry: field -> its full value
    out: list[Any] = []
    fields = _FIELDS
    for position, raw in enumerate(entries):
        body = _body(raw)
        full: dict[str, Any] = {}
        values.append(full)
        if body is None:
            out.append(_unpack_answer(raw, raw, full, values.__getitem__, position, path))
            continue
        changes: dict[str, Any] | None = None
        # the body's own keys, not every field name: a body holds a handful, the names are fourteen
        for name, value in body.items():
            if name not in fields:
                continue
            if _reference(value) is not None:
                value = _resolve(value, name, values.__getitem__, position, path)
                if changes is None:
                    changes = {}
                changes[name] = value
            full[name] = value
        unpacked = _with_body(raw, {**body, **changes}) if changes else raw
        out.append(_unpack_answer(raw, unpacked, full, values.__getitem__, position, path))
    return out


class Unpacker:
    """The entries of a version-2 file, each unpacked when first asked for (``entry(position)``).

    What :func:`unpack` gives, entry by entry: a test that plays 3 entries of a 1,000-entry file
    resolves the references of those 3 (and of the values they name), not of all 1,000. For a file
    checked whole before (a parse-cache hit: :func:`unpack` ran when it was stored); a broken
    reference still raises the same ``CassetteFormatError`` when its entry is asked for.
    """

    def __init__(self, entries: list[Any], path: str) -> None:
        self.entries = entries
        self.path = path
        self._values: dict[tuple[int, str], Any] = {}  # (entry, field) -> its full value

    def entry(self, position: int) -> Any:
        raw = self.entries[position]
        body = _body(raw)
        out = raw
        if body is not None:
            changes = {
                name: self._value(position, name)
                for name, value in body.items()
                if name in _FIELDS and _reference(value) is not None
            }
            out = _with_body(raw, {**body, **changes}) if changes else raw
        answer = _answer(raw)
        if answer is not None and _reference(answer["result"]) is not None:
            out = _with_answer(out, self._value(position, RESULT))
        return out

    def _value(self, position: int, name: str) -> Any:
        """Entry ``position``'s full ``name``: back along its references to a written value, then
        forward (a loop, not recursion: a 1,000-turn conversation is a chain of 1,000 ``extends``)."""
        values = self._values
        chain: list[tuple[int, Mapping[str, Any]]] = []
        at = position
        while (at, name) not in values:
            if name == RESULT:
                answer = _answer(self.entries[at])
                value = answer["result"] if answer is not None else _ABSENT
            else:
                body = _body(self.entries[at])
                value = body.get(name, _ABSENT) if body is not None else _ABSENT
            reference = _reference(value)
            if reference is None:
                values[(at, name)] = value
                break
            chain.append((at, reference))
            target = reference.get("same_as", reference.get("extends"))
            if isinstance(target, bool) or not isinstance(target, int) or not 0 <= target < at:
                _resolve(reference, name, lambda _: {}, at, self.path)  # raises: names the entry
            at = target
        for at, reference in reversed(chain):
            values[(at, name)] = _resolve(reference, name, lambda t: self._known(t, name), at, self.path)
        return values[(position, name)]

    def _known(self, target: int, name: str) -> Mapping[str, Any]:
        value = self._values[(target, name)]
        return {} if value is _ABSENT else {name: value}


_ABSENT = object()


def _resolve(
    reference: Mapping[str, Any],
    name: str,
    fields_of: Callable[[int], Mapping[str, Any]],
    position: int,
    path: str,
) -> Any:
    key = "same_as" if "same_as" in reference else "extends"
    field = f"response.body.result.{key}" if name == RESULT else f"request.body.{name}.{key}"
    target = reference[key]
    fix = "restore the file from version control or re-record the cassette"
    if isinstance(target, bool) or not isinstance(target, int) or not 0 <= target < position:
        earlier = f"0 to {position - 1}" if position else "none: this is the first entry"
        raise CassetteFormatError(
            path,
            f"refers to entry {target!r}, but a reference names an earlier entry by its position "
            f"({earlier}); {fix}",
            entry=position,
            field=field,
        )
    values = fields_of(target)
    if name not in values:
        raise CassetteFormatError(
            path, f"entry {target} has no {name!r} to refer to; {fix}", entry=position, field=field
        )
    base = values[name]
    if key == "same_as":
        return base
    append = reference["append"]
    if not isinstance(base, list) or not isinstance(append, list):
        what = f"entry {target}'s {name!r}" if not isinstance(base, list) else "'append'"
        raise CassetteFormatError(
            path, f"{what} is not a list, so it cannot be extended; {fix}", entry=position, field=field
        )
    return base + append


# -- writing ------------------------------------------------------------------------------------------
class Packer:
    """Writes entries in the linear layout, one after another, each referring only to those before.

    It remembers what the earlier entries hold (by digest, checked by equality before a reference
    is written), so the incremental writer packs each new entry without reading the file again.
    """

    def __init__(self) -> None:
        self.used = False  # a reference was written, or the file it was seeded from holds one
        self.count = 0  # entries seen: the position of the next one
        self._lists: dict[tuple[str, bytes], int] = {}  # (field, digest of the whole list) -> latest entry
        self._shared: dict[tuple[str, bytes], int] = {}  # (field, digest) -> first entry holding it
        self._values: list[dict[str, Any]] = []  # per entry: field -> its full value
        self._memo: dict[int, tuple[Any, bytes, int]] = {}  # id -> (value, digest, JSON size)
        self._seed: tuple[list[Any], str] | None = None  # entries of the file, not read yet

    @classmethod
    def of(cls, entries: list[Any], version: Any, path: str) -> Packer:
        """A packer that has seen the ``entries`` of a file of format ``version``, as stored.

        They are read when the first entry is packed: a writer of a full-layout file never does.
        """
        packer = cls()
        packer.used = version == LINEAR_VERSION
        packer._seed = (entries, path)
        return packer

    def _read_seed(self) -> None:
        if self._seed is not None:
            (entries, path), self._seed = self._seed, None
            for raw in unpack(entries, path) if self.used else entries:
                self.pack(raw)

    def copy(self) -> Packer:
        """An independent packer in the same state (the writer commits it once the file is written)."""
        other = Packer()
        other.used = self.used
        other._seed = self._seed
        other.count = self.count
        other._lists = dict(self._lists)
        other._shared = dict(self._shared)
        other._values = list(self._values)
        other._memo = self._memo  # values are never changed in place, so their digests stay true
        return other

    def pack(self, raw: Any) -> Any:
        """The next entry as the linear layout writes it (``raw`` itself when nothing repeats)."""
        self._read_seed()
        position = self.count
        self.count += 1
        full: dict[str, Any] = {}
        self._values.append(full)
        answer = _answer(raw)
        if answer is not None and _reference(answer["result"]) is None:
            result = full[RESULT] = answer["result"]
            same = self._same(RESULT, result, position)
            if same is not None:
                self.used = True
                raw = _with_answer(raw, same)
        body = _body(raw)
        if body is None:
            return raw
        changes: dict[str, Any] = {}
        for name in LISTS:
            value = body.get(name)
            if isinstance(value, list) and value:
                full[name] = value
                reference = self._extend(name, value, position)
                if reference is not None:
                    changes[name] = reference
        for name in SHARED:
            if name in body and _reference(body[name]) is None:
                value = full[name] = body[name]
                reference = self._same(name, value, position)
                if reference is not None:
                    changes[name] = reference
        if not changes:
            return raw
        self.used = True
        return _with_body(raw, {**body, **changes})

    def _digest(self, value: Any) -> tuple[bytes, int] | None:
        known = self._memo.get(id(value))
        if known is not None and known[0] is value:
            return known[1], known[2]
        try:  # plain JSON only: a value orjson cannot write (a non-string key) is never shared
            data = orjson.dumps(value)
        except (orjson.JSONEncodeError, TypeError):
            return None
        digest = hashlib.blake2b(data, digest_size=16).digest()
        self._memo[id(value)] = (value, digest, len(data))
        return digest, len(data)

    def _extend(self, name: str, value: list[Any], position: int) -> dict[str, Any] | None:
        prefixes: list[tuple[bytes, int]] = []  # (digest of value[:k+1], its JSON size)
        chain, size = b"", 0
        for item in value:
            digest = self._digest(item)
            if digest is None:
                return None
            chain = hashlib.blake2b(chain + digest[0], digest_size=16).digest()
            size += digest[1]
            prefixes.append((chain, size))
        found: dict[str, Any] | None = None
        for k in range(len(value), 0, -1):  # the longest earlier list this one starts with
            base = self._lists.get((name, prefixes[k - 1][0]))
            if base is None or prefixes[k - 1][1] < MIN_BYTES:
                continue
            if self._values[base][name] == value[:k]:  # equal, not just the same digest (NaN, collisions)
                found = {"same_as": base} if k == len(value) else {"extends": base, "append": value[k:]}
                break
        self._lists[(name, prefixes[-1][0])] = position
        return found

    def _same(self, name: str, value: Any, position: int) -> dict[str, Any] | None:
        digest = self._digest(value)
        if digest is None:
            return None
        first = self._shared.setdefault((name, digest[0]), position)
        if first == position or digest[1] < MIN_BYTES or self._values[first][name] != value:
            return None
        return {"same_as": first}


def pack(entries: list[Any]) -> tuple[list[Any], int]:
    """Full entries as the linear layout writes them, and the format version that file declares:
    2 when an entry refers to another, else 1 (the full layout, which every llmvcr release reads)."""
    packer = Packer()
    packed = [packer.pack(raw) for raw in entries]
    return packed, LINEAR_VERSION if packer.used else FULL_VERSION


def without(document: Mapping[str, Any], drop: set[int], path: str) -> list[Any]:
    """The entries of a cassette ``document`` but those at the positions ``drop``, as stored:
    in a linear file the later entries are rebuilt and packed again, so no reference breaks."""
    entries = document["entries"]
    if document.get("version") != LINEAR_VERSION:
        return [e for i, e in enumerate(entries) if i not in drop]
    return pack([e for i, e in enumerate(unpack(entries, path)) if i not in drop])[0]
