"""An httpx request's record, and which of its headers the record needs, read without decoding the rest.

httpx's ``Headers.multi_items()`` decodes every header (about fifteen on an SDK call); the record
needs the few that carry meaning or a credential, and the content type, so the raw byte pairs are
filtered first and only those are decoded.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Protocol

from ..cassette.entries import Request
from ..wire.headers import CREDENTIAL_HEADERS, REQUEST_HEADERS
from ..wire.http_request import request_from_wire

if TYPE_CHECKING:  # a Protocol class costs a millisecond to build at import

    class HasMeaningHeaders(Protocol):
        meaning_headers: tuple[str, ...]


_KEPT: dict[tuple[str, ...], dict[bytes, bool]] = {}


def _decode(value: bytes, headers: Any) -> str:
    # An ASCII value decodes the same under every encoding httpx may pick for the headers.
    return value.decode("ascii") if value.isascii() else value.decode(headers.encoding)


_CREDENTIAL_BYTES = re.compile(
    rb"(?i)auth|key|token|secret|signature|cookie|password"
)  # is_credential_header's words


def _keeps(provider: HasMeaningHeaders) -> dict[bytes, bool]:
    """Raw header name -> whether the record needs it, filled as names are met (a client sends the
    same few on every call)."""
    kept = _KEPT.get(provider.meaning_headers)
    if kept is None or len(kept) > 512:  # names are few; a client inventing them is not cached forever
        names = REQUEST_HEADERS | CREDENTIAL_HEADERS | {h.lower() for h in provider.meaning_headers}
        kept = _KEPT[provider.meaning_headers] = {n.encode("ascii"): True for n in names}
    return kept


def header_pairs(request: Any, provider: HasMeaningHeaders) -> list[tuple[str, str]]:
    """The request's headers the record needs (meaning, credentials, content type), decoded."""
    kept = _keeps(provider)
    headers = request.headers
    pairs = []
    for k, v in headers.raw:
        keep = kept.get(k)
        if keep is None:
            lower = k.lower()
            # a non-ASCII name only str.lower() can judge
            keep = kept.get(lower) or bool(_CREDENTIAL_BYTES.search(k)) or not k.isascii()
            kept[k] = keep
        if keep:
            pairs.append((_decode(k, headers), _decode(v, headers)))
    return pairs


def record_of(request: Any, provider: HasMeaningHeaders, body: bytes | None = None) -> Request:
    """The ``Request`` record of an httpx request; ``body`` when the bytes are at hand, else it is read."""
    return request_from_wire(
        request.method,
        str(request.url),
        header_pairs(request, provider),
        request.read() if body is None else body,
        meaning_headers=provider.meaning_headers,
    )
