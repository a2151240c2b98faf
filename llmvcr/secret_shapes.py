"""What a secret looks like: the built-in key shapes, and the forms a known secret travels in.

A shape is a regex for text that is a credential whatever client sent it (``sk-ant-...``, an
AWS secret access key next to the words that name it). A known secret (one llmvcr saw in a
credential header, a signed query or a URL's userinfo) is scrubbed in every form a server may
echo it in: raw, percent-encoded, and base64 at any byte alignment inside a longer base64 text.
"""

from __future__ import annotations

import base64
import math
import re
from collections import Counter
from collections.abc import Iterator
from urllib.parse import quote, quote_plus

# A pattern with a ``secret`` group names the context it needs around the key; only the group is
# replaced, so "aws_secret_access_key = <REDACTED:aws-secret-key>" still reads as it did.
SECRET_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # A key has digits in it; "sk-learn-pipeline-examples" or "Bearer authentication" in prose does not.
    # Not inside a word: the anthropic-beta value "task-budgets-2026-03-13" holds no key.
    ("anthropic-key", re.compile(r"(?<![A-Za-z0-9])sk-ant-(?=[A-Za-z_\-]*\d)[A-Za-z0-9_\-]{8,}")),
    (
        "openai-key",
        re.compile(
            r"(?<![A-Za-z0-9])sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{16,}|(?!ant-)(?=[A-Za-z_\-]*\d)[A-Za-z0-9_\-]{16,})"
        ),
    ),
    (
        "bearer",
        re.compile(r"Bearer\s+(?:(?=[A-Za-z._~+/=\-]*\d)[A-Za-z0-9._~+/=\-]{8,}|[A-Za-z0-9._~+/=\-]{16,})"),
    ),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    (
        # 40 characters of base64 with upper case, lower case and a digit (a hex digest has no upper
        # case), within 40 characters after "aws" or "secret" on the same line.
        "aws-secret-key",
        re.compile(
            r"(?i:aws|secret)[^\n]{0,40}?(?<![A-Za-z0-9/+])"
            r"(?P<secret>(?=[A-Za-z0-9/+]{0,39}[A-Z])(?=[A-Za-z0-9/+]{0,39}[a-z])(?=[A-Za-z0-9/+]{0,39}\d)"
            r"[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
        ),
    ),
    ("gcp-api-key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")),
    (
        "private-key",
        re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----(?:.*?-----END [A-Z ]*PRIVATE KEY-----)?", re.S),
    ),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})")),
    ("slack-token", re.compile(r"\bxox[baprs]-[A-Za-z0-9-]{10,}")),
    (
        # A value assigned to a word that names a credential, when it reads as random: 20 or more
        # characters with upper case, lower case and digits, no dot (``Client.AuthParams``), and
        # ``MIN_ENTROPY`` bits per character (checked by ``secret_span``).
        "secret",
        re.compile(
            r"(?i:api[_-]?key|secret|token|passw(?:or)?d|credential|auth)[\"']?\s*[:=]\s*[\"']?"
            r"(?P<secret>(?=[\w\-+/=]{0,80}[A-Z])(?=[\w\-+/=]{0,80}[a-z])(?=[\w\-+/=]{0,80}\d)"
            r"[\w\-+/=]{20,})(?![\w\-+/=.])"
        ),
    ),
)
# Text without one of these cannot hold a shape: one cheap scan skips the patterns.
QUICK = re.compile(
    r"sk-|Bearer|AKIA|ASIA|AIza|eyJ|PRIVATE KEY|gh[pousr]_|github_pat_|xox[baprs]-|(?i:aws|secret)"
    r"|(?i:key|token|passw(?:or)?d|credential|auth)[\"']?\s*[:=]"
)
QUICK_BYTES = re.compile(QUICK.pattern.encode("ascii"))

_ASSIGNED = SECRET_PATTERNS[-1][1]
MIN_SECRET = 6  # shorter values are learned as nothing: they would blank ordinary words
_MIN_BASE64_CORE = 8
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9_-]{0,20})\s+(\S+)")


MIN_ENTROPY = 4.0  # bits per character: a random base64 token has ~5, "Authorization_Header_2" ~3.7


def secret_span(pattern: re.Pattern[str], match: re.Match[str]) -> tuple[int, int] | None:
    """The part of a shape's match that is the secret (the ``secret`` group when it has one), or
    None when the match is not one after all (an assigned value that does not read as random)."""
    if "secret" not in pattern.groupindex:
        return match.span()
    if pattern is _ASSIGNED and _entropy(match.group("secret")) < MIN_ENTROPY:
        return None
    return match.span("secret")


def _entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def credential_parts(value: str) -> Iterator[str]:
    """A credential header value and what it carries: ``Basic dXNlcjpwYXNz`` is also the token,
    ``user:pass``, ``user`` and ``pass``; ``Bearer abc`` is also ``abc``."""
    value = value.strip()
    yield value
    scheme = _SCHEME.fullmatch(value)
    if scheme is None:
        return
    token = scheme.group(2)
    yield token
    if scheme.group(1).lower() == "basic":
        try:
            pair = base64.b64decode(token, validate=True).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return
        user, _, password = pair.partition(":")
        yield from (pair, user, password)


def encoded_forms(secret: str) -> set[str]:
    """``secret`` as a server may echo it: raw, percent-encoded (either case), ``+`` for spaces,
    and base64 (standard and URL-safe) as it reads wherever its bytes start inside a longer text."""
    forms = {secret, quote(secret, safe=""), quote(secret), quote_plus(secret)}
    forms |= {re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), f) for f in list(forms)}
    raw = secret.encode("utf-8")
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        forms.add(encode(raw).decode("ascii").rstrip("="))
        for k in (0, 1, 2):  # the characters that only the secret's own bits decide
            text = encode(b"\0" * k + raw).decode("ascii")
            core = text[-(-8 * k // 6) : 8 * (k + len(raw)) // 6]
            if len(core) >= _MIN_BASE64_CORE:
                forms.add(core)
    return {f for f in forms if len(f) >= MIN_SECRET}
