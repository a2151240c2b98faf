"""What each provider's calls look like on the wire, in one place: every door reads it.

A :class:`WireFormat` says how to recognise a provider's request (API host, SDK user agent, a
header only its SDK sends, its endpoints), whether a request asks for a stream, whether a response
is one (its content type, or its body when a recorder dropped the headers), its stream grammar
(the terminal event, and a stream built from a final body), and its error shape. The live seams,
the importers (vcrpy, cassetter, LangChain, OTel), the session's check that an answer fits its
question, and the command line all ask here, so a provider described once is recorded, imported
and traced alike.

>>> fmt = wire.lookup("anthropic")
>>> fmt.asks_stream(request)          # the body says "stream": true
True
>>> wire.provider_of({"user-agent": "OpenAI/Python 3.60.0"}, "api.openai.com", "/v1/embeddings")
'openai'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..cassette.entries import Request, Response
from ..cassette.values import FrozenValue
from ..errors import AnswerShapeError, TruncatedStreamError
from . import anthropic, google, openai

Event = dict[str, Any]
JSON = dict[str, Any]


@dataclass(frozen=True, eq=False, repr=False)
class WireFormat(FrozenValue):
    """One provider's wire format; ``name`` is the provider name its entries carry."""

    name: str
    hosts: tuple[str, ...]  # API hosts, matched as suffixes (Azure's per-resource hosts)
    agents: tuple[str, ...]  # User-Agent products of the SDK's clients, lowercase ("anthropic")
    marker_headers: tuple[str, ...]  # request headers only this SDK sends
    sdk_headers: Mapping[str, str]  # meaningful request headers every SDK of it sends, with their value
    endpoints: re.Pattern[str]  # searched in the URL path
    asks_stream: Callable[[Request], bool]
    plain_request: Callable[[Request], Request]  # the same call asking for no stream
    events_of: Callable[[Request, Any], list[Event]]  # a stream that builds ``body``
    finished: Callable[[list[Event]], bool]  # the stream holds its terminal event
    error_of: Callable[[Any], str | None]  # the message of an error body

    def recognises(self, headers: Mapping[str, str], host: str, path: str) -> bool:
        """Whether a request outside the SDK's funnel is this provider's (the importers' question)."""
        return (
            self.by_agent(headers)
            or host.endswith(self.hosts)
            or bool(self.endpoints.search(path))
            or any(h in headers for h in self.marker_headers)
        )

    def by_agent(self, headers: Mapping[str, str]) -> bool:
        head = headers.get("user-agent", "").split("/", 1)[0].lower()
        return any(agent in head for agent in self.agents)

    def answers_with_stream(self, response: Response) -> bool:
        """Whether a recorded answer is a stream: events, Gemini's stream sent as one JSON array, or an
        event stream a client read whole and was recorded as its text."""
        if response.stream is not None or (self.name == "google" and isinstance(response.body, list)):
            return True
        content_type = response.headers.get("content-type", "")
        return isinstance(response.body, str) and "text/event-stream" in content_type


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
    """The model a request names: its body's ``model``, or Gemini's path (``/models/{model}:method``)."""
    body = request.body
    if isinstance(body, dict) and body.get("model"):
        return str(body["model"])
    if provider == google.NAME:
        return google.model_of(request.path)
    return None


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
    if fmt.name == "google" and ("alt", "sse") not in request.query:  # Gemini's stream as one JSON array
        return Response(
            response.status, {**headers, "content-type": "application/json"}, body=[response.body]
        )
    events = fmt.events_of(request, response.body)
    return Response(response.status, {**headers, "content-type": "text/event-stream"}, stream=events)


def _error_of(body: Any) -> str | None:
    """All three answer an error as ``{"error": {"message": ...}}``."""
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return str(message) if message is not None else None


for _module in (anthropic, openai, google):
    register(
        WireFormat(
            name=_module.NAME,
            hosts=_module.HOSTS,
            agents=_module.AGENTS,
            marker_headers=_module.MARKER_HEADERS,
            sdk_headers=_module.SDK_HEADERS,
            endpoints=_module.ENDPOINTS,
            asks_stream=_module.asks_stream,
            plain_request=_module.plain_request,
            events_of=_module.events_of,
            finished=_module.finished,
            error_of=_error_of,
        )
    )

__all__ = [
    "Event",
    "WireFormat",
    "answer_for",
    "asks_stream",
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
]
