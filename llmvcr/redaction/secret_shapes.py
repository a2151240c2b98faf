"""What a secret looks like: the built-in key shapes, and the forms a known secret travels in.

A shape is a regex for text that is a credential whatever client sent it (``sk-ant-...``, an
AWS secret access key next to the words that name it). A known secret (one llmvcr saw in a
credential header, a signed query or a URL's userinfo) is scrubbed in every form a server may
echo it in: raw, percent-encoded, and base64 at any byte alignment inside a longer base64 text.
"""

from __future__ import annotations

import base64
import binascii
import functools
import math
import re
from collections import Counter
from collections.abc import Iterator
from urllib.parse import quote, quote_plus

# Shapes that are keys wherever they stand. The shapes are compiled when text first shows a sign of
# one (``_shapes``): a run whose bodies hold none never compiles them.
_KEY_SHAPES: tuple[tuple[str, str], ...] = (
    # A key has digits in it; "sk-learn-pipeline-examples" or "Bearer authentication" in prose does not.
    # Not inside a word: the anthropic-beta value "task-budgets-2026-03-13" holds no key.
    ("anthropic-key", r"(?<![A-Za-z0-9])sk-ant-(?=[A-Za-z_\-]*\d)[A-Za-z0-9_\-]{8,}"),
    (
        "openai-key",
        r"(?<![A-Za-z0-9])sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{16,}|(?!ant-)(?=[A-Za-z_\-]*\d)[A-Za-z0-9_\-]{16,})",
    ),
    ("bearer", r"Bearer\s+(?:(?=[A-Za-z._~+/=\-]*\d)[A-Za-z0-9._~+/=\-]{8,}|[A-Za-z0-9._~+/=\-]{16,})"),
    ("aws-access-key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("gcp-api-key", r"\bAIza[0-9A-Za-z_\-]{35}\b"),
    ("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    ("private-key", r"(?s)-----BEGIN [A-Z ]*PRIVATE KEY-----(?:.*?-----END [A-Z ]*PRIVATE KEY-----)?"),
    ("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})"),
    ("slack-token", r"\bxox[baprs]-[A-Za-z0-9-]{10,}"),
)
# Text without one of these cannot hold a shape above: one scan skips them all.
_SIGNS = re.compile(r"sk-|Bearer|AKIA|ASIA|AIza|eyJ|PRIVATE KEY|gh[pousr]_|github_pat_|xox[baprs]-")

# Shapes that are keys only after words that name one. Each regex starts at the key (a scan skips
# along as for a literal prefix); the words just before it are checked by ``secret_span``, which
# gives the ``secret`` group alone, so "aws_secret_access_key = <REDACTED:aws-secret-key>" still
# reads as it did. A shape is tried only on text that holds one of its words at all.
_CONTEXT_SHAPES: tuple[tuple[str, str], ...] = (
    (
        # 40 characters of base64 with upper case, lower case and a digit (a hex digest has no upper
        # case), within 40 characters after "aws" or "secret" on the same line.
        "aws-secret-key",
        r"(?<![A-Za-z0-9/+])(?P<secret>(?=[A-Za-z0-9/+]{0,39}[A-Z])(?=[A-Za-z0-9/+]{0,39}[a-z])"
        r"(?=[A-Za-z0-9/+]{0,39}\d)[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
    ),
    (
        # A value assigned to a word that names a credential, when it reads as random: 20 or more
        # characters with upper case, lower case and digits, no dot (``Client.AuthParams``), and
        # ``MIN_ENTROPY`` bits per character.
        "secret",
        r"[:=]\s*\\?[\"']?(?P<secret>(?=[\w\-+/=]{0,80}[A-Z])(?=[\w\-+/=]{0,80}[a-z])(?=[\w\-+/=]{0,80}\d)"
        r"[\w\-+/=]{20,})(?![\w\-+/=.])",
    ),
)
_BEFORE = {
    "aws-secret-key": r"(?i:aws|secret)[^\n]{0,40}\Z",
    "secret": r"(?i:key|secret|token|passw(?:or)?d|credential|auth)[\"']?\s*\Z",
}
_CONTEXT_KINDS = frozenset(kind for kind, _ in _CONTEXT_SHAPES)
_NAMES = ("key", "secret", "token", "password", "passwd", "credential", "auth")  # _BEFORE's, lower case
Shape = tuple[str, re.Pattern[str]]  # (kind, compiled regex)


@functools.cache
def _shapes() -> tuple[tuple[Shape, ...], tuple[Shape, ...], dict[int, str]]:
    """The key shapes and the context shapes compiled, and each context shape's kind by its id."""
    keys = tuple((kind, re.compile(source)) for kind, source in _KEY_SHAPES)
    context = tuple((kind, re.compile(source)) for kind, source in _CONTEXT_SHAPES)
    return keys, context, {id(pattern): kind for kind, pattern in context}


MIN_SECRET = 6  # shorter values are learned as nothing: they would blank ordinary words
MIN_SHAPE = 15  # no built-in shape matches shorter text ("sk-ant-" and 8, "Bearer " and 8, "xoxb-" and 10)
_MIN_BASE64_CORE = 8
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9_-]{0,20})\s+(\S+)")
MIN_ENTROPY = 4.0  # bits per character: a random base64 token has ~5, "Authorization_Header_2" ~3.7


def may_hold_shape(data: bytes) -> bool:
    """Whether any built-in shape matches text inside ``data`` (a body's JSON, a file's bytes)."""
    text = data.decode("latin-1")  # one character per byte: every ASCII shape reads as it is
    tried = shapes_to_try(text)  # a context shape must match; a key shape's sign is enough
    return any(kind not in _CONTEXT_KINDS or pattern.search(text) is not None for kind, pattern in tried)


def shapes_to_try(text: str) -> Iterator[Shape]:
    """The built-in shapes that may match ``text``, judged by cheap scans: most often none."""
    if _SIGNS.search(text):
        yield from _shapes()[0]
    lower = text.lower()
    if "aws" in lower or "secret" in lower:
        yield _shapes()[1][0]
    if _assigned(lower):
        yield _shapes()[1][1]


def _assigned(lower: str) -> bool:
    """Whether a word that names a credential is given a value somewhere (``password: x``,
    ``api_key=x``), found from each ``:`` and ``=`` (memchr-fast) rather than by a regex scan."""
    for mark in ":=":
        at = lower.find(mark)
        while at >= 0:
            name = lower[max(0, at - 24) : at].rstrip()
            if name.removesuffix('"').removesuffix("'").removesuffix("\\").endswith(_NAMES):
                return True
            at = lower.find(mark, at + 1)
    return False


def secret_span(pattern: re.Pattern[str], match: re.Match[str]) -> tuple[int, int] | None:
    """The part of a shape's match that is the secret, or None when it is not one after all: the
    words a context shape needs are not just before it, or an assigned value is not random."""
    kind = _shapes()[2].get(id(pattern))
    if kind is None:
        return match.span()
    start, end = match.span("secret")
    if not re.compile(_BEFORE[kind]).search(match.string, max(0, match.start() - 60), match.start()):
        return None
    if kind == "secret" and _entropy(match.group("secret")) < MIN_ENTROPY:
        return None
    return start, end


def _entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def credential_parts(value: str) -> tuple[str, list[str]]:
    """A credential header value, and the secrets it carries: ``Bearer abc`` carries ``abc``;
    ``Basic dXNlcjpwYXNz`` its token, ``user`` and ``pass``; anything else itself.

    The secrets' encoded forms cover the whole value's too (``Bearer `` is not secret, and base64
    forms match at any alignment), so only the value itself needs scrubbing raw.
    """
    value = value.strip()
    scheme = _SCHEME.fullmatch(value)
    if scheme is None:
        return value, [value]
    token = scheme.group(2)
    if scheme.group(1).lower() != "basic":
        return value, [token]
    try:
        pair = base64.b64decode(token, validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return value, [token]
    user, _, password = pair.partition(":")
    return value, [token, user, password]


@functools.lru_cache(maxsize=256)  # a client's key is learned again on every call it makes
def encoded_forms(secret: str) -> frozenset[str]:
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
    return frozenset(f for f in forms if len(f) >= MIN_SECRET)


_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_\-]{16,}")


def decoded_base64(text: str) -> Iterator[str]:
    """Each run of base64 in ``text`` (standard or URL-safe) decoded as Latin-1 text, when it may hold
    a key shape: a key that travels only encoded, as a value a patched function returns may. The run
    is tried from each of its first four characters, since the text before it may be base64 too."""
    for run in _BASE64_RUN.findall(text):
        altchars = b"-_" if "-" in run or "_" in run else None
        for shift in range(4):
            chunk = run[shift:]
            rest = len(chunk) % 4
            chunk = chunk[:-1] if rest == 1 else chunk + "=" * (-rest % 4)
            try:
                data = base64.b64decode(chunk, altchars=altchars, validate=True)
            except (binascii.Error, ValueError):
                continue
            if may_hold_shape(data):
                yield data.decode("latin-1")
                break
