"""``llmvcr verify`` for MCP servers: a cassette's read-only MCP requests sent to the live server again,
and what changed in its tools, resources and prompts reported as drift.

The read-only requests are ``initialize``, ``tools/list``, ``resources/list``, ``resources/templates/list``
and ``prompts/list`` (``llmvcr.wire.mcp.READ_ONLY``); ``tools/call`` is sent again only when asked
(``--mcp-calls``), since a tool may act on the world. Each server of the cassette gets one fresh
connection: its recorded ``initialize`` (or a plain one), then its requests in recorded order.

A server is reached by what the cassette names it (``stdio:python server.py``,
``http://127.0.0.1/mcp``) matched against the servers given (``--mcp COMMAND`` or ``--mcp URL``, named
the way recording names them); a stdio server that none matches is started from its name's words
when its command is on the ``PATH`` and nothing in its name was redacted. An HTTP server's name has
no port, so it must be given.

A tool added, removed or renamed (one gone and one new with the same input schema), a changed input
schema or description are drift; for resources and prompts, one added or removed.
"""

from __future__ import annotations

import json
import select
import shlex
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Protocol

from ..cassette import Cassette, Entry
from ..wire import mcp as wire
from ..wire.sse import parse_events

JSON = dict[str, Any]
_PLAIN_INIT: JSON = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "llmvcr-verify", "version": "1"},
}
_SESSION = "mcp-session-id"
_KEYED = {"tools/list": "tools", "resources/list": "resources", "prompts/list": "prompts"}
_ID_OF = {"tools": "name", "resources": "uri", "prompts": "name", "resourceTemplates": "uriTemplate"}


class DriftSink(Protocol):
    """Where drift and problems go (``verify.Report``)."""

    checked: int
    problems: list[str]

    def add(self, entry: int, call: str, kind: str, detail: str) -> None: ...


def servers_given(given: list[str]) -> dict[str, list[str] | str]:
    """``--mcp`` values by the name recording gives them: a URL, or a command split as a shell would."""
    out: dict[str, list[str] | str] = {}
    for item in given:
        if item.startswith(("http://", "https://")):
            out[wire.http_server(item)] = item
        else:
            words = shlex.split(item)
            if words:
                out[wire.stdio_server(words[0], words[1:])] = words
    return out


def _reach(server: str, given: Mapping[str, list[str] | str]) -> list[str] | str:
    """The command (a list) or URL to reach ``server``, or a sentence saying why it cannot be reached."""
    if server in given:
        return given[server]
    if server.startswith("stdio:"):
        words = shlex.split(server[len("stdio:") :])
        if words and wire.REDACTED not in server and shutil.which(words[0]):
            return words
        return (
            f"the stdio server {server} was not given; give --mcp 'COMMAND ARGS' (it is matched by its "
            f"command's file name and arguments)"
        )
    return f"the HTTP server {server} was not given (its port is not recorded); give --mcp URL"


def verify_mcp(
    cassette: Cassette,
    positions: list[int],
    given: Mapping[str, list[str] | str],
    calls: bool,
    timeout: float,
    sink: DriftSink,
) -> None:
    """Send the MCP entries at ``positions`` of ``cassette`` again, server by server; drift into ``sink``."""
    by_server: dict[str, list[tuple[int, Entry]]] = {}
    for position in positions:
        entry = cassette.entry(position)
        by_server.setdefault(entry.request.path, []).append((position, entry))
    for server, entries in by_server.items():
        wanted = [
            (p, e)
            for p, e in entries
            if e.request.method in wire.READ_ONLY or (calls and e.request.method == "tools/call")
        ]
        skipped = [p for p, e in entries if e.request.method == "tools/call" and not calls]
        if skipped:
            sink.problems.append(
                f"{len(skipped)} tools/call of {server} not sent again (a tool may have side effects; "
                f"--mcp-calls sends them)"
            )
        how = _reach(server, given)
        if isinstance(how, str) and not how.startswith(("http://", "https://")):
            sink.problems.append(f"#{wanted[0][0] if wanted else entries[0][0]} mcp {server}: {how}")
            continue
        init = next((e.request.body for _, e in entries if e.request.method == "initialize"), None)
        try:
            with _connect(how, timeout) as ask:
                ask("initialize", init if isinstance(init, dict) else _PLAIN_INIT)
                ask("notifications/initialized", None)
                for position, entry in wanted:
                    answer = ask(entry.request.method, entry.request.body)
                    sink.checked += 1
                    _compare(entry, answer, position, sink)
        except (OSError, ValueError, TimeoutError) as err:
            sink.problems.append(f"mcp {server}: not reached ({type(err).__name__}: {err})")


def _compare(entry: Entry, answer: JSON, position: int, sink: DriftSink) -> None:
    call = f"mcp {entry.request.method} {entry.request.path}"
    body = entry.response.body if isinstance(entry.response.body, dict) else {}
    was_error, is_error = "error" in body, "error" in answer
    if was_error != is_error:
        kind = "error where success was recorded" if is_error else "success where an error was recorded"
        detail = str((answer.get("error") or {}).get("message", "")) if is_error else ""
        sink.add(position, call, kind, detail[:200])
        return
    before, after = body.get("result"), answer.get("result")
    if not isinstance(before, dict) or not isinstance(after, dict):
        return
    if entry.request.method == "initialize":
        old, new = before.get("serverInfo") or {}, after.get("serverInfo") or {}
        if old.get("name") != new.get("name"):
            sink.add(position, call, "server changed", f"{old.get('name')!r} -> {new.get('name')!r}")
        added = sorted(set(after.get("capabilities") or {}) - set(before.get("capabilities") or {}))
        gone = sorted(set(before.get("capabilities") or {}) - set(after.get("capabilities") or {}))
        for name in added:
            sink.add(position, call, "capability added", name)
        for name in gone:
            sink.add(position, call, "capability removed", name)
        return
    key = _KEYED.get(entry.request.method) or (
        "resourceTemplates" if entry.request.method == "resources/templates/list" else None
    )
    if key is not None:
        _compare_listed(key, before.get(key) or [], after.get(key) or [], position, call, sink)
    elif bool(before.get("isError")) != bool(after.get("isError")):
        params = entry.request.body if isinstance(entry.request.body, dict) else {}
        tool = params.get("name")
        sink.add(
            position,
            call,
            "tool result changed",
            f"{tool}: isError {bool(before.get('isError'))} -> {bool(after.get('isError'))}",
        )


def _compare_listed(
    key: str, before: list[Any], after: list[Any], position: int, call: str, sink: DriftSink
) -> None:
    field = _ID_OF[key]
    noun = key.rstrip("s") if key != "resourceTemplates" else "resource template"
    old = {str(t.get(field)): t for t in before if isinstance(t, dict)}
    new = {str(t.get(field)): t for t in after if isinstance(t, dict)}
    gone, added = sorted(set(old) - set(new)), sorted(set(new) - set(old))
    if key == "tools":  # a tool gone and one new taking the same input: renamed
        for name in list(gone):
            taken = _canonical(_untitled(old[name].get("inputSchema")))
            same = [a for a in added if _canonical(_untitled(new[a].get("inputSchema"))) == taken]
            if len(same) == 1:
                sink.add(position, call, "tool renamed", f"{name} -> {same[0]}")
                gone.remove(name)
                added.remove(same[0])
    for name in gone:
        sink.add(position, call, f"{noun} removed", name)
    for name in added:
        sink.add(position, call, f"{noun} added", name)
    for name in sorted(set(old) & set(new)):
        for part, label in (
            ("inputSchema", "input schema"),
            ("arguments", "arguments"),
            ("description", "description"),
        ):
            if _canonical(old[name].get(part)) != _canonical(new[name].get(part)):
                sink.add(
                    position,
                    call,
                    f"{noun} {label} changed",
                    _said(name, old[name].get(part), new[name].get(part)),
                )


def _said(name: str, before: Any, after: Any) -> str:
    if isinstance(before, dict) and isinstance(after, dict):
        props_old, props_new = before.get("properties") or {}, after.get("properties") or {}
        moved = [f"+{p}" for p in sorted(set(props_new) - set(props_old))]
        moved += [f"-{p}" for p in sorted(set(props_old) - set(props_new))]
        if moved:
            return f"{name} ({', '.join(moved)})"
    if isinstance(before, str) or isinstance(after, str):
        return f"{name}: {str(before)[:80]!r} -> {str(after)[:80]!r}"
    return name


def _untitled(schema: Any) -> Any:
    """An input schema without its titles (the SDKs title it after the tool: ``echoArguments``)."""
    if isinstance(schema, dict):
        return {k: _untitled(v) for k, v in schema.items() if k != "title"}
    if isinstance(schema, list):
        return [_untitled(v) for v in schema]
    return schema


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


# -- a minimal JSON-RPC client, stdio or streamable HTTP ------------------------------------------
Ask = Any  # (method, params) -> the answer (a notification: {})


@contextmanager
def _connect(how: list[str] | str, timeout: float) -> Iterator[Ask]:
    if isinstance(how, str):
        yield _HttpClient(how, timeout).ask
        return
    try:
        child = subprocess.Popen(
            how, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
    except OSError as err:
        raise OSError(f"cannot start {how[0]!r}: {err}") from None
    try:
        yield _StdioClient(child, timeout).ask
    finally:
        for pipe in (child.stdin, child.stdout):
            if pipe is not None:
                pipe.close()
        try:
            child.wait(5)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


class _Numbered:
    """A JSON-RPC client's side of the ids: each request gets the next one, a notification none."""

    next: int  # the last id sent

    def _message(self, method: str, params: Any) -> JSON:
        message: JSON = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        if not method.startswith("notifications/"):
            self.next += 1
            message["id"] = self.next
        return message


class _StdioClient(_Numbered):
    def __init__(self, child: subprocess.Popen[bytes], timeout: float) -> None:
        self.child, self.timeout, self.next = child, timeout, 0

    def ask(self, method: str, params: Any) -> JSON:
        assert self.child.stdin is not None and self.child.stdout is not None
        message = self._message(method, params)
        notification = "id" not in message
        self.child.stdin.write(json.dumps(message).encode() + b"\n")
        self.child.stdin.flush()
        if notification:
            return {}
        deadline = time.monotonic() + self.timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.child.stdout], [], [], left)[0]:
                raise TimeoutError(f"no answer to {method} in {self.timeout:g} s")
            line = self.child.stdout.readline()
            if not line:
                raise OSError(f"the server ended before answering {method}")
            try:
                got = json.loads(line)
            except ValueError:
                continue
            if isinstance(got, dict) and got.get("id") == self.next and "method" not in got:
                return got
            if isinstance(got, dict) and "method" in got and "id" in got:  # a server request: declined
                refusal = wire.error_answer(got["id"], "llmvcr verify answers no server requests", -32601)
                self.child.stdin.write(json.dumps(refusal).encode() + b"\n")
                self.child.stdin.flush()


class _HttpClient(_Numbered):
    def __init__(self, url: str, timeout: float) -> None:
        self.url, self.timeout, self.next = url, timeout, 0
        self.headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}

    def ask(self, method: str, params: Any) -> JSON:
        message = self._message(method, params)
        notification = "id" not in message
        call = urllib.request.Request(
            self.url, data=json.dumps(message).encode(), headers=self.headers, method="POST"
        )
        with urllib.request.urlopen(call, timeout=self.timeout) as answer:
            session = answer.headers.get(_SESSION)
            kind, raw = answer.headers.get("content-type", ""), answer.read()
        if session:
            self.headers[_SESSION] = session
        if method == "initialize":
            self.headers["mcp-protocol-version"] = str(
                (params or {}).get("protocolVersion", _PLAIN_INIT["protocolVersion"])
            )
        if notification:
            return {}
        found = [e.get("data") for e in parse_events(raw)] if "event-stream" in kind else [json.loads(raw)]
        for got in found:
            if isinstance(got, dict) and got.get("id") == self.next and "method" not in got:
                return got
        raise ValueError(f"no answer to {method} in the server's reply")
