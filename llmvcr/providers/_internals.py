"""Every private name of another package llmvcr reaches, declared once: where it is, the versions it
is known in, and what llmvcr does when a release renames or moves it.

SDKs ship weekly and their private names change without notice. Nothing else in llmvcr spells one
of these names; the adapters ask this module for a name's owner (:func:`resolve`), whether it is
there (:func:`present`), its spelling (:func:`attribute`), or its value on an object
(:func:`on_instance`: a class may declare a name its objects no longer carry). Each name is looked
up when its SDK is first patched, never at import and never for an SDK that is not imported, so a
release of one SDK cannot break a cassette of another. A name that is not there has one of two outcomes:

- ``FALLBACK``: llmvcr takes a plainer path that still records and replays correctly (the HTTP
  seam below every SDK, ``httpx2.Client.send``, is public and always there), and says so once
  with an :class:`~llmvcr.errors.SDKChangedWarning`;
- ``ERROR``: the first call through that SDK inside a cassette raises one
  :class:`~llmvcr.errors.SDKChangedError` naming the package, its version, the name and the remedy.

``{sdk}`` in a location is the import name of a Stainless-generated SDK (``anthropic``, ``openai``,
or one a user registers), whose clients all share one generated base client.
"""

from __future__ import annotations

import importlib
import re
import sys
import threading
import warnings
from typing import Any, NamedTuple

from ..errors import SDKChangedError, SDKChangedWarning
from .base import package_version

FALLBACK = "fallback"
ERROR = "error"


class Internal(NamedTuple):
    """One private name of another package, and what llmvcr does without it."""

    key: str
    where: str  # "module:Owner.name"; a module alone for a module path; "{sdk}" for a Stainless SDK
    kind: str  # "module" | "attribute" (on the class) | "field" (pydantic) | "instance" (annotated) | "init"
    known: str  # the versions it is known in
    outcome: str  # FALLBACK or ERROR
    without: str  # what llmvcr does when it is gone


_STAINLESS_KNOWN = "anthropic 2.10.0-2.17.0, openai 3.51.0-3.63.0"
_FAST_PATH = "replay builds requests through the SDK's own path (the fast path in providers._answer is off)"
_READ = (
    "an llmvcr error met while the SDK reads a stream (a stream recorded cut short, read further) reaches "
    "the caller as the cause of the SDK's connection error"
)
_AIOHTTP_SERVE = "an LLM call through aiohttp inside a cassette raises (a recorded answer cannot be served)"
_WIRE = (
    "calls are recognised at the HTTP seam by their User-Agent, host or wire format (an llmvcr error, "
    "such as a divergence, then reaches the caller as the cause of the SDK's connection error)"
)
_MCP_REFUSED = (
    "an MCP ClientSession opened inside a cassette raises (its server's traffic cannot be recorded or "
    "replayed)"
)
_SSE_LEFT = (
    "an MCP session over SSE is not recorded or replayed: its requests reach the HTTP seam as unclaimed "
    "calls (a warning when recording, UnrecognizedRequestError in a replay-only cassette)"
)

INTERNALS: tuple[Internal, ...] = (
    # -- a Stainless SDK's base client (anthropic, openai, groq, cerebras, ...) -----------------
    Internal("stainless.module", "{sdk}._base_client", "module", _STAINLESS_KNOWN, FALLBACK,
             f"no funnel and no fast path: {_WIRE}"),
    Internal("stainless.sync_request", "{sdk}._base_client:SyncAPIClient.request", "attribute",
             _STAINLESS_KNOWN, FALLBACK, f"no funnel for sync clients: {_WIRE}"),
    Internal("stainless.async_request", "{sdk}._base_client:AsyncAPIClient.request", "attribute",
             _STAINLESS_KNOWN, FALLBACK, f"no funnel for async clients: {_WIRE}"),
    Internal("stainless.build_request", "{sdk}._base_client:BaseClient._build_request", "attribute",
             _STAINLESS_KNOWN, FALLBACK, _FAST_PATH),
    Internal("stainless.build_headers", "{sdk}._base_client:BaseClient._build_headers", "attribute",
             _STAINLESS_KNOWN, FALLBACK, _FAST_PATH),
    Internal("stainless.prepare_url", "{sdk}._base_client:BaseClient._prepare_url", "attribute",
             _STAINLESS_KNOWN, FALLBACK, _FAST_PATH),
    Internal("stainless.http_client", "{sdk}._base_client:BaseClient._client", "instance",
             _STAINLESS_KNOWN, FALLBACK, _FAST_PATH),
    Internal("stainless.dumps", "{sdk}._base_client:openapi_dumps", "attribute",
             _STAINLESS_KNOWN, FALLBACK, _FAST_PATH),
    Internal("stainless.json_data", "{sdk}._models:FinalRequestOptions.json_data", "field",
             _STAINLESS_KNOWN, FALLBACK, _FAST_PATH),
    Internal("stainless.extra_json", "{sdk}._models:FinalRequestOptions.extra_json", "field",
             _STAINLESS_KNOWN, FALLBACK, _FAST_PATH),
    Internal("stainless.stream_events", "{sdk}._streaming:Stream._iter_events", "attribute",
             _STAINLESS_KNOWN, FALLBACK, _READ),
    Internal("stainless.async_stream_events", "{sdk}._streaming:AsyncStream._iter_events", "attribute",
             _STAINLESS_KNOWN, FALLBACK, _READ),
    # -- openai's Responses API over WebSocket (GA and beta modules) ----------------------------
    Internal("openai.connect_ws", "{module}:{manager}._connect_ws", "attribute", "openai 3.51.0-3.63.0",
             ERROR, "responses.connect() inside a cassette raises (its socket cannot be intercepted)"),
    Internal("openai.ws_url", "{module}:{manager}._prepare_url", "attribute", "openai 3.51.0-3.63.0",
             ERROR, "responses.connect() inside a cassette raises (the socket's path is unknown)"),
    Internal("openai.ws_client", "{module}:{manager}.__client", "init", "openai 3.51.0-3.63.0", FALLBACK,
             "a socket answers to the open cassette; under create_replay_adapter/create_recording_adapter "
             "responses.connect() raises (the adapted client cannot be told)"),
    # -- google-genai ----------------------------------------------------------------------------
    Internal("google.module", "google.genai._api_client", "module", "google-genai 3.6.1", FALLBACK,
             f"no funnel: {_WIRE}"),
    Internal("google.request", "google.genai._api_client:BaseApiClient._request", "attribute",
             "google-genai 3.6.1", FALLBACK, f"no funnel for sync calls: {_WIRE}"),
    Internal("google.async_request", "google.genai._api_client:BaseApiClient._async_request", "attribute",
             "google-genai 3.6.1", FALLBACK, f"no funnel for async calls: {_WIRE}"),
    Internal("google.api_client", "google.genai.client:Client._api_client", "init", "google-genai 3.6.1",
             ERROR, "create_replay_adapter/create_recording_adapter refuse a google-genai client (the "
             "client its calls pass through cannot be found); use_cassette works as before"),
    # -- aiohttp ---------------------------------------------------------------------------------
    Internal("aiohttp.request", "aiohttp:ClientSession._request", "attribute", "aiohttp 3.14.5", ERROR,
             "an LLM call through aiohttp inside a cassette raises (it cannot be intercepted)"),
    Internal("aiohttp.build_url", "aiohttp:ClientSession._build_url", "attribute", "aiohttp 3.14.5",
             FALLBACK, "a request's URL is taken as given (a relative one, under a base_url, raises)"),
    Internal("aiohttp.headers", "aiohttp:ClientResponse._headers", "attribute", "aiohttp 3.14.5", ERROR,
             _AIOHTTP_SERVE),
    Internal("aiohttp.raw_headers", "aiohttp:ClientResponse._raw_headers", "attribute", "aiohttp 3.14.5",
             ERROR, _AIOHTTP_SERVE),
    # -- the mcp SDK's client transports -------------------------------------------------------------
    Internal("mcp.stdio.spawn", "mcp.client.stdio:_create_platform_compatible_process", "attribute",
             "mcp 1.30.0, 2.3.0", ERROR, _MCP_REFUSED),
    Internal("mcp.http.writer", "mcp.client.streamable_http:StreamableHTTPTransport.post_writer",
             "attribute", "mcp 1.30.0, 2.3.0", ERROR, _MCP_REFUSED),
    Internal("mcp.http.get_stream", "mcp.client.streamable_http:StreamableHTTPTransport.handle_get_stream",
             "attribute", "mcp 1.30.0, 2.3.0", FALLBACK,
             "what a streamable HTTP server sends outside any request (over its GET stream) is not recorded"),
    Internal("mcp.sse.source", "mcp.client.sse:sse_within_origin", "attribute", "mcp 1.30.0, 2.3.0",
             FALLBACK, _SSE_LEFT),
    Internal("mcp.sse.post", "mcp.client.sse:request_within_origin", "attribute", "mcp 1.30.0, 2.3.0",
             FALLBACK, _SSE_LEFT),
    # -- lm15, vendored by DSPy --------------------------------------------------------------------
    Internal("dspy.lm15", "dspy._vendor.lm15.transports", "module", "dspy 3.4.1", ERROR,
             "DSPy's LM calls inside a cassette raise (its lm15 transports cannot be intercepted)"),
)  # fmt: skip

_BY_KEY = {internal.key: internal for internal in INTERNALS}

# where the openai WebSocket managers live ("{module}:{manager}" above)
WS_MODULES = ("openai.resources.responses.responses", "openai.resources.beta.responses.responses")
WS_MANAGERS = ("ResponsesConnectionManager", "AsyncResponsesConnectionManager")


def declared(key: str) -> Internal:
    """The registry's entry for ``key`` (a ``KeyError`` names a key that was never declared)."""
    return _BY_KEY[key]


def where(key: str, **fill: str) -> str:
    """``key``'s location with its placeholders filled: ``where("stainless.sync_request", sdk="openai")``."""
    return _BY_KEY[key].where.format(**fill)


_NAMES = {internal.key: internal.where.rpartition(".")[2] for internal in INTERNALS}


def attribute(key: str) -> str:
    """The bare name ``key`` declares (``"_build_headers"``), for ``getattr`` on an instance."""
    return _NAMES[key]


_MISSING = object()


def _lookup(internal: Internal, spec: str) -> Any:
    """The owner of the name at ``spec`` if the name is there, else ``_MISSING``; imports only a module
    of a package that is already imported."""
    module_name, _, dotted = spec.partition(":")
    if module_name.split(".")[0] not in sys.modules:
        return _MISSING
    try:
        owner: Any = sys.modules.get(module_name) or importlib.import_module(module_name)
    except ImportError:
        return _MISSING
    if not dotted:
        return owner
    *parents, name = dotted.split(".")
    for parent in parents:
        owner = getattr(owner, parent, _MISSING)
        if owner is _MISSING:
            return _MISSING
    if internal.kind == "field":
        fields = getattr(owner, "model_fields", None) or getattr(owner, "__fields__", {})
        return owner if name in fields else _MISSING
    if internal.kind == "instance":
        annotated = any(name in vars(k).get("__annotations__", {}) for k in getattr(owner, "__mro__", ()))
        return owner if annotated else _MISSING
    if internal.kind == "init":  # set in __init__ as ``self.__name``: Python stores it mangled
        code = getattr(getattr(owner, "__init__", None), "__code__", None)
        mangled = f"_{owner.__name__.lstrip('_')}{name}" if name.startswith("__") else name
        return owner if code is not None and mangled in code.co_names else _MISSING
    return owner if hasattr(owner, name) else _MISSING


_lock = threading.Lock()
_said: set[tuple[str, str]] = set()  # (key, spec) a warning was given for, once per process


def present(key: str, **fill: str) -> bool:
    """Whether ``key``'s name is where llmvcr expects it. A missing one is reported once: a warning for
    a ``FALLBACK`` name (an ``ERROR`` name raises, through :func:`error`, at the first call)."""
    internal = _BY_KEY[key]
    spec = internal.where.format(**fill)
    if _lookup(internal, spec) is not _MISSING:
        return True
    _report(internal, spec, fill)
    return False


def on_instance(instance: Any, key: str, **fill: str) -> Any:
    """The value of ``key``'s instance attribute on ``instance``, or None (reported once, as
    :func:`present` does). A class may declare the name while a release sets another on its objects,
    so an ``"instance"`` or ``"init"`` name is read through here, never with a bare ``getattr``."""
    value = getattr(instance, _NAMES[key], None)
    if value is None:
        internal = _BY_KEY[key]
        _report(internal, f"{internal.where.format(**fill)} (on a {type(instance).__name__})", fill)
    return value


def _report(internal: Internal, spec: str, fill: dict[str, str]) -> None:
    if internal.outcome == FALLBACK:
        with _lock:
            first = (internal.key, spec) not in _said
            _said.add((internal.key, spec))
        if first:
            warnings.warn(_message(internal, spec, fill), SDKChangedWarning, stacklevel=3)


def resolve(key: str, **fill: str) -> tuple[Any, str] | None:
    """``(owner, name)`` for patching ``key``'s name, or None (reported as :func:`present` does)."""
    if not present(key, **fill):
        return None
    internal = _BY_KEY[key]
    module_name, _, dotted = internal.where.format(**fill).partition(":")
    owner: Any = sys.modules[module_name]
    *parents, name = dotted.split(".")
    for parent in parents:
        owner = getattr(owner, parent)
    return owner, name


def module(key: str, **fill: str) -> Any:
    """The module ``key`` declares, when it is there (None otherwise, reported as :func:`present` does)."""
    return sys.modules.get(where(key, **fill)) if present(key, **fill) else None


def error(key: str, **fill: str) -> SDKChangedError:
    """The one clear error for a call that cannot go on without ``key``'s name."""
    internal = _BY_KEY[key]
    return SDKChangedError(_message(internal, internal.where.format(**fill), fill))


def _distribution(internal: Internal, fill: dict[str, str]) -> str:
    if "{sdk}" in internal.where:
        return fill["sdk"].split(".")[0]
    if internal.where.startswith("google.genai"):
        return "google-genai"
    return re.split(r"[.:]", internal.where.format(**fill))[0]


def _message(internal: Internal, spec: str, fill: dict[str, str]) -> str:
    dist = _distribution(internal, fill)
    version = package_version(dist) or "(version unknown)"
    return (
        f"llmvcr: {dist} {version} has no {spec} (llmvcr knows it in {internal.known}); "
        f"{internal.without}. Pin {dist}<{version} or upgrade llmvcr"
    )
