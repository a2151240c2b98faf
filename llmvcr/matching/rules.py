"""Canonical JSON, the request hash, matchers, ignore paths and placeholders.

A fingerprint is the canonical JSON of ``{matcher name: value}`` for the matchers in force,
taken over the normalised request (``Request.normalised()``); its SHA-256 is the key of a
dict, so matching costs one hash whatever the matchers are. A multipart body counts by its parts
(``multipart.canonical_body``): the random boundary the HTTP library picks is not part of the request.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from ..cassette.values import FrozenValue
from .jsonpath import drop, parse_path
from .multipart import canonical_body

Normalised = dict[str, Any]
MatcherFn = Callable[[Normalised], Any]
MatcherSpec = str | MatcherFn

DEFAULT_MATCH_ON: tuple[str, ...] = ("method", "path", "body")


def canonical_json(value: Any) -> bytes:
    """Sorted keys, no insignificant whitespace, UTF-8."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # integers beyond 64 bits, non-string keys: the slow, total encoder
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def hash_bytes(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _body(r: Normalised) -> dict[str, Any]:
    body = r.get("body")
    return body if isinstance(body, dict) else {}


def _path(r: Normalised) -> str:
    query = r.get("query") or []
    if not query:
        return str(r["path"])
    return str(r["path"]) + "?" + "&".join(f"{k}={v}" for k, v in sorted(map(tuple, query)))


def _messages(r: Normalised) -> Any:
    body = _body(r)
    if "messages" in body:
        return [
            m
            for m in body["messages"]
            if not (isinstance(m, dict) and m.get("role") in ("system", "developer"))
        ]
    return body.get("input")


def _system(r: Normalised) -> Any:
    body = _body(r)
    if "system" in body:
        return body["system"]
    if "instructions" in body:
        return body["instructions"]
    found = [
        m.get("content")
        for m in body.get("messages") or []
        if isinstance(m, dict) and m.get("role") in ("system", "developer")
    ]
    return found or None


def _text_of(content: Any) -> Any:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)]
        return "\n".join(texts) if texts else content
    return content


def last_user_message(r: Normalised) -> Any:
    """The text of the last user turn (Anthropic and OpenAI chat, or the Responses ``input``); for a
    tool call (``@llmvcr.tool``), which has no conversation, its name and arguments."""
    body = _body(r)
    if r.get("method") == "tool":
        return [r.get("path"), body.get("arguments")]
    messages = body.get("messages")
    if messages is None:
        value = body.get("input")
        if isinstance(value, list):
            messages = value
        else:
            return value
    for message in reversed(messages or []):
        if isinstance(message, dict) and message.get("role") == "user":
            return _text_of(message.get("content"))
    return None


BUILTIN_MATCHERS: dict[str, MatcherFn] = {
    "method": lambda r: r["method"],
    "path": _path,
    "query": lambda r: sorted(map(list, r.get("query") or [])),
    "headers": lambda r: r.get("headers") or {},
    "body": lambda r: canonical_body(r.get("body")),
    "model": lambda r: _body(r).get("model"),
    "messages": _messages,
    "system": _system,
    "tools": lambda r: _body(r).get("tools"),
    "params": lambda r: {
        k: v for k, v in _body(r).items() if k not in ("messages", "system", "tools", "input", "instructions")
    },
    "last_user_message": last_user_message,
    "stream": lambda r: bool(_body(r).get("stream")),
}
_registry_lock = threading.Lock()


def register_matcher(name: str, fn: MatcherFn) -> None:
    """Make ``fn`` (normalised request -> JSON-able value) usable by name in ``match_on``."""
    if not callable(fn):
        raise ValueError(f"register_matcher({name!r}, ...): the matcher must be callable")
    with _registry_lock:
        BUILTIN_MATCHERS[name] = fn


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Placeholder(FrozenValue):
    """Volatile text inside prompts (a date, a UUID) replaced by ``<name>`` before fingerprinting."""

    pattern: re.Pattern[str]
    name: str

    def apply(self, text: str) -> str:
        return self.pattern.sub(f"<{self.name}>", text)


def placeholder(regex: str, name: str) -> Placeholder:
    """A placeholder for volatile text: a value to pass as ``placeholders=[...]``; it registers nothing.

    >>> date = llmvcr.placeholder(r"\\d{4}-\\d{2}-\\d{2}", "date")
    >>> llmvcr.use_cassette("dated", placeholders=[date])
    Now "Today is 2026-12-02" and "Today is 2027-01-05" fingerprint the same in that cassette only.
    For every cassette of a test module or project, return it from the ``llmvcr_config`` fixture.
    """
    return Placeholder(re.compile(regex), name)


def _substitute(node: Any, placeholders: Sequence[Placeholder]) -> Any:
    if isinstance(node, str):
        for p in placeholders:
            node = p.apply(node)
        return node
    if isinstance(node, dict):
        return {k: _substitute(v, placeholders) for k, v in node.items()}
    if isinstance(node, list):
        return [_substitute(v, placeholders) for v in node]
    return node


class Fingerprinter:
    """Turns a normalised request into its ``sha256:`` request hash under a matcher configuration."""

    def __init__(
        self,
        match_on: Iterable[MatcherSpec] = DEFAULT_MATCH_ON,
        ignore: Iterable[str] = (),
        placeholders: Iterable[Placeholder] | None = None,
    ) -> None:
        self.match_on = tuple(match_on)
        self._fns: list[tuple[str, MatcherFn]] = []
        for i, spec in enumerate(self.match_on):
            if isinstance(spec, str):
                if spec not in BUILTIN_MATCHERS:
                    valid = ", ".join(sorted(BUILTIN_MATCHERS))
                    raise ValueError(f"unknown matcher {spec!r} in match_on; valid: {valid}, or a callable")
                self._fns.append((spec, BUILTIN_MATCHERS[spec]))
            elif callable(spec):
                self._fns.append((f"{getattr(spec, '__name__', 'custom')}#{i}", spec))
            else:
                raise ValueError(f"match_on entries are matcher names or callables, not {spec!r}")
        self.ignore = tuple(ignore)
        self._ignore_tokens = [parse_path(p, option="ignore") for p in self.ignore]
        # Only the placeholders given here: no process-wide list another cassette could leave behind.
        self.placeholders: tuple[Placeholder, ...] = tuple(placeholders or ())

    @property
    def is_default(self) -> bool:
        """True when hashes equal the ones stored in cassettes (so the stored index can be used)."""
        return self.match_on == DEFAULT_MATCH_ON and not self._ignore_tokens and not self.placeholders

    def prepare(self, normalised: Normalised) -> Normalised:
        """The request as matchers see it: ignore paths dropped, placeholders substituted."""
        placeholders = self.placeholders
        if not self._ignore_tokens and not placeholders:
            return normalised
        body = normalised.get("body")
        if self._ignore_tokens and isinstance(body, (dict, list)):
            body = orjson.loads(canonical_json(body))
            for tokens in self._ignore_tokens:
                if tokens and tokens[0] == "body":
                    tokens = tokens[1:]
                drop(body, tokens)
        if placeholders:
            body = _substitute(body, placeholders)
        return {**normalised, "body": body}

    def fingerprint(self, normalised: Normalised) -> dict[str, Any]:
        prepared = self.prepare(normalised)
        return {name: fn(prepared) for name, fn in self._fns}

    def request_hash(self, normalised: Normalised) -> str:
        return hash_bytes(canonical_json(self.fingerprint(normalised)))


DEFAULT_FINGERPRINTER = Fingerprinter()


def default_request_hash(normalised: Normalised) -> str:
    """The hash stored in cassette files: method, path and body."""
    body = normalised.get("body")
    if isinstance(body, str) or (isinstance(body, dict) and len(body) == 1 and "base64" in body):
        body = canonical_body(body)  # only a text or a base64 body can be multipart
    return hash_bytes(
        canonical_json({"method": normalised["method"], "path": _path(normalised), "body": body})
    )
