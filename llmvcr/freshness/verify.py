"""A live drift check that rewrites nothing: each recorded request is sent to the live API again and
the *shape* of the answer is compared with the recorded one.

Drift is what breaks code that parses the answer: a field added or removed, a type changed, a stream
event type new or gone, an error where a success was recorded (or the reverse). Text that differs
is expected of a model and is not drift, nor is a field that is null on one side (null where it
appears, null before it went away, or null where an object now comes, with the object's fields), nor
the items of a list that one side leaves empty. List items are compared by their ``type`` when they have one
(``content[type=text]``, ``content[type=tool_use]``), so a model that answers with text where it
once called a tool changes nothing that is compared. The keys of a tool's input are the model's own
and are not compared.

>>> report = verify_cassette(load_cassette("cassettes/bug-427.yaml"), Target.from_env())
>>> [str(d) for d in report.drift]
['#0 POST /v1/messages: field added: usage.service_tier (string)']
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ..cassette import Cassette, Entry
from ..cassette.values import FrozenValue, Value
from ..wire import ApiKey, lookup
from ..wire import mcp as wire_mcp
from ..wire.sse import parse_events
from .mcp_drift import servers_given, verify_mcp

__all__ = ["Drift", "Report", "Target", "joined", "shape", "verify_cassette"]

_FREE_FORM = frozenset({"input", "metadata"})  # whose keys the model (a tool call) or the caller choose


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def shape(value: Any, path: str = "", into: dict[str, set[str]] | None = None) -> dict[str, set[str]]:
    """Every path of a JSON value with the kinds found there (``usage.input_tokens -> {number}``);
    list items are merged, keyed by their ``type`` when they carry one."""
    found: dict[str, set[str]] = {} if into is None else into
    found.setdefault(path, set()).add(_kind(value))
    if isinstance(value, Mapping):
        for key, item in value.items():
            if key in _FREE_FORM:
                found.setdefault(f"{path}.{key}".lstrip("."), set()).add(_kind(item))
                continue
            shape(item, f"{path}.{key}".lstrip("."), found)
    elif isinstance(value, list):
        for item in value:
            kind = item.get("type") if isinstance(item, Mapping) else None
            shape(item, f"{path}[type={kind}]" if isinstance(kind, str) else f"{path}[*]", found)
    return found


def _parent(path: str) -> str:
    cut = max(path.rfind("."), path.rfind("["))
    return path[:cut] if cut > 0 else ""


@dataclass(frozen=True, eq=False, repr=False)
class Drift(FrozenValue):
    """One change in the shape of the answer to a recorded request."""

    entry: int
    call: str  # "POST /v1/messages"
    kind: str  # field added, field removed, type changed, new stream event type, ...
    detail: str

    def __str__(self) -> str:
        return f"#{self.entry} {self.call}: {self.kind}: {self.detail}"


def compare(before: Any, after: Any, entry: int, call: str, where: str = "") -> list[Drift]:
    """The drift from the JSON value ``before`` (recorded) to ``after`` (live)."""
    old, new = shape(before), shape(after)
    out: list[Drift] = []
    prefix = f"{where} " if where else ""
    for path in sorted(set(old) | set(new)):
        parent = _parent(path)
        if path and (parent not in old or parent not in new):
            continue  # under a list one side left empty, or a field the other side lacks: said above
        if path and not (old[parent] - {"null"} and new[parent] - {"null"}):
            continue  # a sub-field of a value that is null on one side (logprobs: null, then an object)
        was, now = old.get(path, set()) - {"null"}, new.get(path, set()) - {"null"}
        if path not in new:
            if was:  # a field that was only ever null and went away is no drift
                out.append(Drift(entry, call, "field removed", f"{prefix}{path}"))
        elif path not in old:
            if now:  # nor is one that appears as null
                out.append(Drift(entry, call, "field added", f"{prefix}{path} ({'/'.join(sorted(now))})"))
        elif was and now and was != now:
            shown = f"{'/'.join(sorted(was))} -> {'/'.join(sorted(now))}"
            out.append(Drift(entry, call, "type changed", f"{prefix}{path}: {shown}"))
    return out


def _event_type(event: Mapping[str, Any]) -> str:
    data = event.get("data")
    if isinstance(event.get("event"), str):
        return str(event["event"])
    if isinstance(data, Mapping) and isinstance(data.get("type"), str):
        return str(data["type"])
    if isinstance(data, Mapping) and isinstance(data.get("object"), str):
        return str(data["object"])
    return "[DONE]" if data == "[DONE]" else "(untyped)"


def compare_streams(before: list[Any], after: list[Any], entry: int, call: str) -> list[Drift]:
    """New and vanished event types, and the drift in the data of each type both streams send."""

    def by_type(events: list[Any]) -> dict[str, list[Any]]:
        grouped: dict[str, list[Any]] = {}
        for event in events:
            if isinstance(event, Mapping):
                grouped.setdefault(_event_type(event), []).append(event.get("data"))
        return grouped

    old, new = by_type(before), by_type(after)
    out = [Drift(entry, call, "new stream event type", name) for name in sorted(set(new) - set(old))]
    out += [Drift(entry, call, "stream event type gone", name) for name in sorted(set(old) - set(new))]
    for name in sorted(set(old) & set(new)):
        out += compare(old[name], new[name], entry, call, where=f"[{name}]")
    return out


@dataclass(eq=False, repr=False)
class Target(Value):
    """Where requests go and with which keys: ``base_urls`` per provider (``"*"``: any)."""

    base_urls: dict[str, str] = field(default_factory=dict)
    timeout: float = 60.0
    mcp: list[str] = field(default_factory=list)  # MCP servers: a command or a URL each (``--mcp``)
    mcp_calls: bool = False  # send recorded ``tools/call`` again too (``--mcp-calls``)

    def url(self, provider: str) -> str | None:
        if provider in self.base_urls:
            return self.base_urls[provider]
        if "*" in self.base_urls:
            return self.base_urls["*"]
        fmt = lookup(provider)
        if fmt is None or fmt.api_key is None:
            return None
        return os.environ.get(fmt.api_key.base_url_env) or f"https://{fmt.api_host}"

    def auth(self, provider: str) -> dict[str, str]:
        """The key header for ``provider`` from its environment variable; ``KeyError`` names it."""
        live = _api_key(provider)
        if live is None:
            return {}
        key = os.environ.get(live.env)
        if not key:
            raise KeyError(live.env)
        return {live.header: f"Bearer {key}" if live.header == "authorization" else key}


def _api_key(provider: str) -> ApiKey | None:
    """Where the live check finds ``provider``'s key (its wire description says; None: not checked)."""
    fmt = lookup(provider)
    return fmt.api_key if fmt is not None else None


@dataclass(eq=False, repr=False)
class Report(Value):
    """One cassette: the requests sent again, the drift found, and what could not be checked."""

    path: str
    checked: int = 0
    drift: list[Drift] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # not checked: no key, unreachable, unknown provider

    def add(self, entry: int, call: str, kind: str, detail: str) -> None:
        self.drift.append(Drift(entry, call, kind, detail))


Answer = tuple[int, Any, "list[Any] | None"]  # status, JSON body, stream events


def joined(base: str, path: str) -> str:
    """The URL of the recorded ``path`` under ``base``. A base that already ends where the path
    begins is not repeated: the openai SDK's ``http://gw/v1`` with ``/v1/chat/completions`` is
    ``http://gw/v1/chat/completions``, as is ``http://gw`` with it."""
    base = base.rstrip("/")
    segments = path.split("/")  # "/v1/chat/completions" -> ["", "v1", "chat", "completions"]
    base_path = urlsplit(base).path
    for end in range(len(segments), 1, -1):  # the longest overlap first
        start = "/".join(segments[:end])
        if base_path.endswith(start):
            return base[: len(base) - len(start)] + path
    return base + path


def _send(entry: Entry, base: str, headers: dict[str, str], timeout: float) -> Answer:
    """Send the recorded request; ``(status, JSON body, stream events or None)``."""
    request = entry.request
    url = joined(base, request.path)
    if request.query:
        url += "?" + "&".join(f"{k}={v}" for k, v in request.query)
    data = json.dumps(request.body).encode("utf-8") if request.body is not None else None
    sent = {**{k: v for k, v in request.headers.items()}, **headers, "content-type": "application/json"}
    call = urllib.request.Request(url, data=data, method=request.method, headers=sent)
    try:
        with urllib.request.urlopen(call, timeout=timeout) as answer:
            status, kind, raw = answer.status, answer.headers.get("content-type", ""), answer.read()
    except urllib.error.HTTPError as err:
        status, kind, raw = err.code, err.headers.get("content-type", ""), err.read()
    if "text/event-stream" in kind:
        return status, None, parse_events(raw)
    try:
        return status, json.loads(raw) if raw else None, None
    except ValueError:
        return status, raw.decode("utf-8", "replace"), None


def verify_cassette(cassette: Cassette, target: Target) -> Report:
    """Send every request of ``cassette`` again and report the drift in the answers' shape."""
    report = Report(cassette.path)
    mcp: list[int] = []  # MCP entries: sent again server by server, after the model's calls
    for position in range(len(cassette)):
        entry = cassette.entry(position)
        if wire_mcp.is_mcp(entry):
            mcp.append(position)
            continue
        call = f"{entry.request.method} {entry.request.path}"
        base = target.url(entry.provider)
        if base is None:
            report.problems.append(f"#{position} {call}: no live URL for {entry.provider!r}; give --base-url")
            continue
        try:
            headers = target.auth(entry.provider)
        except KeyError as missing:
            report.problems.append(f"#{position} {call}: set {missing.args[0]} to send it")
            continue
        try:
            status, body, stream = _send(entry, base, headers, target.timeout)
        except OSError as err:
            report.problems.append(f"#{position} {call}: {base} unreachable ({err})")
            continue
        report.checked += 1
        recorded = entry.response
        ok_then, ok_now = recorded.status < 400, status < 400
        if ok_then and not ok_now:
            error = body.get("error") if isinstance(body, Mapping) else None
            why = error.get("type") if isinstance(error, Mapping) else None
            kind = f" ({why})" if why else ""
            what = f"HTTP {status}{kind}"
            report.drift.append(Drift(position, call, "error where success was recorded", what))
            continue
        if ok_now and not ok_then:
            what = f"HTTP {recorded.status} -> {status}"
            report.drift.append(Drift(position, call, "success where an error was recorded", what))
            continue
        if (recorded.stream is None) != (stream is None):
            was = "a stream" if recorded.stream is not None else "a JSON body"
            report.drift.append(Drift(position, call, "answer form changed", f"{was} was recorded"))
        elif stream is not None and recorded.stream is not None:
            report.drift += compare_streams(recorded.stream, stream, position, call)
        else:
            report.drift += compare(recorded.body, body, position, call)
    if mcp:
        verify_mcp(cassette, mcp, servers_given(target.mcp), target.mcp_calls, target.timeout, report)
    return report
