"""What each provider's calls look like on the wire, in one place: every door reads it.

A :class:`WireFormat` says how to recognise a provider's request (API host, SDK user agent, a
header only its SDK sends, its endpoints), whether a request asks for a stream, whether a response
is one (its content type, or its body when a recorder dropped the headers), its stream grammar
(the terminal event, and a stream built from a final body), its error shape (read and written),
where its model and usage are, and where its API lives. The live seams, the importers (vcrpy,
cassetter, LangChain, OTel), the session's check that an answer fits its question, the proxy, the
injected faults, the prices and the viewer all ask here, so a provider described once is recorded,
imported, served and shown alike: none of them names a provider.

>>> fmt = wire.lookup("anthropic")
>>> fmt.asks_stream(request)          # the body says "stream": true
True
>>> wire.provider_of({"user-agent": "OpenAI/Python 3.60.0"}, "api.openai.com", "/v1/embeddings")
'openai'
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..cassette.entries import Request, Response
from ..errors import AnswerShapeError, TruncatedStreamError
from . import openai
from .builtin import BUILT_IN
from .format import JSON, ApiKey, Event, WireFormat

# a provider registered without a wire format most likely speaks OpenAI's (groq, mistral, a local server)
_COMPATIBLE = openai.FORMAT

_FORMATS: dict[str, WireFormat] = {}


def register(fmt: WireFormat) -> None:
    """Add (or replace) a provider's wire format; every door reads it from then on."""
    _FORMATS[fmt.name] = fmt


def lookup(name: str) -> WireFormat | None:
    """The wire format of provider ``name``, or None for one without (a patched function, a WebSocket)."""
    return _FORMATS.get(name)


def formats() -> list[WireFormat]:
    """Every known wire format, built-in ones first."""
    return list(_FORMATS.values())


def provider_of(headers: Mapping[str, str], host: str, path: str) -> str | None:
    """Whose call a recorded request is: the SDK's user agent, else the API host, else a header only
    one SDK sends, else the endpoint path. ``headers`` are lowercase."""
    for test in (
        lambda f: f.by_agent(headers),
        lambda f: bool(host) and host.endswith(f.hosts),
        lambda f: any(h in headers for h in f.marker_headers),
        lambda f: bool(f.endpoints.search(path)),
    ):
        for fmt in _FORMATS.values():
            if test(fmt):
                return fmt.name
    return None


_SSE_START = re.compile(rb"^\s*(?:data|event|id|retry)\s*:|^:", re.ASCII)


def looks_like_sse(data: bytes) -> bool:
    """Whether a body is server-sent events text (``data:`` / ``event:`` lines), whatever its headers say."""
    return bool(_SSE_START.match(data[:256].lstrip(b"\xef\xbb\xbf")))


def response_streams(headers: Mapping[str, str], data: bytes) -> bool:
    """Whether a response body is an event stream: its content type says so, or, when a recorder kept
    no content type (several serializers drop every header), its text is ``data:`` lines."""
    content_type = headers.get("content-type", "").lower()
    if "text/event-stream" in content_type:  # but not a JSON body (Gemini labels a refused stream's error so)
        return data.lstrip()[:1] not in (b"{", b"[")
    if "json" in content_type:
        return False
    return looks_like_sse(data)


def stream_finished(events: Sequence[Event], provider: str | None = None) -> bool:
    """Whether a stream holds its terminal event, by ``provider``'s grammar or, without one, any
    known grammar (openai's SDK closes a stream at ``[DONE]``, before the bytes run out)."""
    fmt = lookup(provider) if provider else None
    events = list(events)
    if fmt is not None:
        return fmt.finished(events)
    return any(f.finished(events) for f in _FORMATS.values())


def asks_stream(provider: str, request: Request) -> bool | None:
    """Whether ``request`` asks for a stream; None when the provider has no wire format."""
    fmt = lookup(provider)
    return None if fmt is None else fmt.asks_stream(request)


def model_of(provider: str, request: Request) -> str | None:
    """The model a request names: its body's ``model``, or its path's (``/models/{model}:method``)."""
    return (lookup(provider) or _COMPATIBLE).model_of(request)


def error_body(provider: str | None, status: int, kind: str, message: str) -> JSON:
    """An error in ``provider``'s own shape, so its SDK raises its own API error (OpenAI's shape for a
    provider without a wire format: most other APIs and clients read it); ``kind`` is the error type."""
    fmt = lookup(provider) if provider else None
    return (fmt or _COMPATIBLE).error_body(status, kind, message)


def usage_keys(provider: str, path: str) -> tuple[tuple[str, ...], str, str]:
    """How genai-prices reads a call's answer: the API flavours to try, the model's key and the usage's.
    A provider without a wire format is read as OpenAI-compatible, then as any (``default``)."""
    fmt = lookup(provider)
    if fmt is None:
        return (*_COMPATIBLE.usage_flavors(path), "default"), _COMPATIBLE.model_key, _COMPATIBLE.usage_key
    return fmt.usage_flavors(path), fmt.model_key, fmt.usage_key


def error_message(provider: str, body: Any) -> str | None:
    """The message an error body carries, in its provider's shape; None if it holds none."""
    fmt = lookup(provider)
    return None if fmt is None else fmt.error_of(body)


def fit(provider: str, request: Request, response: Response) -> Response | str:
    """``response`` in the shape ``request`` asks for, or why it cannot be served to it.

    A plain answer to a call that streams (or the reverse) does not fit, unless the answer is
    ``as_asked`` (its source never said whether the call streamed): then a stream is built from
    its body with the provider's grammar. A stream recorded ``truncated`` that holds its terminal
    event is complete (openai's SDK closes at ``[DONE]``) and is served as such. Only a
    success (2xx) is checked: an error is a plain body whatever was asked, a WebSocket's ``101``
    holds its messages; a provider without a wire format is served as recorded.
    """
    fmt = lookup(provider)
    if fmt is None or not 200 <= response.status < 300:
        return response
    wants, has = fmt.asks_stream(request), fmt.answers_with_stream(response)
    if response.as_asked and wants and not has:
        return _stream_of(fmt, request, response)
    if wants != has:
        asked = "a stream" if wants else "a plain answer (no stream)"
        held = "a stream of events" if has else "a plain body"
        return f"the call asks for {asked}, but the entry holds {held}"
    if response.truncated and response.stream is not None and fmt.finished(response.stream):
        return replace(response, truncated=False)
    return response


def answer_for(where: str, provider: str, request: Request, response: Response) -> Response:
    """The answer to serve ``request`` from a recorded ``response`` (see :func:`fit`), checked before
    anything is served; ``where`` names the cassette and the entry in the errors.

    Raises :class:`~llmvcr.errors.AnswerShapeError` when it does not fit. A stream recorded cut short
    is served with a ``failure`` that raises :class:`~llmvcr.errors.TruncatedStreamError` where the
    recording stopped, never a clean end.
    """
    fitted = fit(provider, request, response)
    if isinstance(fitted, str):
        raise AnswerShapeError(
            f"{where}: {fitted}. Replaying it would hand the app an answer it cannot read. The entry was "
            f"edited by hand, or made from a source that did not record how the call was made; re-record "
            f"it (delete the entry and run with record_mode='new_episodes'), or fix its response: a "
            f"streamed call needs 'stream:' events, a plain one a 'body:'."
        )
    checked = lookup(provider) is not None and 200 <= fitted.status < 300  # as fit() checks
    if checked and fitted.truncated and fitted.stream is not None and not fitted.failure:
        cut = (
            f"{TruncatedStreamError.__name__}: llmvcr: {where}: the stream was recorded cut short after "
            f"{len(fitted.stream)} events (the caller stopped reading while recording), and this call reads "
            f"further. Re-record it to keep the whole stream."
        )
        fitted = replace(fitted, failure=cut)
    return fitted


def _stream_of(fmt: WireFormat, request: Request, response: Response) -> Response:
    headers = {k: v for k, v in response.headers.items() if k not in ("content-type", "content-length")}
    if fmt.array_stream is not None and fmt.array_stream(request):  # Gemini's stream as one JSON array
        return Response(
            response.status, {**headers, "content-type": "application/json"}, body=[response.body]
        )
    events = fmt.events_of(request, response.body)
    return Response(response.status, {**headers, "content-type": "text/event-stream"}, stream=events)


for _fmt in BUILT_IN:
    register(_fmt)

__all__ = [
    "ApiKey",
    "Event",
    "WireFormat",
    "answer_for",
    "asks_stream",
    "error_body",
    "error_message",
    "fit",
    "formats",
    "looks_like_sse",
    "lookup",
    "model_of",
    "provider_of",
    "register",
    "response_streams",
    "stream_finished",
    "usage_keys",
]
