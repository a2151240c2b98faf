"""What may reach disk: header allowlists, secret detection and user redaction hooks.

Headers are dropped unless allowlisted; every string in bodies, queries and stream events is
scanned for key-shaped text and the live client's own credentials, replaced by
``<REDACTED:kind>``. Redaction runs before fingerprinting, on live and recorded requests alike.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from .jsonpath import Path, blank, looks_like_path, parse_path

REQUEST_HEADERS = frozenset({"anthropic-version", "anthropic-beta", "openai-beta", "content-type"})
RESPONSE_HEADERS = frozenset(
    {"content-type", "request-id", "x-request-id", "retry-after", "retry-after-ms", "x-should-retry"}
)
CREDENTIAL_HEADERS = frozenset(
    {
        "authorization",
        "x-api-key",
        "api-key",
        "cookie",
        "set-cookie",
        "proxy-authorization",
        "x-goog-api-key",
        "openai-organization",
        "openai-project",
        "anthropic-user-profile-id",
    }
)
SECRET_QUERY_KEYS = frozenset(
    {"key", "api_key", "api-key", "apikey", "token", "access_token", "sig", "signature"}
)

SECRET_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # A key has digits in it; "sk-learn-pipeline-examples" or "Bearer authentication" in prose does not.
    ("anthropic-key", re.compile(r"sk-ant-(?=[A-Za-z_\-]*\d)[A-Za-z0-9_\-]{8,}")),
    (
        "openai-key",
        re.compile(
            r"sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{16,}|(?!ant-)(?=[A-Za-z_\-]*\d)[A-Za-z0-9_\-]{16,})"
        ),
    ),
    (
        "bearer",
        re.compile(r"Bearer\s+(?:(?=[A-Za-z._~+/=\-]*\d)[A-Za-z0-9._~+/=\-]{8,}|[A-Za-z0-9._~+/=\-]{16,})"),
    ),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("gcp-api-key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")),
    (
        "private-key",
        re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----(?:.*?-----END [A-Z ]*PRIVATE KEY-----)?", re.S),
    ),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})")),
    ("slack-token", re.compile(r"\bxox[baprs]-[A-Za-z0-9-]{10,}")),
)
_QUICK = re.compile(r"sk-|Bearer|AKIA|ASIA|AIza|eyJ|PRIVATE KEY|gh[pousr]_|github_pat_|xox[baprs]-")
_QUICK_BYTES = re.compile(_QUICK.pattern.encode("ascii"))
_JSON_ESCAPED = re.compile(r'["\\\x00-\x1f\x7f]')
_CREDENTIAL_WORDS = re.compile(r"auth|key|token|secret|signature|cookie|password", re.I)


def is_credential_header(name: str) -> bool:
    """A header that carries a credential: a known one, or one whose name says so (``X-Custom-Auth``)."""
    lower = name.lower()
    return lower in CREDENTIAL_HEADERS or bool(_CREDENTIAL_WORDS.search(lower))


@dataclass(slots=True)
class Redactor:
    """Secret scrubbing for one cassette: built-in patterns, known live secrets, user rules."""

    secrets: set[str] = field(default_factory=set)
    patterns: list[tuple[str, re.Pattern[str]]] = field(default_factory=list)
    filter_headers: frozenset[str] = frozenset()
    paths: list[list[str | int]] = field(default_factory=list)  # redact=["$.metadata.user_id"]
    keep: list[re.Pattern[str]] = field(default_factory=list)  # redact_keep=: look like keys, are not

    def learn(self, value: str | None) -> None:
        """Remember a credential seen on a live request so it is scrubbed wherever it appears."""
        if value:
            value = value.strip()
            if value.lower().startswith("bearer "):
                value = value[7:].strip()
            if len(value) >= 6:
                self.secrets.add(value)

    def text(self, value: str) -> str:
        for secret in self.secrets:
            if secret in value:
                value = value.replace(secret, "<REDACTED:api-key>")
        for kind, pattern in self.patterns:
            value = pattern.sub(f"<REDACTED:{kind}>", value)
        if _QUICK.search(value):
            for kind, pattern in SECRET_PATTERNS:
                value = pattern.sub(self._replacer(kind) if self.keep else f"<REDACTED:{kind}>", value)
        return value

    def _replacer(self, kind: str) -> Callable[[re.Match[str]], str]:
        """A built-in shape's match is kept when one of the user's ``redact_keep`` patterns covers it."""

        def replace(match: re.Match[str]) -> str:
            text = match.group(0)
            return text if any(k.fullmatch(text) for k in self.keep) else f"<REDACTED:{kind}>"

        return replace

    def tree(self, node: Any) -> Any:
        if isinstance(node, str):
            return self.text(node)
        if isinstance(node, dict):
            return {self.text(k) if isinstance(k, str) else k: self.tree(v) for k, v in node.items()}
        if isinstance(node, list):
            return [self.tree(v) for v in node]
        return node

    def body(self, node: Any) -> Any:
        """A request or response body: the values at the user's JSON paths, then every string."""
        if node is None:
            return None
        if not self.patterns and not self.paths and not self._may_change(node):
            return node
        for tokens in self.paths:
            node = blank(node, tokens)
        return self.tree(node)

    def _may_change(self, node: Any) -> bool:
        """Whether ``tree(node)`` could change anything, judged by one scan of its JSON text.

        Each string of the body appears verbatim in its JSON text, and neither a secret-shape
        prefix nor a known credential free of JSON escapes can hide behind an escape.
        """
        try:
            data = orjson.dumps(node)
        except TypeError:
            return True
        if _QUICK_BYTES.search(data):
            return True
        return any(_JSON_ESCAPED.search(s) or s.encode("utf-8") in data for s in self.secrets)

    def events(self, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Stream events: each event's data is a body of its own."""
        if not self.paths:
            return self.tree(events)  # type: ignore[no-any-return]
        return [self.tree({**ev, "data": self.body(ev.get("data"))} if "data" in ev else ev) for ev in events]

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
        if _QUICK.search(node):
            for kind, pattern in SECRET_PATTERNS:
                for m in pattern.finditer(node):
                    yield path, kind, m.group(0)[:12] + "…"
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
