"""SDKs built on httpx2 (or httpx): the wire request as a ``Request``, and whose call it is.

Every call of these SDKs, whatever resource or helper made it (``create``, ``stream()``,
``parse()``, ``with_raw_response``, beta, Azure), ends in ``Client.send`` of the HTTP library
with the final wire request (``providers._send`` intercepts there). A call made inside the SDK's
funnel is that SDK's whatever its headers say; a request that reaches ``send`` outside every
funnel (a framework's own HTTP client speaking an SDK's wire format) is recognised by its
``User-Agent`` or host.
"""

from __future__ import annotations

import base64
import functools
import importlib
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from .. import exactjson
from ..cassette import Request
from ..redact import REQUEST_HEADERS, is_credential_header
from ._funnel import funnel_wrappers
from ._patch import Patch, resolve_attr
from .base import package_version


def parse_body(data: bytes, content_type: str) -> Any:
    """Wire bytes as stored: JSON as a tree, text as a string, anything else as ``{"base64": ...}``."""
    if not data:
        return None
    if "json" in content_type or data[:1] in (b"{", b"["):
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


# Never stored: a credential header by its name, learned and dropped like ``authorization``.
USERINFO_HEADER = "url-userinfo-authorization"


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
    body: bytes,
    *,
    meaning_headers: Iterable[str] = (),
) -> Request:
    """The ``Request`` for an HTTP request as it went on the wire (the seam and the importers).

    Headers that carry meaning are kept and credential headers passed on for the session to
    learn and drop; the rest is noise. Credentials in the URL (``http://user:pass@host``) are
    passed on as the ``Basic`` header httpx adds for them after this point. ``"stream": false``
    is dropped from a JSON body: ``.parse()`` sends it where ``create()`` omits it, for the same
    request.
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
    parsed = parse_body(body, content_type)
    if isinstance(parsed, dict) and parsed.get("stream") is False:
        parsed = {k: v for k, v in parsed.items() if k != "stream"}
    query = tuple(parse_qsl(parts.query, keep_blank_values=True)) if parts.query else ()
    return Request(method=method, path=unquote(parts.path) or "/", body=parsed, query=query, headers=kept)


@dataclass
class HttpProvider:
    """An SDK whose calls reach the network through ``httpx2``/``httpx`` ``Client.send``.

    ``funnels`` name the SDK methods (``"module:Class.method"``, async ones apart) that every
    call passes above its retry loop; ``owns`` recognises a request sent outside them.
    """

    name: str
    package: str
    meaning_headers: tuple[str, ...] = ()
    sync_funnels: tuple[str, ...] = ()
    async_funnels: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()
    # the wire format, for requests from clients that are not the SDK's (litellm's own httpx client):
    # (path ending, header it must carry or "" for none)
    wire: tuple[tuple[str, str], ...] = ()
    _patches: list[Patch] = field(default_factory=list, repr=False)
    _made: dict[str, tuple[Any, Patch]] = field(default_factory=dict, repr=False)  # reused by each install

    def sdk_version(self) -> str | None:
        return package_version(self.package.split(".")[0])

    def owns(self, request: Any) -> bool:
        """Whether a request sent outside the SDK's funnel is this SDK's: its wire format, or its host."""
        if request.url.host in self.hosts:
            return True
        path = request.url.path
        return any(
            path.endswith(end) and (not header or header in request.headers) for end, header in self.wire
        )

    @property
    def installed(self) -> bool:
        return bool(self._patches)

    def install(self) -> None:
        """Wrap the funnels of an SDK that is already imported (never import one ourselves)."""
        if self._patches or self.package not in sys.modules:
            return
        sync_funnel, async_funnel = funnel_wrappers(self.name)
        for specs, wrapper in ((self.sync_funnels, sync_funnel), (self.async_funnels, async_funnel)):
            for spec in specs:
                module = sys.modules.get(spec.partition(":")[0])
                module_then, patch = self._made.get(spec, (None, None))
                if patch is None or module is None or module is not module_then:  # new, or reloaded
                    owner, attr = resolve_attr(spec)
                    patch = Patch(owner, attr, wrapper)
                    self._made[spec] = (sys.modules.get(spec.partition(":")[0]), patch)
                patch.apply()
                self._patches.append(patch)

    def uninstall(self) -> None:
        while self._patches:
            self._patches.pop().undo()


class StainlessProvider(HttpProvider):
    """The shared adapter for Stainless-generated SDKs (anthropic, openai, groq, cerebras, ...).

    Their base client's ``request`` is the funnel; outside it their clients name themselves in
    ``User-Agent`` (``Anthropic/Python 2.16.0``).
    """

    def __init__(
        self,
        name: str,
        *,
        package: str,
        client_names: tuple[str, ...],
        meaning_headers: tuple[str, ...] = (),
        hosts: tuple[str, ...] = (),
        wire: tuple[tuple[str, str], ...] = (),
    ) -> None:
        super().__init__(
            name,
            package,
            meaning_headers,
            sync_funnels=(f"{package}._base_client:SyncAPIClient.request",),
            async_funnels=(f"{package}._base_client:AsyncAPIClient.request",),
            hosts=hosts,
            wire=wire,
        )
        self.client_names = client_names

    def replay_client(self, *, asynchronous: bool = False) -> Any:
        """A client of this SDK to serve a cassette: a placeholder key (no call leaves), no retries."""
        module = importlib.import_module(self.package)
        name = ("Async" if asynchronous else "") + self.client_names[0]
        return getattr(module, name)(api_key="llmvcr-replay", max_retries=0)

    def owns(self, request: Any) -> bool:
        agent = request.headers.get("user-agent", "")
        head = agent.split("/", 1)[0]
        return any(name in head for name in self.client_names) or super().owns(request)
