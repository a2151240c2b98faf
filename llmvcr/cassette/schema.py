"""The cassette format: entries <-> mappings, and the format versions llmvcr reads.

Every error names the file, the entry and the field, and says what to do. A document from a
newer llmvcr is refused with the release that reads it; older versions are migrated here.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from functools import cache
from typing import TYPE_CHECKING, Any

from ..errors import CassetteFormatError
from .entries import Entry, Request, Response
from .linear import FORMAT_VERSION


class Inline(list):  # type: ignore[type-arg]
    """A list a YAML cassette writes on one line (``[0.0, 12.5, 30.1]``)."""


@cache
def release() -> str:
    """The release, as pyproject.toml states it; named in every cassette. Read from the installed
    package's metadata when first asked (a millisecond a process that replays only need not pay)."""
    import importlib.metadata

    try:
        return importlib.metadata.version("pyllmvcr")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"


if TYPE_CHECKING:
    LLMVCR_VERSION: str


def __getattr__(name: str) -> str:
    if name == "LLMVCR_VERSION":  # the release(), under the name converters and the CLI import
        return release()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def recorded_with() -> dict[str, str]:
    """The versions every new cassette names, and when it was recorded (``at``, UTC, what ``max_age``
    counts from); each SDK's version is added when a call through it is recorded."""
    import platform

    at = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"llmvcr": release(), "python": platform.python_version(), "at": at}


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
    if res.stream is None or res.body is not None:  # an MCP answer keeps its body beside its stream
        response["body"] = res.body
    if res.truncated:
        response["truncated"] = True
    if res.failure:
        response["failure"] = res.failure
    if res.as_asked:
        response["as_asked"] = True
    mapping: dict[str, Any] = {
        "provider": entry.provider,
        "request": request,
        "request_hash": entry.request_hash,
    }
    if entry.hashed_as_sent:  # before_record changed the request after it was hashed
        mapping["hashed_as_sent"] = True
    mapping["response"] = response
    return mapping


_MISSING = object()


_KINDS = {
    "str": "text",
    "NoneType": "null",
    "bool": "true/false",
    "int": "a whole number",
    "float": "a number",
    "dict": "a mapping",
    "list": "a list",
}
FIX = "fix the value by hand (docs/cassette-format.md says what each field holds) or re-record"


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = [kind] if isinstance(kind, type) else list(kind)
    return " or ".join(_KINDS.get(k.__name__, k.__name__) for k in names)


def _need(
    mapping: Mapping[str, Any],
    key: str,
    kind: type | tuple[type, ...],
    path: str,
    position: int,
    field: str,
    default: Any = _MISSING,
) -> Any:
    """``mapping[key]`` when it is a ``kind``; ``default`` when absent (if given); else the error."""
    value = mapping.get(key, _MISSING)
    if type(value) is kind or (type(kind) is tuple and type(value) in kind):
        return value  # the common case, exact types: every entry of a file is checked at first load
    if key not in mapping:
        if default is not _MISSING:
            return default
        raise CassetteFormatError(
            path, "missing; re-record the cassette or fix the entry by hand", entry=position, field=field
        )
    value = mapping[key]
    kinds = (kind,) if isinstance(kind, type) else kind
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):  # True is no 1
        raise CassetteFormatError(
            path,
            f"expected {_kind_name(kind)}, found {type(value).__name__} {_short(value)}; {FIX}",
            entry=position,
            field=field,
        )
    return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _text_pairs(mapping: Mapping[str, Any], key: str, path: str, position: int, field: str) -> dict[str, str]:
    """A headers mapping: text names to text values (a hand-edited ``10`` must be quoted)."""
    headers = _need(mapping, key, dict, path, position, field, default={})
    for name, value in headers.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise CassetteFormatError(
                path,
                f"expected text, found {type(value).__name__} {_short(value)}; quote the value",
                entry=position,
                field=f"{field}.{name}",
            )
    return dict(headers)


def _stream(response: Mapping[str, Any], path: str, position: int) -> list[dict[str, Any]] | None:
    stream: list[dict[str, Any]] | None = _need(
        response, "stream", (list, type(None)), path, position, "response.stream", None
    )
    timing = _need(response, "timing", (list, type(None)), path, position, "response.timing", None)
    if timing is not None:
        if stream is None or len(timing) != len(stream):
            raise CassetteFormatError(
                path,
                f"expected one arrival offset (ms) per stream event; {FIX}",
                entry=position,
                field="response.timing",
            )
        for i, t in enumerate(timing):
            if isinstance(t, bool) or not isinstance(t, (int, float, type(None))):
                raise CassetteFormatError(
                    path,
                    f"expected a number of milliseconds, found {type(t).__name__} {_short(t)}; {FIX}",
                    entry=position,
                    field=f"response.timing[{i}]",
                )
        merged, checked = [], True
        for i, (event, t) in enumerate(zip(stream, timing, strict=True)):
            if (
                type(event) is dict
                and type(t) in (int, float)
                and "data" in event
                and ((len(event) == 2 and type(event.get("event")) is str) or _plain_event(event))
            ):
                merged.append({**event, "t": t})  # the common case: checked here, not again below
            else:
                checked = False
                if isinstance(event, dict):  # an event's own t, wrong, is refused, never hidden by the line
                    _need(event, "t", _EVENT_FIELDS["t"], path, position, f"response.stream[{i}].t", None)
                merged.append({**event, "t": t} if isinstance(event, dict) and t is not None else event)
        stream = merged
        if checked:
            return stream
    for i, event in enumerate(stream or []):
        if type(event) is dict and "data" in event and _plain_event(event):
            continue  # the common case, checked without building the field's name
        field = f"response.stream[{i}]"
        if not isinstance(event, dict) or "data" not in event:
            raise CassetteFormatError(
                path, f"each event is a mapping with 'data'; {FIX}", entry=position, field=field
            )
        for key, kind in _EVENT_FIELDS.items():  # each optional
            _need(event, key, kind, path, position, f"{field}.{key}", None)
    return stream


_NULL = type(None)  # null, as when absent
_EVENT_FIELDS: dict[str, tuple[type, ...]] = {
    "event": (str, _NULL),
    "id": (str, _NULL),
    "retry": (int, _NULL),
    "t": (int, float, _NULL),
}


def _plain_event(event: dict[str, Any]) -> bool:
    """Every optional field of ``event`` is of its exact type (anything else gets the full check)."""
    for key, value in event.items():
        kinds = _EVENT_FIELDS.get(key)
        if kinds is not None and type(value) not in kinds:
            return False
    return True


def entry_from_mapping(raw: Mapping[str, Any], path: str, position: int) -> Entry:
    """The entry at ``position`` of the file ``path``, checked field by field: a value of the wrong
    type is an error naming the file, the entry and the field, never coerced."""
    if type(raw) is not dict and not isinstance(raw, Mapping):
        raise CassetteFormatError(
            path, f"an entry must be a mapping, found {type(raw).__name__}; {FIX}", entry=position
        )
    request = _need(raw, "request", dict, path, position, "request")
    response = _need(raw, "response", dict, path, position, "response")
    method = _need(request, "method", str, path, position, "request.method")
    req_path = _need(request, "path", str, path, position, "request.path")
    query = _need(request, "query", list, path, position, "request.query", [])
    if not all(
        isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) and isinstance(p[1], str) for p in query
    ):
        raise CassetteFormatError(
            path, f"expected a list of [key, value] text pairs; {FIX}", entry=position, field="request.query"
        )
    headers = _text_pairs(request, "headers", path, position, "request.headers")
    status = _need(response, "status", int, path, position, "response.status")
    if not 100 <= status <= 599:
        raise CassetteFormatError(
            path, f"not an HTTP status: {status!r}; {FIX}", entry=position, field="response.status"
        )
    res_headers = _text_pairs(response, "headers", path, position, "response.headers")
    stream = _stream(response, path, position)
    if stream is None and "body" not in response:
        raise CassetteFormatError(
            path,
            "missing: a response holds 'body' (null for an empty one) or 'stream'; re-record the "
            "cassette or restore it from version control",
            entry=position,
            field="response.body",
        )
    request_hash = _need(raw, "request_hash", str, path, position, "request_hash")
    provider = _need(raw, "provider", str, path, position, "provider", "")
    truncated = _need(response, "truncated", bool, path, position, "response.truncated", False)
    failure = _need(response, "failure", (str, type(None)), path, position, "response.failure", None)
    as_asked = _need(response, "as_asked", bool, path, position, "response.as_asked", False)
    hashed_as_sent = _need(raw, "hashed_as_sent", bool, path, position, "hashed_as_sent", False)
    return Entry(
        provider=provider,
        request=Request(
            method=method,
            path=req_path,
            body=request.get("body"),
            query=tuple((k, v) for k, v in query),
            headers=headers,
        ),
        response=Response(
            status=status,
            headers=res_headers,
            body=response.get("body"),
            stream=stream,
            truncated=truncated,
            failure=failure or None,
            as_asked=as_asked,
        ),
        request_hash=request_hash,
        hashed_as_sent=hashed_as_sent,
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
