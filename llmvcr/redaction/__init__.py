"""What may reach disk: header allowlists, secret detection and user redaction hooks.

Headers are dropped unless allowlisted; every string in bodies, queries and stream events is
scanned for key-shaped text (``secret_shapes``) and the live client's own credentials (learned
from its headers, signed queries and URL userinfo, in every encoded form), replaced by
``<REDACTED:kind>``. A body that is not UTF-8 is scanned byte by byte. Redaction runs before
fingerprinting, on live and recorded requests alike.
"""

from __future__ import annotations

import base64
import binascii
import re
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..cassette.entries import Response
from ..cassette.values import Value
from ..errors import UnredactableBodyError
from ..matching.jsonpath import Path, blank, looks_like_path, parse_path
from ..wire.headers import CREDENTIAL_HEADERS, RESPONSE_HEADERS, body_credentials, is_credential_header
from . import known_clean
from .secret_shapes import (
    MIN_SECRET,
    MIN_SHAPE,
    credential_parts,
    decoded_base64,
    encoded_forms,
    may_hold_shape,
    secret_span,
    shapes_to_try,
)
from .split_secrets import redact_across

SECRET_QUERY_KEYS = frozenset(
    {"key", "api_key", "api-key", "apikey", "token", "access_token", "sig", "signature"}
)

_JSON_ESCAPED = re.compile(r'["\\\x00-\x1f\x7f]')


_GZIP = b"\x1f\x8b\x08"
_MAX_INFLATE = 64 << 20  # a bomb is read this far and no further


def gzip_members(data: bytes, limit: int = 8) -> Iterator[bytes]:
    """The inflated bytes of each gzip stream inside ``data`` (an uploaded ``.gz``), the first few."""
    start = data.find(_GZIP)
    while start >= 0 and limit:
        limit -= 1
        try:
            inner = zlib.decompressobj(wbits=31).decompress(data[start:], _MAX_INFLATE)
        except zlib.error:
            inner = b""  # three bytes that only look like a gzip header
        if inner:
            yield inner
        start = data.find(_GZIP, start + 1)


Rules = Iterable[str | re.Pattern[str]]  # what redact= and redact_keep= take


@dataclass(slots=True, eq=False, repr=False)
class Redactor(Value):
    """Secret scrubbing for one cassette: built-in patterns, known live secrets, user rules."""

    secrets: set[str] = field(default_factory=set)
    patterns: list[tuple[str, re.Pattern[str]]] = field(default_factory=list)
    filter_headers: frozenset[str] = frozenset()
    paths: list[list[str | int]] = field(default_factory=list)  # redact=["$.metadata.user_id"]
    keep: list[re.Pattern[str]] = field(default_factory=list)  # redact_keep=: look like keys, are not

    found: dict[str, str] = field(default_factory=dict)  # keys found by their shape, each form -> kind
    _ordered: tuple[tuple[str, str], ...] = field(default=(), repr=False)  # (form, kind), longest first
    _ordered_from: tuple[int, int] = field(default=(-1, -1), repr=False)
    _clean: set[str] = field(default_factory=set, repr=False)  # short strings found to hold nothing
    # the needles as bytes in a body's JSON text (None: one holds a character JSON escapes), and as a set
    _in_json: tuple[bytes, ...] | None = field(default=None, repr=False)
    _needle_set: frozenset[str] = field(default=frozenset(), repr=False)

    @classmethod
    def configured(cls, redact: Rules, filter_headers: Iterable[str], keep: Rules) -> Redactor:
        """A redactor for a cassette's ``redact``, ``filter_headers`` and ``redact_keep`` options."""
        return cls(
            patterns=compile_redactions(redact),
            filter_headers=frozenset(h.lower() for h in filter_headers),
            paths=compile_paths(redact),
            keep=compile_keep(keep),
        )

    def response(self, response: Response, where: str) -> Response:
        """``response`` as it may be stored (``where`` names it in an error)."""
        return Response(
            response.status,
            self.headers(response.headers.items(), RESPONSE_HEADERS, by_name=False),
            body=self.body(response.body, where),
            stream=self.events(response.stream) if response.stream is not None else None,
            truncated=response.truncated,
            failure=response.failure,
        )

    def learn(self, *values: str | None) -> None:
        """Remember credentials seen on a live request so each is scrubbed wherever it appears,
        in each form a server may echo it in (percent-encoded, base64); a ``Basic`` header's
        user and password too."""
        for value in values:
            if not value:
                continue
            whole, parts = credential_parts(value)
            if len(whole) >= MIN_SECRET:
                self.secrets.add(whole)
            for part in parts:
                if len(part) >= MIN_SECRET:
                    self.secrets |= encoded_forms(part)

    def _learn_shape(self, secret: str, kind: str) -> None:
        # A key found by its shape is scrubbed wherever it comes back (a stream event that lost the
        # words around it, a gateway echoing the path in base64), under the shape's own label.
        whole, parts = credential_parts(secret)
        for form in {whole}.union(*(encoded_forms(p) for p in parts if len(p) >= MIN_SECRET)):
            self.found.setdefault(form, kind)

    def learn_encoded(self, node: Any) -> None:
        """Learn each key shape ``node``'s strings hold only in base64, so every form of it is replaced."""
        if isinstance(node, dict):
            node = list(node.values())
        if isinstance(node, list):
            for item in node:
                self.learn_encoded(item)
        elif isinstance(node, str):
            for text in decoded_base64(node):
                for kind, pattern in shapes_to_try(text):
                    for match in pattern.finditer(text):
                        span = secret_span(pattern, match)
                        if span is not None and not any(k.fullmatch(text[slice(*span)]) for k in self.keep):
                            self._learn_shape(text[slice(*span)], kind)

    def _needles(self) -> tuple[tuple[str, str], ...]:
        size = (len(self.secrets), len(self.found))
        if self._ordered_from != size:
            labels = {**self.found, **dict.fromkeys(self.secrets, "api-key")}
            # a form before its parts: "Bearer abc" is replaced whole, not left as "Bearer <...>"
            self._ordered = tuple(sorted(labels.items(), key=lambda item: -len(item[0])))
            self._ordered_from = size
            self._clean.clear()  # a string clean before may hold what was just learned
            escaped = any(_JSON_ESCAPED.search(s) for s, _ in self._ordered)
            self._in_json = None if escaped else tuple(s.encode("utf-8") for s, _ in self._ordered)
            self._needle_set = frozenset(s for s, _ in self._ordered)
        return self._ordered

    def text(self, value: str) -> str:
        """``value`` with known secrets, the user's regexes and every built-in key shape replaced."""
        if len(value) < MIN_SECRET and not self.patterns:
            return value  # a stream's " word", a key like "type": nothing fits in it
        needles, learned = self._needles(), (len(self.secrets), len(self.found))
        if value in self._clean:
            return value
        original = value
        for secret, kind in needles:
            if secret in value:
                value = value.replace(secret, f"<REDACTED:{kind}>")
        for kind, pattern in self.patterns:
            value = pattern.sub(f"<REDACTED:{kind}>", value)
        if len(value) >= MIN_SHAPE:
            for kind, pattern in shapes_to_try(value):
                value = pattern.sub(self._replacer(kind, pattern), value)
        # a stream repeats its keys and event types: remember the short ones that hold nothing
        if len(value) <= 64 and value == original and learned == (len(self.secrets), len(self.found)):
            if len(self._clean) >= 4096:
                self._clean.clear()
            self._clean.add(value)
        return value

    def _replacer(self, kind: str, pattern: re.Pattern[str]) -> Callable[[re.Match[str]], str]:
        """A built-in shape's match, its secret replaced unless a ``redact_keep`` pattern covers it."""

        def replace(match: re.Match[str]) -> str:
            whole = match.group(0)
            span = secret_span(pattern, match)
            if span is None:
                return whole
            start, end = span
            secret = match.string[start:end]
            if any(k.fullmatch(secret) or k.fullmatch(whole) for k in self.keep):
                return whole
            self._learn_shape(secret, kind)
            offset = match.start()
            return f"{whole[: start - offset]}<REDACTED:{kind}>{whole[end - offset :]}"

        return replace

    def binary(self, data: bytes) -> bytes:
        """Bytes that are not UTF-8 (an uploaded file): scanned as Latin-1, where each byte is one
        character, so known secrets and key shapes are replaced in place and the rest is untouched."""
        for secret, kind in self._needles():  # as UTF-8 bytes: a secret that is not ASCII too
            needle = secret.encode("utf-8")
            if needle in data:
                data = data.replace(needle, f"<REDACTED:{kind}>".encode("ascii"))
        if not self.patterns and not may_hold_shape(data):
            return data
        return self.text(data.decode("latin-1")).encode("latin-1")

    def tree(self, node: Any) -> Any:
        if isinstance(node, str):
            return self.text(node)
        if isinstance(node, dict):
            return {self.text(k) if isinstance(k, str) else k: self.tree(v) for k, v in node.items()}
        if isinstance(node, list):
            return [self.tree(v) for v in node]
        return node

    def body(self, node: Any, where: str = "the body") -> Any:
        """A request or response body: the values at the user's JSON paths, then every string.

        Raises ``UnredactableBodyError`` (its message starting with ``where``) when a secret sits
        inside compressed bytes.
        """
        if node is None:
            return None
        self.learn(*body_credentials(node))  # a token handed on to an MCP server, whatever its shape
        if isinstance(node, dict) and len(node) == 1 and isinstance(node.get("base64"), str):
            return self._base64_body(node, where)
        if not self.patterns and not self.paths and not self._may_change(node):
            return node
        for tokens in self.paths:
            node = blank(node, tokens)
        return self.tree(node)

    def _base64_body(self, node: dict[str, str], where: str) -> Any:
        """``{"base64": ...}``, how a body that is not UTF-8 is stored: its bytes are scanned."""
        try:
            data = base64.b64decode(node["base64"], validate=True)
        except (binascii.Error, ValueError):
            return self.tree(node)  # not llmvcr's encoding: a JSON body that happens to look so
        redacted = self.binary(data)
        for inner in gzip_members(redacted):
            if self.binary(inner) != inner:
                raise UnredactableBodyError(
                    f"{where}: a gzip-compressed part holds a credential or something shaped like a key, "
                    f"which cannot be replaced inside the compressed bytes. Nothing was written. Send the "
                    f"file uncompressed so llmvcr can replace the key, or use a file without a real key."
                )
        return node if redacted == data else {"base64": base64.b64encode(redacted).decode("ascii")}

    def _may_change(self, node: Any) -> bool:
        """Whether ``tree(node)`` could change anything, judged by one scan of its JSON text.

        Each string of the body appears verbatim in its JSON text, and neither a secret-shape
        prefix nor a known credential free of JSON escapes can hide behind an escape.
        """
        self._needles()
        needles = self._needle_set
        try:
            data = orjson.dumps(node)
        except TypeError:
            return True
        unknown: list[str] = []
        if len(data) >= known_clean.LONG:  # a long prompt scanned on an earlier call is left out
            small: list[Any] = []
            known_clean.split(node, needles, small, unknown)
            data = orjson.dumps([small, unknown])
        if may_hold_shape(data):
            return True
        in_json = self._in_json
        if in_json is None or any(needle in data for needle in in_json):
            return True
        if unknown:
            known_clean.remember(unknown, needles)
        return False

    def events(self, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Stream events: each event's data is a body of its own; then a secret that a stream's
        text pieces spell out between them (a model repeating a key) is replaced across them."""
        if not self.paths:
            out: list[dict[str, Any]] = self.tree(events)
        else:
            out = [
                self.tree({**ev, "data": self.body(ev.get("data"))} if "data" in ev else ev) for ev in events
            ]
        redact_across(out, self.spans)  # ``tree`` built new containers: editing them is safe
        return out

    def spans(self, text: str) -> list[tuple[int, int, str]]:
        """Where ``text`` holds a known secret or a key shape: ``(start, end, kind)``, not overlapping."""
        found = []
        for secret, kind in self._needles():
            at = text.find(secret)
            while at >= 0:
                found.append((at, at + len(secret), kind))
                at = text.find(secret, at + 1)
        for kind, pattern in [*self.patterns, *shapes_to_try(text)]:
            for match in pattern.finditer(text):
                span = secret_span(pattern, match)
                if span and not any(k.fullmatch(text[span[0] : span[1]]) for k in self.keep):
                    found.append((*span, kind))
        kept: list[tuple[int, int, str]] = []
        for start, end, kind in sorted(found, key=lambda f: (f[0], -f[1])):
            if not kept or start >= kept[-1][1]:
                kept.append((start, end, kind))
        return kept

    def headers(
        self, headers: Iterable[tuple[str, str]], allow: frozenset[str], *, by_name: bool = True
    ) -> dict[str, str]:
        """The allowed headers, redacted; credential headers learned and dropped. ``by_name=False``
        (responses, whose ``x-ratelimit-remaining-tokens`` hold counts) learns only the known ones."""
        kept: dict[str, str] = {}
        for name, value in headers:
            lower = name.lower()
            if lower in CREDENTIAL_HEADERS or (by_name and is_credential_header(lower)):
                self.learn(value)
                continue
            if lower in allow and lower not in self.filter_headers:
                kept[lower] = self.text(value)
        return kept

    def query(self, pairs: Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
        out = []
        for key, value in pairs:
            if key.lower() in SECRET_QUERY_KEYS:
                self.learn(value)
                value = "<REDACTED:query>"
            out.append((key, self.text(value)))
        return tuple(sorted(out))


def compile_redactions(rules: Iterable[str | re.Pattern[str]]) -> list[tuple[str, re.Pattern[str]]]:
    """The regex rules of ``redact=`` (a string starting with ``$.`` is a JSON path instead)."""
    out = []
    for rule in rules:
        if isinstance(rule, str) and rule.startswith("$"):
            continue
        if isinstance(rule, str) and looks_like_path(rule):
            raise ValueError(
                f"redact: {rule!r} reads like a JSON path, but without '$.' it would be a regex; "
                f"write '$.{rule}' for the path, or r'{rule}' as re.compile(...) if you mean the regex"
            )
        try:
            out.append(("custom", rule if isinstance(rule, re.Pattern) else re.compile(rule)))
        except re.error as err:
            raise ValueError(f"redact: {rule!r} is not a valid regular expression ({err})") from None
    return out


def compile_keep(rules: Iterable[str | re.Pattern[str]]) -> list[re.Pattern[str]]:
    """``redact_keep=``: regexes for text that has a key's shape but is not one (a test fixture's
    fake key, a documented example); a built-in shape's match that one of them covers is kept."""
    return [_regex(rule, "redact_keep") for rule in rules]


def _regex(rule: str | re.Pattern[str], option: str) -> re.Pattern[str]:
    try:
        return rule if isinstance(rule, re.Pattern) else re.compile(rule)
    except re.error as err:
        raise ValueError(f"{option}: {rule!r} is not a valid regular expression ({err})") from None


def compile_paths(rules: Iterable[str | re.Pattern[str]]) -> list[Path]:
    """The JSON-path rules of ``redact=``: ``$.metadata.user_id``, ``$.messages[*].name``."""
    return [
        parse_path(rule, option="redact") for rule in rules if isinstance(rule, str) and rule.startswith("$")
    ]


def find_secrets(node: Any, path: str = "") -> Iterator[tuple[str, str, str]]:
    """Every ``(path, kind, excerpt)`` in a JSON tree that looks like a credential."""
    if isinstance(node, str):
        seen: set[int] = set()  # a key that two shapes match is reported once, as redaction does
        for kind, pattern in shapes_to_try(node):
            for m in pattern.finditer(node):
                span = secret_span(pattern, m)
                if span is not None and not seen.intersection(range(*span)):
                    seen.update(range(*span))
                    yield path, kind, node[span[0] : span[1]][:12] + "…"
    elif isinstance(node, dict):
        for k, v in node.items():
            if isinstance(k, str) and k.lower() in CREDENTIAL_HEADERS and isinstance(v, str):
                yield f"{path}.{k}", "credential-header", v[:6] + "…"
            elif isinstance(k, str) and k.lower() in CREDENTIAL_HEADERS and isinstance(v, list):
                # vcrpy stores every header as a list of values: ``set-cookie: [a, b]``
                for i, item in enumerate(v):
                    if isinstance(item, str) and item:
                        yield f"{path}.{k}[{i}]", "credential-header", item[:6] + "…"
            else:
                yield from find_secrets(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from find_secrets(v, f"{path}[{i}]")


BeforeRecord = Callable[[Any], Any]


def header_items(headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> Iterable[tuple[str, str]]:
    return headers.items() if isinstance(headers, Mapping) else headers
