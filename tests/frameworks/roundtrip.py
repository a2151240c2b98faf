"""The frameworks suite's harness: each framework against the loopback server, recorded, then replayed offline.

``roundtrip`` runs a scenario twice: inside a recording cassette against the server, then inside a
replay-only cassette with every socket refused. Both runs must give the same output, the replay
must reach nothing, and no file written may hold the sentinel key.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import inspect
import json
import socket
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import wrapt
from llm_server import LLMServer

import llmvcr
from llmvcr.cassette import Entry

SENTINEL = "sk-SENTINEL-framework-key-0123456789abcdef"
# the OpenAI-format tool the litellm and DSPy scenarios offer
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]

# The HTTP library functions a request can leave through, by the name the table gives them.
TRANSPORTS = {
    "httpx2": ("httpx2:Client.send", "httpx2:AsyncClient.send"),
    "httpx": ("httpx:Client.send", "httpx:AsyncClient.send"),
    "aiohttp": ("aiohttp:ClientSession._request",),
    "lm15 sockets": (
        "dspy._vendor.lm15.transports:StdlibTransport.stream",
        "dspy._vendor.lm15.transports:StdlibAsyncTransport.stream",
    ),
}


@dataclass(frozen=True)
class Result:
    """One scenario that recorded, replayed offline with equal output, and left no key in a file."""

    name: str
    framework: str  # the distribution, as pip names it
    requests: int
    providers: list[str]
    transports: dict[str, int]  # the outermost HTTP library each recorded request went through
    kinds: list[str]  # what the cassette holds: chat, stream, tools, tool-result, embeddings, error


RESULTS: list[Result] = []  # printed at the end of the run (conftest.pytest_terminal_summary)

_sending: contextvars.ContextVar[bool] = contextvars.ContextVar("sending", default=False)


@contextlib.contextmanager
def transports_used() -> Iterator[Counter[str]]:
    """Count each request once, by the outermost HTTP library it passed (litellm's async httpx
    client sends through an aiohttp transport: that request counts as httpx, as llmvcr records it)."""
    used: Counter[str] = Counter()
    handles: list[tuple[Any, str, Any]] = []

    def spy(name: str) -> Callable[..., Any]:
        def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
            if _sending.get():
                return wrapped(*args, **kwargs)
            used[name] += 1
            if inspect.iscoroutinefunction(wrapped):

                async def run() -> Any:
                    token = _sending.set(True)
                    try:
                        return await wrapped(*args, **kwargs)
                    finally:
                        _sending.reset(token)

                return run()
            token = _sending.set(True)
            try:
                return wrapped(*args, **kwargs)
            finally:
                _sending.reset(token)

        return wrapper

    for name, specs in TRANSPORTS.items():
        for spec in specs:
            module_name, _, dotted = spec.partition(":")
            owner: Any = importlib.import_module(module_name)
            *parents, attr = dotted.split(".")
            for parent in parents:
                owner = getattr(owner, parent)
            handles.append((owner, attr, wrapt.wrap_function_wrapper(owner, attr, spy(name))))
    try:
        yield used
    finally:
        for owner, attr, handle in reversed(handles):
            wrapt.unwrap_object(owner, attr, handle)


def kinds_of(entries: list[Entry]) -> list[str]:
    """What a cassette shows was exercised, read from the entries themselves."""
    found: set[str] = set()
    for entry in entries:
        body = json.dumps(entry.request.body, default=str)
        path = entry.request.path
        if entry.response.status >= 400:
            found.add("error")
        elif path.endswith(("embeddings", ":embedContent", ":batchEmbedContents")):
            found.add("embeddings")
        else:
            found.add("stream" if entry.response.stream is not None else "chat")
        if any(k in body for k in ('"tools"', '"functionDeclarations"')):
            found.add("tools")
        if any(
            k in body
            for k in (
                '"tool_call_id"',
                '"tool_result"',
                '"functionResponse"',
                '"function_response"',
                "function_call_output",
            )
        ):
            found.add("tool-result")
    order = ["chat", "stream", "tools", "tool-result", "embeddings", "error"]
    return [k for k in order if k in found]


class Refused(AssertionError):
    pass


@contextlib.contextmanager
def sockets_refused() -> Iterator[list[Any]]:
    attempts: list[Any] = []

    def refuse(self: socket.socket, address: Any) -> None:
        attempts.append(address)
        raise Refused(f"network refused: connect to {address!r}")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket.socket, "connect", refuse)
        mp.setattr(socket.socket, "connect_ex", refuse)
        yield attempts


def _files_clean(directory: Path) -> None:
    files = [p for p in directory.rglob("*") if p.is_file()]
    assert files, "no cassette was written"
    for path in files:
        assert SENTINEL not in path.read_text(errors="replace"), f"sentinel key written to {path.name}"


class Roundtrip:
    """Record a scenario, replay it offline, compare."""

    def __init__(self, server: LLMServer, directory: Path) -> None:
        self.server, self.directory = server, directory
        self.entries = 0  # entries the last record run wrote
        self.requests = 0  # requests the last record run sent
        self.providers: list[str] = []  # providers the last record run recorded as
        self.transports: Counter[str] = Counter()  # HTTP libraries the last record run sent through
        self.kinds: list[str] = []  # what the last record run's cassette holds

    def _recorded(self, name: str, before: int, cassette: Any, used: Counter[str]) -> int:
        assert self.server.request_count > before, f"{name}: the record run never reached the server"
        count = self.server.request_count
        self.requests = count - before
        self.providers = sorted({e.provider for e in cassette.entries})
        self.transports = used
        self.kinds = kinds_of(list(cassette.entries))
        return count

    def _check(
        self,
        name: str,
        framework: str,
        result: tuple[Any, Any],
        count: int,
        attempts: list[Any],
        entries: int,
    ) -> Any:
        live, replayed = result
        assert entries > 0, f"{name}: nothing was recorded"
        self.entries = entries
        assert entries == self.requests, (
            f"{name}: {self.requests} requests went out, {entries} entries recorded"
        )
        assert sum(self.transports.values()) == self.requests, (
            f"{name}: {self.requests} requests at the server, {dict(self.transports)} through the seams"
        )
        assert attempts == [], f"{name}: replay tried the network: {attempts}"
        assert self.server.request_count == count, f"{name}: replay reached the server"
        assert replayed == live
        _files_clean(self.directory)
        transports = dict(sorted(self.transports.items()))
        RESULTS.append(Result(name, framework, entries, self.providers, transports, self.kinds))
        return replayed

    def __call__(self, name: str, scenario: Callable[[], Any], *, framework: str) -> Any:
        before = self.server.request_count
        with transports_used() as used, llmvcr.recording(name) as cassette:
            live = scenario()
        count = self._recorded(name, before, cassette, used)
        with sockets_refused() as attempts, llmvcr.recording(name, record_mode="none"):
            replayed = scenario()
        return self._check(name, framework, (live, replayed), count, attempts, len(cassette.entries))

    async def run_async(self, name: str, scenario: Callable[[], Any], *, framework: str) -> Any:
        assert inspect.iscoroutinefunction(scenario)
        before = self.server.request_count
        with transports_used() as used, llmvcr.recording(name) as cassette:
            live = await scenario()
        count = self._recorded(name, before, cassette, used)
        with sockets_refused() as attempts, llmvcr.recording(name, record_mode="none"):
            replayed = await scenario()
        return self._check(name, framework, (live, replayed), count, attempts, len(cassette.entries))
