"""The three ways of answering the workload: the floor, llmvcr and vcrpy.

All three drive the same SDK clients over the same ``httpx2.MockTransport``:

* the floor: the transport's handler answers from a dict keyed by the request body bytes, so
  the time is the SDK's own request building and response parsing plus one dict lookup;
* llmvcr: ``Client.send`` is intercepted and answered from an llmvcr cassette recorded through
  that transport (the transport is never reached on replay);
* vcrpy: vcrpy patches ``httpx2.MockTransport.handle_request`` itself (it intercepts httpx2
  transports since 8.x) and answers from a vcrpy cassette holding the same interactions.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .workload import Call, Clients, make_clients

_SECRET_HEADERS = ("authorization", "x-api-key")  # what a pytest-recording user filters


@dataclass(frozen=True)
class Captured:
    """A wire request as the SDK sent it, and the call that answers it."""

    method: str
    url: str
    body: bytes
    headers: dict[str, str]
    call: Call


class _Chunks:
    """A response stream that hands over the recorded chunks one by one, as a socket would."""

    def __init__(self, chunks: tuple[bytes, ...]) -> None:
        self.chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.chunks)

    def close(self) -> None:
        pass


class Floor:
    """An ``httpx2.MockTransport`` whose handler is one dict lookup on the request body."""

    def __init__(self) -> None:
        import httpx2

        self._httpx2 = httpx2
        self.table: dict[bytes, Call] = {}
        self.captured: list[Captured] = []
        self._learning: dict[tuple[str, str], Call] | None = None
        self.transport = httpx2.MockTransport(self.handle)
        self._stream_class = type("Chunks", (_Chunks, httpx2.SyncByteStream), {})

    def handle(self, request: Any) -> Any:
        if self._learning is not None:
            self._learn(request)
        call = self.table[request.content]
        if call.streamed:
            return self._httpx2.Response(200, headers=call.headers, stream=self._stream_class(call.chunks))
        return self._httpx2.Response(200, headers=call.headers, content=call.body)

    def learn(self, clients: Clients, calls: list[Call]) -> None:
        """Make each call once, pairing the exact bytes the SDK sends with the call's answer."""
        self._learning = {(c.sdk, _last_user_text(c.kwargs)): c for c in calls}
        try:
            clients.run(calls)
        finally:
            self._learning = None

    def _learn(self, request: Any) -> None:
        import orjson

        assert self._learning is not None
        body = orjson.loads(request.content)
        sdk = "anthropic" if request.url.path.endswith("/messages") else "openai"
        call = self._learning[(sdk, _last_user_text(body))]
        if request.content not in self.table:
            self.table[request.content] = call
            headers = {k: v for k, v in request.headers.items() if k.lower() not in _SECRET_HEADERS}
            self.captured.append(Captured(request.method, str(request.url), request.content, headers, call))

    def clients(self) -> Clients:
        return make_clients(self.transport)


def _last_user_text(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"])


def timed(clients: Clients, calls: list[Call]) -> list[float]:
    """The duration of each of ``calls``, made one after another (garbage collected first)."""
    gc.collect()
    return clients.run(calls)


# -- llmvcr ---------------------------------------------------------------------------------------
def record_llmvcr(floor: Floor, calls: list[Call], path: str) -> None:
    """Record ``calls`` into an llmvcr cassette at ``path``, answered by the floor's transport."""
    import llmvcr

    clients = floor.clients()
    with llmvcr.recording(path, record_mode="all"):
        clients.run(calls)
    clients.close()


def save_subset(whole: Any, path: str, n: int) -> None:
    """Write the first ``n`` entries of the cassette ``whole`` to ``path`` (format by extension)."""
    import llmvcr

    part = llmvcr.Cassette(path, recorded_with=whole.recorded_with)
    for entry in whole.entries[:n]:
        part.append(entry)
    llmvcr.save_cassette(path, part)


def replay_llmvcr(clients: Clients, path: str, calls: list[Call]) -> list[float]:
    """Each call's duration replaying ``calls`` from the cassette (loading it is not timed)."""
    import llmvcr

    with llmvcr.use_cassette(path, record_mode="none"):
        return timed(clients, calls)


# -- vcrpy -------------------------------------------------------------------------------------------
def write_vcrpy(captured: list[Captured], path: str) -> None:
    """The cassette vcrpy itself would write for these interactions, through its own serializer.

    Recording it through vcrpy would give the same file, but vcrpy scans the whole cassette for
    every request it records too, which makes recording 10,000 interactions take hours.
    """
    from vcr.request import Request as VcrRequest
    from vcr.serialize import serialize
    from vcr.serializers import yamlserializer

    requests = [VcrRequest(c.method, c.url, c.body, c.headers) for c in captured]
    responses = [
        {
            "status": {"code": 200, "message": "OK"},
            "headers": {k: [v] for k, v in c.call.headers.items()},
            "body": {"string": c.call.body or b"".join(c.call.chunks)},
        }
        for c in captured
    ]
    text = serialize({"requests": requests, "responses": responses}, yamlserializer)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def vcrpy_config() -> Any:
    """vcrpy set up as a pytest-recording suite in CI would be: replay only, body matched."""
    import vcr

    return vcr.VCR(
        record_mode="none", match_on=("method", "uri", "body"), filter_headers=list(_SECRET_HEADERS)
    )


def replay_vcrpy(clients: Clients, path: str, calls: list[Call], rounds: int) -> list[float]:
    """Each call's duration over ``rounds`` replays of ``calls`` (one load, rewound between)."""
    durations: list[float] = []
    with vcrpy_config().use_cassette(path) as cassette:
        for _ in range(rounds):
            cassette.rewind()
            durations += timed(clients, calls)
    return durations
