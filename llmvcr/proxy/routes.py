"""Which cassette and which provider a request through the proxy is for, and the errors it answers with.

A client picks its cassette with a header (``x-llmvcr-cassette: name``) or a path prefix
(``/cassettes/<name>/...`` in its base URL); the provider is told from the request the way every
other door tells it (``llmvcr.wire.provider_of``: the SDK's user agent, a header only its SDK sends,
the endpoint path). An llmvcr error goes back in the provider's own error JSON, with a status no
SDK retries, so the SDK raises it as its API error at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote

from .. import wire
from ..cassette import exactjson

CASSETTE_HEADER = "x-llmvcr-cassette"
OPTION_PREFIX = "x-llmvcr-"
CONTROL_PREFIX = "/_llmvcr/"
PATH_PREFIX = "/cassettes/"
# 424 Failed Dependency: the answer depended on a cassette entry that is not there. The Stainless
# SDKs (anthropic, openai; Python and Node) retry 408, 409, 429 and 5xx, google-genai 408, 429 and
# 5xx, the Vercel ai SDK 408, 409, 429 and 5xx: none retries 424. ``x-should-retry: false`` says it
# to the Stainless SDKs in words too.
ERROR_STATUS = 424
# the largest request body the proxy reads (a prompt with a few images is a few MiB)
MAX_BODY = 64 * 2**20
# never passed on to the upstream: hop-by-hop, recomputed, or the proxy's own
NOT_FORWARDED = frozenset(
    {
        "host",
        "content-length",
        "connection",
        "keep-alive",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "proxy-authorization",
        "proxy-connection",
        "accept-encoding",
    }
)


@dataclass(frozen=True, slots=True)
class Target:
    """One request's cassette name (None: none chosen), its path with any ``/cassettes/<name>``
    prefix taken off, and its provider (None: not an LLM call llmvcr knows)."""

    cassette: str | None
    path: str
    provider: str | None


def target(raw_path: str, headers: dict[str, str]) -> Target:
    """The cassette, path and provider of a request; ``headers`` have lowercase names."""
    cassette = headers.get(CASSETTE_HEADER) or None
    path = raw_path
    if raw_path.startswith(PATH_PREFIX):
        name, sep, rest = raw_path[len(PATH_PREFIX) :].partition("/")
        if name:
            cassette = unquote(name)  # a %2F in the name is a subfolder
            path = "/" + rest if sep else "/"
    provider = wire.provider_of(headers, "", path)
    return Target(cassette, path, provider)


def options_from_headers(headers: dict[str, str]) -> dict[str, str]:
    """``x-llmvcr-record-mode: none`` -> ``{"record_mode": "none"}`` (the cassette header aside)."""
    return {
        name[len(OPTION_PREFIX) :].replace("-", "_"): value
        for name, value in headers.items()
        if name.startswith(OPTION_PREFIX) and name not in (CASSETTE_HEADER, "x-llmvcr-token")
    }


def default_upstreams() -> dict[str, str]:
    """Where each provider's calls are forwarded to be recorded: its API host (``--upstream`` overrides)."""
    return {fmt.name: f"https://{fmt.api_host}" for fmt in wire.formats() if fmt.api_host}


def meaning_headers(provider: str) -> tuple[str, ...]:
    """The request headers that change the meaning of ``provider``'s calls, kept in the record."""
    fmt = wire.lookup(provider)
    return fmt.meaning_headers if fmt is not None else ()


def error_body(provider: str | None, message: str, kind: str, status: int = ERROR_STATUS) -> bytes:
    """An llmvcr error in ``provider``'s own JSON shape (``llmvcr.wire.error_body`` writes each)."""
    return exactjson.dumps(wire.error_body(provider, status, kind, message))


def error_headers(body: bytes) -> list[tuple[bytes, bytes]]:
    """The headers of an llmvcr error answer: JSON, never retried."""
    return [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode("ascii")),
        (b"x-should-retry", b"false"),
        (b"x-llmvcr-error", b"true"),
    ]


def upstream_url(base: str, path: str, query: str) -> str:
    """The upstream URL for ``path`` (as the client sent it, below any cassette prefix)."""
    url = base.rstrip("/") + path
    return f"{url}?{query}" if query else url


def sdk_version(headers: dict[str, str]) -> str | None:
    """The calling SDK's version from its user agent: ``Anthropic/Python 2.17.0`` -> ``2.17.0`` (as
    an in-process recording names it), ``Anthropic/JS 0.71.0`` -> ``JS 0.71.0``."""
    words = headers.get("user-agent", "").split()
    if not words:
        return None
    product, _, detail = words[0].partition("/")
    if product.lower() == "google-genai-sdk" and detail:  # google-genai-sdk/3.6.1 gl-python/3.11.7
        runtime = next((w[3:].partition("/")[0] for w in words[1:] if w.startswith("gl-")), "")
        return detail if runtime == "python" else f"{runtime} {detail}".strip()
    if detail and len(words) > 1 and words[1][:1].isdigit():
        return words[1] if detail.lower() == "python" else f"{detail} {words[1]}"
    return None
