"""The frameworks suite's harness: each framework against the loopback server, recorded, then replayed offline.

``roundtrip`` runs a scenario twice: inside a recording cassette against the server, then inside a
replay-only cassette with every socket refused. Both runs must give the same output, the replay
must reach nothing, and no file written may hold the sentinel key.
"""

from __future__ import annotations

import contextlib
import inspect
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_server import LLMServer

import llmvcr

SENTINEL = "sk-SENTINEL-framework-key-0123456789abcdef"


# (scenario, requests recorded, providers): printed at the end of the run
RESULTS: list[tuple[str, int, list[str]]] = []


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

    def _check(
        self, name: str, live: Any, replayed: Any, count: int, attempts: list[Any], entries: int
    ) -> Any:
        assert entries > 0, f"{name}: nothing was recorded"
        self.entries = entries
        assert entries == self.requests, (
            f"{name}: {self.requests} requests went out, {entries} entries recorded"
        )
        assert attempts == [], f"{name}: replay tried the network: {attempts}"
        assert self.server.request_count == count, f"{name}: replay reached the server"
        assert replayed == live
        _files_clean(self.directory)
        RESULTS.append((name, entries, self.providers))
        return replayed

    def __call__(self, name: str, scenario: Callable[[], Any]) -> Any:
        before = self.server.request_count
        with llmvcr.recording(name) as cassette:
            live = scenario()
        assert self.server.request_count > before, f"{name}: the record run never reached the server"
        count = self.server.request_count
        self.requests = count - before
        self.providers = sorted({e.provider for e in cassette.entries})
        with sockets_refused() as attempts, llmvcr.recording(name, record_mode="none"):
            replayed = scenario()
        return self._check(name, live, replayed, count, attempts, len(cassette.entries))

    async def run_async(self, name: str, scenario: Callable[[], Any]) -> Any:
        before = self.server.request_count
        with llmvcr.recording(name) as cassette:
            live = await scenario()
        assert self.server.request_count > before, f"{name}: the record run never reached the server"
        count = self.server.request_count
        self.requests = count - before
        self.providers = sorted({e.provider for e in cassette.entries})
        with sockets_refused() as attempts, llmvcr.recording(name, record_mode="none"):
            replayed = await scenario()
        assert inspect.iscoroutinefunction(scenario)
        return self._check(name, live, replayed, count, attempts, len(cassette.entries))
