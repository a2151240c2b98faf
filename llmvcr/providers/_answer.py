"""Answering in the SDK's funnel: a replayed call skips most of the SDK's HTTP request building.

A Stainless SDK (anthropic, openai and the others) turns each call into an HTTP request in
``BaseClient._build_request`` (its headers, the URL, the JSON body, then the HTTP library's own
``build_request``): about a quarter of what a call costs the SDK itself. ``providers._httpx`` then
reads that request back at ``Client.send``. Inside a replay-only cassette no request leaves the
machine (each call is served, fails as injected, or raises a divergence), so there llmvcr builds
the request from the same SDK pieces (``_build_headers``, ``_prepare_url``, the SDK's JSON
encoder) and the HTTP library's plain ``Request``, and hands the seam the ``Request`` record it
would read from it, already read. ``send`` decides on that as on any request.

Anything this does not cover takes the SDK's own path, as if this module were not there (every
call does when an SDK release renamed a name in ``FAST_PATH``: ``_build_request`` is then left
unwrapped): a cassette that may record or go live, a body that is not a JSON object, query parameters,
``extra_body`` the SDK has not merged yet, files, a GET, an SDK client class that builds requests its
own way, an HTTP client class that sends its own way. A request changed after it was built
(``_prepare_request`` signing it) is read again at ``send``. The test suite builds both requests
for every call (``checks``) and fails on any difference.

Why it stays: replay per call, floor and llmvcr alternating in each round, was 0.99-1.04 times the
floor with it and 1.09-1.16 times without it (N = 100 and 1,000).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from .. import _active
from ..cassette.entries import Request
from . import _internals
from ._headers import record_of
from .base import watching

PREMADE = "llmvcr.premade"  # the request extension that carries the record already read

# Every SDK name this path reads: the provider wraps ``_build_request`` only when all are there.
FAST_PATH = (
    "stainless.build_request",
    "stainless.build_headers",
    "stainless.prepare_url",
    "stainless.http_client",
    "stainless.dumps",
    "stainless.json_data",
    "stainless.extra_json",
)
_BUILD_REQUEST = _internals.attribute("stainless.build_request")
_BUILD_HEADERS = _internals.attribute("stainless.build_headers")
_PREPARE_URL = _internals.attribute("stainless.prepare_url")
_JSON_DATA = _internals.attribute("stainless.json_data")
_EXTRA_JSON = _internals.attribute("stainless.extra_json")

# The test suite sets a list here: every request built this way is compared with the SDK's own,
# and each difference is appended, naming the call.
checks: list[str] | None = None


if TYPE_CHECKING:  # a Protocol class costs a millisecond to build at import

    class AnsweringProvider(Protocol):
        name: str
        package: str
        meaning_headers: tuple[str, ...]


class Premade(NamedTuple):
    """The record of a request built here, and what it looked like then."""

    request: Request
    url: Any
    raw_headers: list[tuple[bytes, bytes]]

    def still_fits(self, request: Any) -> bool:
        """Whether ``request`` is as it was built (a ``_prepare_request`` may sign or reroute it)."""
        return request.url is self.url and request.headers.raw == self.raw_headers


def build_request_wrapper(provider: AnsweringProvider, dumps: Callable[[Any], bytes]) -> Callable[..., Any]:
    """The wrapt wrapper for the provider's ``BaseClient._build_request``; ``dumps`` is the SDK's own
    JSON encoder. The provider checked every name in ``FAST_PATH`` before wrapping."""

    def build_request(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        if not watching():
            return wrapped(*args, **kwargs)
        light = _light_request(provider, dumps, instance, args, kwargs)
        if light is None:
            return wrapped(*args, **kwargs)
        if checks is not None:
            check_against(provider, light, wrapped(*args, **kwargs), checks)
        return light

    return build_request


def _light_request(
    provider: AnsweringProvider, dumps: Callable[[Any], bytes], client: Any, args: Any, kwargs: Any
) -> Any:
    session = _active.session_for(client)
    if session is None or session.can_record or session.options.on_divergence == "live":
        return None
    options = args[0] if args else kwargs.get("options")
    builds, urls = _plain(type(client), provider.package)
    if options is None or not builds:
        return None
    json_data = getattr(options, _JSON_DATA)
    if (
        not isinstance(json_data, dict)
        or options.method.lower() == "get"
        or options.files is not None
        or options.content is not None
        or getattr(options, _EXTRA_JSON) is not None
        or options.params
    ):
        return None
    http = _internals.on_instance(client, "stainless.http_client", sdk=provider.package)
    module = _sends_plainly(type(http)) if http is not None else None  # renamed: the SDK's own path
    if module is None or http.params or client.default_query:
        return None
    built = getattr(client, _BUILD_HEADERS)(options, retries_taken=kwargs.get("retries_taken", 0))
    if built.get("content-type", "").lower().startswith("multipart/"):
        return None
    body = dumps(json_data)
    light = _request(module, options.method, _url(client, options.url, urls), http, built, body)
    light.extensions[PREMADE] = Premade(record_of(light, provider, body), light.url, light.headers.raw)
    return light


_AUTOMATIC = frozenset({b"host", b"content-length", b"transfer-encoding", b"cookie"})


def _request(module: Any, method: str, url: Any, http: Any, built: Any, body: bytes) -> Any:
    """What ``http.build_request(method, url, headers=built, content=body)`` gives, built directly.

    The HTTP client's headers, then the SDK's over them, between the ``Host`` and ``Content-Length``
    the HTTP library adds itself, in its order. Anything unusual (a client with cookies, a header
    the library would otherwise add) takes the library's own constructor.
    """
    ours = built.raw
    names = {name.lower() for name, _ in ours}
    theirs = [pair for pair in http.headers.raw if pair[0].lower() not in names]
    if http.cookies or any(name.lower() in _AUTOMATIC for name, _ in theirs + ours):
        headers = module.Headers(http.headers)
        headers.update(built)
        return module.Request(method, url, headers=headers, content=body, cookies=http.cookies or None)
    raw = [(b"Host", url.netloc), *theirs, *ours, (b"Content-Length", str(len(body)).encode("ascii"))]
    request = module.Request(method, url, headers=raw, stream=module.ByteStream(body))
    request.read()
    return request


_PLAIN_CLIENTS: dict[type, tuple[bool, bool]] = {}


def _plain(cls: type, package: str) -> tuple[bool, bool]:
    """Whether an SDK client class uses the base client's ``_build_request``, and its ``_prepare_url``."""
    plain = _PLAIN_CLIENTS.get(cls)
    if plain is None:
        home = _internals.where("stainless.module", sdk=package)
        plain = _PLAIN_CLIENTS[cls] = (
            all(k.__module__ == home for k in cls.__mro__ if _BUILD_REQUEST in vars(k)),
            all(k.__module__ == home for k in cls.__mro__ if _PREPARE_URL in vars(k)),
        )
    return plain


_PLAIN_SENDERS: dict[type, Any] = {}


def _sends_plainly(cls: type) -> Any:
    """The HTTP library (httpx2 or httpx) whose ``Client.send`` this client class uses unchanged, or None."""
    if cls not in _PLAIN_SENDERS:
        found = None
        for k in cls.__mro__:
            if "send" in vars(k) or "build_request" in vars(k):
                module = sys.modules.get(k.__module__.split(".")[0])
                if module is not None and module.__name__ in ("httpx2", "httpx"):
                    found = module if k in (module.Client, module.AsyncClient) else None
                break
        _PLAIN_SENDERS[cls] = found
    return _PLAIN_SENDERS[cls]


_URLS: dict[tuple[int, str], tuple[Any, Any]] = {}  # (id of base URL, path) -> (base URL, merged)


def _url(client: Any, path: str, plain: bool) -> Any:
    """``client._prepare_url(path)``, kept per base URL: httpx URLs are immutable and the merge is slow."""
    prepare_url = getattr(client, _PREPARE_URL)
    if not plain:  # a client class with its own _prepare_url may answer differently each time
        return prepare_url(path)
    base = client.base_url
    key = (id(base), path)
    cached = _URLS.get(key)
    if cached is not None and cached[0] is base:
        return cached[1]
    if len(_URLS) > 256:  # one per client and endpoint; never grows without bound
        _URLS.clear()
    url = prepare_url(path)
    _URLS[key] = (base, url)
    return url


def check_against(provider: AnsweringProvider, light: Any, real: Any, into: list[str]) -> None:
    """The test suite's check: the request built here against the SDK's own, field by field."""
    where = f"{provider.name} {real.method} {real.url}"
    for what, mine, theirs in (
        ("method", light.method, real.method),
        ("url", str(light.url), str(real.url)),
        # as every Headers reader sees them: names are matched without case (openai sends its own
        # names lowercased, anthropic as written; only ``headers.raw`` shows the difference)
        ("headers", light.headers.multi_items(), real.headers.multi_items()),
        ("body", light.content, real.content),
    ):
        if mine != theirs:
            into.append(f"{where}: {what} differs: {mine!r} != {theirs!r}")
    record = record_of(real, provider)
    if record != light.extensions[PREMADE].request:
        into.append(f"{where}: the record differs: {light.extensions[PREMADE].request!r} != {record!r}")
