"""The cassette format: entries <-> mappings, and the format versions llmvcr reads.

Every error names the file, the entry and the field, and says what to do. A document from a
newer llmvcr is refused with the release that reads it; older versions are migrated here.
"""

from __future__ import annotations

import importlib.metadata
import platform
from collections.abc import Mapping
from typing import Any

from .entries import Entry, Request, Response
from .errors import CassetteFormatError
from .linear import LINEAR_VERSION

FORMAT_VERSION = LINEAR_VERSION  # the newest format this llmvcr reads (1: full, 2: linear layout)


class Inline(list):  # type: ignore[type-arg]
    """A list a YAML cassette writes on one line (``[0.0, 12.5, 30.1]``)."""


def _release() -> str:
    try:
        return importlib.metadata.version("pyllmvcr")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"


LLMVCR_VERSION = _release()  # the release, as pyproject.toml states it; named in every cassette


def recorded_with() -> dict[str, str]:
    """The versions every new cassette names; each SDK's is added when a call through it is recorded."""
    return {"llmvcr": LLMVCR_VERSION, "python": platform.python_version()}


def entry_to_mapping(entry: Entry) -> dict[str, Any]:
    """An entry as the plain mapping a cassette file holds."""
    req = entry.request
    request: dict[str, Any] = {"method": req.method, "path": req.path}
    if req.query:
        request["query"] = [list(p) for p in req.query]
    if req.headers:
        request["headers"] = dict(req.headers)
    if req.body is not None:
        request["body"] = req.body
    res = entry.response
    response: dict[str, Any] = {"status": res.status}
    if res.headers:
        response["headers"] = dict(res.headers)
    if res.stream is not None:
        timing = [event.get("t") for event in res.stream]
        if any(t is not None for t in timing):
            # Arrival offsets on one line of their own: re-recording an unchanged stream changes
            # that line only, not one line per event, so a PR diff shows what the model said.
            response["stream"] = [{k: v for k, v in event.items() if k != "t"} for event in res.stream]
            response["timing"] = Inline(timing)
        else:
            response["stream"] = res.stream
    else:
        response["body"] = res.body
    if res.truncated:
        response["truncated"] = True
    if res.failure:
        response["failure"] = res.failure
    return {
        "provider": entry.provider,
        "request": request,
        "request_hash": entry.request_hash,
        "response": response,
    }


def _need(
    mapping: Mapping[str, Any], key: str, kind: type | tuple[type, ...], path: str, position: int, field: str
) -> Any:
    if key not in mapping:
        raise CassetteFormatError(
            path, "missing; re-record the cassette or fix the entry by hand", entry=position, field=field
        )
    value = mapping[key]
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise CassetteFormatError(
            path, f"expected {names}, found {type(value).__name__}", entry=position, field=field
        )
    return value


def entry_from_mapping(raw: Mapping[str, Any], path: str, position: int) -> Entry:
    """The entry at ``position`` of the file ``path``, checked field by field."""
    if not isinstance(raw, Mapping):
        raise CassetteFormatError(
            path, f"an entry must be a mapping, found {type(raw).__name__}", entry=position
        )
    request = _need(raw, "request", dict, path, position, "request")
    response = _need(raw, "response", dict, path, position, "response")
    method = _need(request, "method", str, path, position, "request.method")
    req_path = _need(request, "path", str, path, position, "request.path")
    query = request.get("query") or []
    if not isinstance(query, list) or not all(isinstance(p, list) and len(p) == 2 for p in query):
        raise CassetteFormatError(
            path, "expected a list of [key, value] pairs", entry=position, field="request.query"
        )
    headers = request.get("headers") or {}
    if not isinstance(headers, dict):
        raise CassetteFormatError(path, "expected a mapping", entry=position, field="request.headers")
    status = _need(response, "status", int, path, position, "response.status")
    if isinstance(status, bool) or not 100 <= status <= 599:
        raise CassetteFormatError(
            path, f"not an HTTP status: {status!r}", entry=position, field="response.status"
        )
    res_headers = response.get("headers") or {}
    if not isinstance(res_headers, dict):
        raise CassetteFormatError(path, "expected a mapping", entry=position, field="response.headers")
    stream = response.get("stream")
    timing = response.get("timing")
    if timing is not None:
        if not isinstance(stream, list) or not isinstance(timing, list) or len(timing) != len(stream):
            raise CassetteFormatError(
                path,
                "expected one arrival offset (ms) per stream event",
                entry=position,
                field="response.timing",
            )
        stream = [
            {**event, "t": t} if isinstance(event, dict) and t is not None else event
            for event, t in zip(stream, timing, strict=True)
        ]
    if stream is not None:
        if not isinstance(stream, list):
            raise CassetteFormatError(
                path, "expected a list of events", entry=position, field="response.stream"
            )
        for i, event in enumerate(stream):
            if not isinstance(event, dict) or "data" not in event:
                raise CassetteFormatError(
                    path, "each event is a mapping with 'data'", entry=position, field=f"response.stream[{i}]"
                )
    request_hash = raw.get("request_hash")
    if not isinstance(request_hash, str):
        raise CassetteFormatError(path, "missing or not a string", entry=position, field="request_hash")
    provider = raw.get("provider", "")
    failure = response.get("failure")
    return Entry(
        provider=str(provider),
        request=Request(
            method=method,
            path=req_path,
            body=request.get("body"),
            query=tuple((str(k), str(v)) for k, v in query),
            headers={str(k): str(v) for k, v in headers.items()},
        ),
        response=Response(
            status=status,
            headers={str(k): str(v) for k, v in res_headers.items()},
            body=response.get("body"),
            stream=stream,
            truncated=bool(response.get("truncated", False)),
            failure=str(failure) if failure else None,
        ),
        request_hash=request_hash,
    )


def migrate(document: dict[str, Any], path: str) -> dict[str, Any]:
    """The document in today's format version, or ``CassetteFormatError`` saying why it cannot be."""
    version = document.get("version")
    if version is None:
        raise CassetteFormatError(path, "no 'version': this is not an llmvcr cassette", field="version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise CassetteFormatError(path, f"expected an integer, found {version!r}", field="version")
    if version > FORMAT_VERSION:
        raise CassetteFormatError(
            path,
            f"format version {version} is newer than this llmvcr reads ({FORMAT_VERSION}); "
            f"upgrade llmvcr (pip install -U pyllmvcr) to a release that reads version {version}",
            field="version",
        )
    if version < 1:
        raise CassetteFormatError(path, f"unknown format version {version}", field="version")
    return document
