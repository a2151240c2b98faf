"""One recorded HTTP exchange, whatever recorder wrote it, as the entry llmvcr itself records.

Each reader (vcrpy and pytest-recording, pydantic-ai's serializer, cassetter, LangChain's gzip
layout) turns its interactions into :class:`Exchange`; :func:`entry_of` does the rest the same way
for all: provider (by :mod:`llmvcr.wire`, the one description of each provider's calls), method,
path, sorted query and JSON body (credentials dropped, key-shaped strings redacted), the
allowlisted response headers, the body decoded and parsed as JSON or server-sent events (told by
its content type, or by its text when the recorder dropped every header).

Two kinds of drift between the SDK that recorded and today's SDK are settled here, each with a
:class:`~llmvcr.errors.ConversionWarning` naming the interaction:

* old-SDK artefacts are dropped: anthropic SDKs before 1.0 sent ``?beta=true`` on beta calls;
* a field today's SDK sends by default and the recorded request lacks is added with that default
  (openai sends ``encoding_format: "base64"`` on embeddings unless told otherwise). The recorded
  answer is kept as it was: the SDK decodes base64 only when the answer holds base64 strings, so a
  float answer replays as the floats the API gave. Every openai SDK llmvcr supports sends it, so
  the converted request is the one they send. A header every SDK of the provider sends
  (``anthropic-version``) is added when a recorder dropped the request's headers.

A Gemini stream asked without ``alt=sse`` came back as one JSON array: it is kept so, as the JSON
body it is, and replays to the client that asked for it that way (the session knows it for a stream).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..cassette import Entry, Request, Response
from ..errors import CassetteFormatError
from ..matching import default_request_hash
from ..redaction import Redactor
from ..wire import lookup, provider_of, response_streams
from ..wire.headers import REQUEST_HEADERS, RESPONSE_HEADERS
from ..wire.http_request import Parsed, parse_body, request_from_wire
from .encodings import decompress
from .neutral import parse_sse

_AGENT = re.compile(
    r"^(?:(?:Anthropic|AsyncAnthropic|OpenAI|AsyncOpenAI|AzureOpenAI)/\S+\s+|google-genai-sdk/)([\w.\-]+)"
)

# (provider, path ending) -> fields today's SDK sends when the caller gives none
SDK_DEFAULTS: dict[tuple[str, str], dict[str, Any]] = {
    ("openai", "/embeddings"): {"encoding_format": "base64"},
}


Body = bytes | Parsed | None


@dataclass(frozen=True)
class Exchange:
    """One request and its response as a recorder stored them; bodies still encoded."""

    method: str
    uri: str
    request_headers: list[tuple[str, str]]
    request_body: Body
    status: Any
    response_headers: list[tuple[str, str]]
    response_body: Body


def header_items(raw: Any) -> list[tuple[str, str]]:
    """``{name: [values]}`` (vcrpy), ``{name: value}`` (older files, other serializers) as pairs."""
    if not isinstance(raw, dict):
        return []
    items: list[tuple[str, str]] = []
    for name, values in raw.items():
        items.extend((str(name).lower(), str(v)) for v in (values if isinstance(values, list) else [values]))
    return items


def _request_body(body: Body, headers: dict[str, str], where: tuple[str, int]) -> bytes | Parsed | None:
    if body is None or isinstance(body, Parsed):
        return body
    return decompress(body, headers.get("content-encoding", ""), *where)


def _query(
    pairs: list[tuple[str, str]], provider: str, position: int, notes: list[str]
) -> list[tuple[str, str]]:
    if provider == "anthropic" and ("beta", "true") in pairs:
        notes.append(
            f"interaction {position}: old anthropic SDK query '?beta=true' dropped (anthropic 1.0 and "
            "later send none)"
        )
        return [pair for pair in pairs if pair != ("beta", "true")]
    return pairs


def _defaults(body: Any, provider: str, path: str, position: int, notes: list[str]) -> Any:
    if not isinstance(body, dict):
        return body
    for (owner, ending), fields in SDK_DEFAULTS.items():
        if owner != provider or not path.rstrip("/").endswith(ending):
            continue
        missing = {k: v for k, v in fields.items() if k not in body}
        if missing:
            body = {**body, **missing}
            added = ", ".join(f"{k}={v!r}" for k, v in missing.items())
            notes.append(
                f"interaction {position}: {added} added to the request, as today's {provider} SDK sends "
                "it by default (the recorded answer is kept as it was)"
            )
    return body


def entry_of(
    exchange: Exchange, position: int, path: str, versions: dict[str, str], notes: list[str]
) -> Entry | str:
    """The entry for one exchange, or why it is not an LLM call (it is then left out)."""
    url = urlsplit(exchange.uri)
    headers = dict(exchange.request_headers)
    provider = provider_of(headers, (url.hostname or "").lower(), url.path)
    method = exchange.method.upper()
    if provider is None:
        return f"interaction {position} ({method} {exchange.uri}) is not an LLM call llmvcr knows; left out"
    match = _AGENT.match(headers.get("user-agent", ""))
    if match:
        versions[provider] = match.group(1)
    if not isinstance(exchange.status, int) or isinstance(exchange.status, bool):
        raise CassetteFormatError(
            path, f"no HTTP status code ({exchange.status!r})", entry=position, field="response.status"
        )
    wire = request_from_wire(
        method,
        exchange.uri,
        _with_sdk_headers(exchange.request_headers, provider, position, notes),
        _request_body(exchange.request_body, headers, (path, position)),
    )
    if wire.body is None and method == "POST":
        raise CassetteFormatError(
            path,
            f"the request ({method} {url.path}) has no body: the serializer that wrote this file stored it "
            "somewhere llmvcr does not read; re-record it, or convert it with that serializer first",
            entry=position,
        )
    redactor = Redactor()
    kept = redactor.headers(list(wire.headers.items()), REQUEST_HEADERS)  # learns the credentials it drops
    body = _defaults(wire.body, provider, url.path, position, notes)
    query = redactor.query(_query(list(wire.query), provider, position, notes))
    response = _response(exchange, redactor, path, position)
    request = Request(method, wire.path, body=redactor.tree(body), query=query, headers=kept)
    return Entry(provider, request, response, default_request_hash(request.normalised()))


def _with_sdk_headers(
    pairs: list[tuple[str, str]], provider: str, position: int, notes: list[str]
) -> list[tuple[str, str]]:
    fmt = lookup(provider)
    names = {name for name, _ in pairs}
    missing = {k: v for k, v in (fmt.sdk_headers if fmt else {}).items() if k not in names}
    if missing:
        added = ", ".join(f"{k}: {v}" for k, v in missing.items())
        notes.append(
            f"interaction {position}: request header {added} added (the recorder kept none; every "
            f"{provider} SDK sends it)"
        )
    return pairs + list(missing.items())


def _response(exchange: Exchange, redactor: Redactor, path: str, position: int) -> Response:
    res_map = dict(exchange.response_headers)
    allowed = redactor.headers(exchange.response_headers, RESPONSE_HEADERS)
    status = int(exchange.status)
    if isinstance(exchange.response_body, Parsed):
        return Response(status, allowed, body=redactor.tree(exchange.response_body.value))
    if exchange.response_body is None:
        raise CassetteFormatError(
            path,
            "the response has no body: the serializer that wrote this file stored it somewhere llmvcr "
            "does not read; re-record it, or convert it with that serializer first",
            entry=position,
        )
    data = decompress(exchange.response_body, res_map.get("content-encoding", ""), path, position)
    content_type = res_map.get("content-type", "")
    if response_streams(res_map, data):  # its content type, or its text when headers were dropped
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise CassetteFormatError(
                path, "the event stream is not UTF-8 text; restore the file or re-record it", entry=position
            ) from None
        if "content-type" not in allowed:  # served as the stream it is
            allowed = {**allowed, "content-type": "text/event-stream"}
        return Response(status, allowed, stream=redactor.tree(parse_sse(text)))
    return Response(status, allowed, body=redactor.tree(parse_body(data, content_type)))
