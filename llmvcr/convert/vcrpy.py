"""vcrpy and pytest-recording cassettes: raw HTTP interactions, imported as llmvcr entries.

Each Anthropic or OpenAI interaction becomes the record llmvcr itself would have made of the call:
method, path, sorted query and JSON body (credentials and SDK noise dropped, key-shaped strings
redacted), the allowlisted response headers, and the body decoded (gzip or deflate, text or
``!!binary`` bytes) and parsed as JSON or, for ``text/event-stream``, into events.

>>> cassette = llmvcr.from_vcrpy("tests/cassettes/test_chat.yaml")
>>> llmvcr.save_cassette("cassettes/test_chat.yaml", cassette)
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import re
import warnings
import zlib
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import yaml

from ..cassette import Cassette, Entry, Request, Response
from ..errors import CassetteFormatError, ConversionWarning
from ..matching import default_request_hash
from ..redact import REQUEST_HEADERS, RESPONSE_HEADERS, Redactor
from ..schema import LLMVCR_VERSION
from .neutral import JSON, parse_sse

_AGENT = re.compile(r"^(Anthropic|AsyncAnthropic|OpenAI|AsyncOpenAI|AzureOpenAI)/\S+\s+([\w.\-]+)")


_SafeLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's when PyYAML has it: ~10x faster


class VcrLoader(_SafeLoader):  # type: ignore[misc]
    """A safe loader that also reads the few plain Python tags vcrpy writes (str, unicode, tuple)."""


def _scalar(loader: yaml.SafeLoader, node: Any) -> Any:
    return loader.construct_scalar(node)


def _sequence(loader: yaml.SafeLoader, node: Any) -> Any:
    return list(loader.construct_sequence(node))


VcrLoader.add_constructor("tag:yaml.org,2002:python/str", _scalar)
VcrLoader.add_constructor("tag:yaml.org,2002:python/unicode", _scalar)
VcrLoader.add_constructor("tag:yaml.org,2002:python/tuple", _sequence)


def read_document(path: str) -> Any:
    """A vcrpy cassette file (YAML, or JSON from vcrpy's json serializer) as plain data."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise CassetteFormatError(path, "no such vcrpy cassette") from None
    try:
        if path.lower().endswith(".json"):
            return json.loads(data)
        return yaml.load(data, Loader=VcrLoader)  # VcrLoader is a SafeLoader
    except ValueError as err:
        raise CassetteFormatError(path, f"not a readable vcrpy cassette (not JSON: {err})") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise CassetteFormatError(path, f"not a readable vcrpy cassette (invalid YAML{where})") from None


def _headers(raw: Any) -> list[tuple[str, str]]:
    """vcrpy writes ``{name: [values]}``; older cassettes ``{name: value}``."""
    items: list[tuple[str, str]] = []
    for name, values in (raw or {}).items() if isinstance(raw, dict) else []:
        items.extend((str(name).lower(), str(v)) for v in (values if isinstance(values, list) else [values]))
    return items


def _bytes(body: Any) -> bytes:
    if isinstance(body, dict):  # {"string": ...} or {"base64_string": ...}
        if "base64_string" in body:
            return base64.b64decode(body["base64_string"] or "")
        body = body.get("string")
    if body is None:
        return b""
    if isinstance(body, (bytes, bytearray)):
        return bytes(body)
    return str(body).encode("utf-8")


def _decode(data: bytes, encoding: str) -> bytes:
    encoding = encoding.strip().lower()
    try:
        if encoding in ("gzip", "x-gzip") or data[:2] == b"\x1f\x8b":
            return gzip.decompress(data)
        if encoding == "deflate":
            try:
                return zlib.decompress(data)
            except zlib.error:
                return zlib.decompress(data, -zlib.MAX_WBITS)
    except (OSError, EOFError, zlib.error):
        return data  # vcrpy's decode_compressed_response already decoded it
    return data


def _parse(data: bytes, content_type: str) -> Any:
    if not data:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}
    if "json" in content_type or text[:1] in ("{", "["):
        try:
            return json.loads(text)
        except ValueError:
            pass
    return text


def provider_of(headers: dict[str, str], url: Any, path: str) -> str | None:
    """Which SDK made a call: its user agent, else the API host, else the endpoint path."""
    agent = headers.get("user-agent", "")
    if "anthropic" in agent.split("/", 1)[0].lower():
        return "anthropic"
    if "openai" in agent.split("/", 1)[0].lower():
        return "openai"
    host = (url.hostname or "").lower()
    if host.endswith("anthropic.com"):
        return "anthropic"
    if host.endswith(("openai.com", "openai.azure.com")):
        return "openai"
    if path.rstrip("/").endswith(("/messages", "/messages/count_tokens")) or "anthropic-version" in headers:
        return "anthropic"
    if re.search(r"/(chat/completions|completions|responses|embeddings)(/|$)", path):
        return "openai"
    return None


def _interaction(
    raw: Any, position: int, path: str, versions: dict[str, str], notes: list[str]
) -> Entry | str:
    """One vcrpy interaction as an Entry, or the reason it is not an LLM call."""
    if (
        not isinstance(raw, dict)
        or not isinstance(raw.get("request"), dict)
        or not isinstance(raw.get("response"), dict)
    ):
        raise CassetteFormatError(path, "an interaction needs a request and a response", entry=position)
    req, res = raw["request"], raw["response"]
    url = urlsplit(str(req.get("uri", "")))
    headers = dict(_headers(req.get("headers")))
    provider = provider_of(headers, url, url.path)
    method = str(req.get("method", "GET")).upper()
    if provider is None:
        return (
            f"interaction {position} ({method} {req.get('uri')}) is not an Anthropic or OpenAI call; left out"
        )
    match = _AGENT.match(headers.get("user-agent", ""))
    if match:
        versions[provider] = match.group(2)
    redactor = Redactor()
    kept = redactor.headers(headers.items(), REQUEST_HEADERS)  # learns the credentials it drops
    kept.pop("content-type", None)
    pairs = parse_qsl(url.query, keep_blank_values=True)
    if url.path.endswith("/v1/messages") and ("beta", "true") in pairs:
        pairs = [pair for pair in pairs if pair != ("beta", "true")]
        notes.append(
            f"interaction {position}: old anthropic SDK query '?beta=true' dropped (today's SDK sends none)"
        )
    query = redactor.query(pairs)
    if req.get("body") is None and "parsed_body" in req:  # pydantic-ai's serializer keeps JSON parsed
        body = req["parsed_body"]
    else:
        body = _parse(
            _decode(_bytes(req.get("body")), headers.get("content-encoding", "")),
            headers.get("content-type", ""),
        )
    if isinstance(body, dict) and body.get("stream") is False:
        body = {k: v for k, v in body.items() if k != "stream"}  # as llmvcr records .parse()
    request = Request(method, url.path, body=redactor.tree(body), query=query, headers=kept)
    if "status_code" in res:  # the httpx stub of vcrpy < 5
        status, res_headers, content = res["status_code"], _headers(res.get("headers")), res.get("content")
    else:
        status_field = res.get("status")
        status = status_field.get("code") if isinstance(status_field, dict) else status_field
        res_headers, content = _headers(res.get("headers")), res.get("body")
    if not isinstance(status, int):
        raise CassetteFormatError(
            path, f"no HTTP status code ({status!r})", entry=position, field="response.status"
        )
    res_map = dict(res_headers)
    content_type = res_map.get("content-type", "")
    data = _decode(_bytes(content), res_map.get("content-encoding", ""))
    if res_map.get("content-encoding", "").strip().lower() in ("br", "zstd"):
        notes.append(
            f"interaction {position}: response body is {res_map['content-encoding']}-compressed and was not"
            " decoded; re-record it, or decompress it first (pip install brotli / zstandard)"
        )
    allowed = redactor.headers(res_headers, RESPONSE_HEADERS)
    if "text/event-stream" in content_type:
        response = Response(status, allowed, stream=redactor.tree(parse_sse(data.decode("utf-8", "replace"))))
    elif res.get("body") is None and "parsed_body" in res:  # pydantic-ai's serializer
        response = Response(status, allowed, body=redactor.tree(res["parsed_body"]))
    else:
        response = Response(status, allowed, body=redactor.tree(_parse(data, content_type)))
    return Entry(provider, request, response, default_request_hash(request.normalised()))


def from_vcrpy(path: str | os.PathLike[str]) -> Cassette:
    """Import a vcrpy / pytest-recording cassette of Anthropic or OpenAI HTTP calls as an llmvcr cassette.

    JSON and server-sent-event bodies are read whether stored as text or bytes, gzip-compressed or
    not; authorization headers, keys and cookies are dropped; each entry's ``request_hash`` is the
    one llmvcr computes live, so the result replays through the SDKs with ``record_mode="none"``.
    Interactions with other hosts are left out with a :class:`~llmvcr.convert.ConversionWarning`.
    """
    path = os.fspath(path)
    document = read_document(path)
    interactions = document.get("interactions") if isinstance(document, dict) else None
    if not isinstance(interactions, list):
        raise CassetteFormatError(
            path, "no 'interactions' list: this is not a vcrpy cassette", field="interactions"
        )
    versions: dict[str, str] = {"llmvcr": LLMVCR_VERSION}
    entries: list[Entry] = []
    left_out: list[str] = []
    for position, raw in enumerate(interactions):
        result = _interaction(raw, position, path, versions, left_out)
        if isinstance(result, str):
            left_out.append(result)
        else:
            entries.append(result)
    metadata: JSON = {"converted_from": {"format": "vcrpy", "file": os.path.basename(path)}}  # no local paths
    cassette = Cassette(recorded_with=versions, metadata=metadata)
    for entry in entries:
        cassette.append(entry)
    if left_out:
        warnings.warn(f"{path}: " + "; ".join(left_out), ConversionWarning, stacklevel=2)
    return cassette
