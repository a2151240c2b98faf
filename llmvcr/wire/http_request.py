"""An HTTP request as it went on the wire, as a ``Request``: the one translation for every source.

The HTTP seams (httpx2, httpx, aiohttp, lm15) call :func:`request_from_wire` with the bytes they
are about to send; the importers of other recorders' cassettes (vcrpy, cassetter, LangChain) call
it with the bytes, or the tree, those files kept. So a converted entry hashes as the live call
would, and a fix to how a request is read reaches both.
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from ..cassette import exactjson
from ..cassette.entries import Request
from ..cassette.values import FrozenValue
from .headers import REQUEST_HEADERS, is_credential_header

# Never stored: a credential header by its name, learned and dropped like ``authorization``.
USERINFO_HEADER = "url-userinfo-authorization"


@dataclass(frozen=True, eq=False, repr=False)
class Parsed(FrozenValue):
    """A body a recorder stored already parsed (pydantic-ai's ``parsed_body``, cassetter's json)."""

    value: Any


def parse_body(data: bytes, content_type: str) -> Any:
    """Wire bytes as stored: JSON as a tree, text as a string, anything else as ``{"base64": ...}``."""
    if not data:
        return None
    # text labelled a stream that is not one (Gemini's JSON error to a refused stream) stays as sent
    if (
        "json" in content_type or data.lstrip()[:1] in (b"{", b"[")
    ) and "text/event-stream" not in content_type:
        try:
            return exactjson.loads(data)  # big integers and NaN as sent, not as floats or text
        except (ValueError, RecursionError):
            pass
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


def body_bytes(body: Any, content_type: str) -> bytes:
    """The inverse of :func:`parse_body`."""
    if body is None:
        return b""
    if isinstance(body, str) and "json" not in content_type:
        return body.encode("utf-8")
    if isinstance(body, dict) and set(body) == {"base64"} and "json" not in content_type:
        return base64.b64decode(body["base64"])
    return exactjson.dumps(body)


def userinfo_authorization(username: str | None, password: str | None) -> str:
    """The ``Authorization: Basic`` value httpx sends for a URL's ``user:pass@``."""
    pair = f"{unquote(username or '')}:{unquote(password or '')}"
    return "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")


def without_userinfo(url: str) -> str:
    """``url`` as it may be shown in a message: no ``user:pass@``."""
    parts = urlsplit(url)
    if not (parts.username or parts.password):
        return url
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


@functools.lru_cache(maxsize=64)  # one per provider
def _allowed(meaning_headers: tuple[str, ...]) -> frozenset[str]:
    return REQUEST_HEADERS.union(h.lower() for h in meaning_headers)


def request_from_wire(
    method: str,
    url: str,
    headers: Iterable[tuple[str, str]],
    body: bytes | Parsed | None,
    *,
    meaning_headers: Iterable[str] = (),
) -> Request:
    """The ``Request`` for an HTTP request as it went on the wire.

    Headers that carry meaning are kept and credential headers passed on for the session (or the
    importer's redactor) to learn and drop; the rest is noise. Credentials in the URL
    (``http://user:pass@host``) are passed on as the ``Basic`` header httpx adds for them after
    this point. ``"stream": false`` is dropped from a JSON body: ``.parse()`` sends it where
    ``create()`` omits it, for the same request. ``body`` is the bytes sent, or a :class:`Parsed`
    tree when a recorder kept only that.
    """
    allow = _allowed(meaning_headers if isinstance(meaning_headers, tuple) else tuple(meaning_headers))
    kept: dict[str, str] = {}
    content_type = ""
    for name, value in headers:
        lower = name.lower()
        if lower == "content-type":
            content_type = f"{content_type}, {value}" if content_type else value
        elif lower in allow or is_credential_header(lower):
            kept[lower] = value
    parts = urlsplit(url)
    if parts.username or parts.password:
        kept[USERINFO_HEADER] = userinfo_authorization(parts.username, parts.password)
    parsed = body.value if isinstance(body, Parsed) else parse_body(body or b"", content_type)
    if isinstance(parsed, dict) and parsed.get("stream") is False:
        parsed = {k: v for k, v in parsed.items() if k != "stream"}
    query = tuple(parse_qsl(parts.query, keep_blank_values=True)) if parts.query else ()
    return Request(method=method, path=unquote(parts.path) or "/", body=parsed, query=query, headers=kept)
