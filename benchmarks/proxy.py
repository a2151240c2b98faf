"""``python -m benchmarks proxy``: replay through ``llmvcr serve`` beside the transport floor and in-process replay.

Measured in one run, on this machine:

* replayed calls per second from 1, 8 and 64 concurrent keep-alive clients (a lean asyncio HTTP
  client in this process; the proxy in its own process, as users run it), on a cassette of 1 and
  of 10,000 entries (``flat to 10,000 entries``);
* the latency of one call at a time through the proxy, against the transport floor (the same
  client and the same uvicorn stack answering the same bytes with no cassette), so the difference
  is what llmvcr adds per call;
* the same call made by the anthropic SDK two ways: in-process replay (``use_cassette``) and
  through the proxy;
* time to first event of a replayed 500-event stream, through the proxy and from the floor;
* the proxy left running as a service: a cassette no client opened (``/cassettes/<name>``, its
  entries served in turn), p50 and p99 at 1, 8 and 64 clients against the floor, and the server's
  resident memory before and after 100,000 calls (``python -m benchmarks proxy [calls] [service]``).

Two cores are shared by the load generator and the server (and, here, by other people's work):
read the figures with that in mind.
"""

from __future__ import annotations

import asyncio
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

import orjson

from llmvcr.cassette.entries import Response
from llmvcr.options import Options
from llmvcr.session import Session
from llmvcr.wire.http_request import request_from_wire

from .workload import ANTHROPIC_KEY, anthropic_call, anthropic_stream

_LENGTH = re.compile(rb"content-length: *(\d+)", re.IGNORECASE)
MEANING = ("anthropic-version", "anthropic-beta")


class _Caller:
    name = "anthropic"

    def sdk_version(self) -> str | None:
        return None


def _body(i: int) -> bytes:
    return orjson.dumps(anthropic_call(i).kwargs)


def _stream_body() -> bytes:
    return orjson.dumps({**anthropic_stream().kwargs, "stream": True})


def make_cassette(path: str, n: int) -> None:
    """``n`` distinct anthropic calls and one 500-event stream, recorded by the session as a seam would."""
    session = Session(path, Options.build(), record_mode="all")
    session.start()
    headers = [("content-type", "application/json"), ("anthropic-version", "2023-06-01")]
    for i in range(n):
        call = anthropic_call(i)
        request = request_from_wire(
            "POST", "http://x/v1/messages", headers, _body(i), meaning_headers=MEANING
        )
        decision = session.decide(_Caller(), request)
        decision.record(Response(200, call.headers, body=orjson.loads(call.body)))
    stream = anthropic_stream()
    request = request_from_wire(
        "POST", "http://x/v1/messages", headers, _stream_body(), meaning_headers=MEANING
    )
    events = [_event(chunk) for chunk in stream.chunks]
    session.decide(_Caller(), request).record(Response(200, stream.headers, stream=events))
    session.finish(failed=False)


def _event(chunk: bytes) -> dict[str, Any]:
    fields = dict(line.split(": ", 1) for line in chunk.decode().strip().splitlines())
    return {"event": fields.get("event"), "data": orjson.loads(fields["data"]), "t": 0}


def request_bytes(prefix: str, body: bytes) -> bytes:
    head = (
        f"POST {prefix}/v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        f"anthropic-version: 2023-06-01\r\nx-api-key: {ANTHROPIC_KEY}\r\ncontent-length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def _client(port: int, payloads: list[bytes], count: int, offset: int, out: list[float]) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    for i in range(count):
        started = time.perf_counter()
        writer.write(payloads[(offset + i) % len(payloads)])
        head = await reader.readuntil(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(
                head.decode(errors="replace") + (await reader.read(2000)).decode(errors="replace")
            )
        match = _LENGTH.search(head)
        assert match is not None, head
        await reader.readexactly(int(match.group(1)))
        out.append(time.perf_counter() - started)
    writer.close()


def load(port: int, payloads: list[bytes], clients: int, total: int) -> tuple[float, list[float]]:
    """Calls per second and each call's latency, ``clients`` connections sharing ``total`` calls."""
    latencies: list[float] = []

    async def run() -> float:
        per = total // clients
        started = time.perf_counter()
        await asyncio.gather(*(_client(port, payloads, per, c * per, latencies) for c in range(clients)))
        return per * clients / (time.perf_counter() - started)

    return asyncio.run(run()), latencies


def _p99(values: list[float]) -> float:
    return sorted(values)[int(len(values) * 0.99)]


def first_events(port: int, payload: bytes, rounds: int = 50) -> list[float]:
    """Seconds from sending a stream request to its first event, each stream then read to its end."""

    async def run() -> list[float]:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        out = []
        for _ in range(rounds):
            started = time.perf_counter()
            writer.write(payload)
            await reader.readuntil(b"\r\n\r\n")
            await reader.readuntil(b"event:")
            out.append(time.perf_counter() - started)
            await reader.readuntil(b"\r\n0\r\n\r\n")  # the chunked body's end
        writer.close()
        return out

    return asyncio.run(run())


def start(argv: list[str]) -> tuple[subprocess.Popen[str], int]:
    process = subprocess.Popen([sys.executable, *argv], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    for line in process.stdout:
        found = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        if found:
            return process, int(found.group(1))
    raise RuntimeError(f"{argv} did not start")


def floor_app_bytes() -> tuple[bytes, list[tuple[bytes, bytes]]]:
    call = anthropic_call(0)
    headers = [(k.encode(), v.encode()) for k, v in call.headers.items()]
    return call.body, [*headers, (b"content-length", str(len(call.body)).encode())]


def serve_floor() -> None:
    """The transport floor: uvicorn answering every POST with one recorded answer, no cassette."""
    import uvicorn

    body, headers = floor_app_bytes()
    stream = anthropic_stream()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        more = True
        chunks = []
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        if b'"stream":true' in b"".join(chunks):
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")],
                }
            )
            for chunk in stream.chunks:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
            return
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=0,
        log_level="warning",
        access_log=False,
        server_header=False,
        date_header=False,
    )
    server = uvicorn.Server(config)
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    print(f"floor on http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    server.run(sockets=[sock])


def sdk_latency(base_url: str | None, rounds: int, cassette: str | None = None) -> float:
    """Median seconds of one anthropic SDK call (in-process replay of ``cassette`` when given)."""
    import anthropic

    import llmvcr

    client = anthropic.Anthropic(
        api_key=ANTHROPIC_KEY, base_url=base_url or "http://127.0.0.1:9", max_retries=0
    )
    kwargs = anthropic_call(0).kwargs
    times = []

    def once() -> None:
        started = time.perf_counter()
        client.messages.create(**kwargs)
        times.append(time.perf_counter() - started)

    if cassette is not None:
        with llmvcr.use_cassette(
            cassette, record_mode="none", allow_playback_repeats=True, on_unplayed="ignore"
        ):
            for _ in range(rounds):
                once()
    else:
        for _ in range(rounds):
            once()
    return statistics.median(times[rounds // 10 :])


def rss_kib(pid: int) -> int:
    """The resident memory of process ``pid`` (Linux ``/proc``), in KiB."""
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def service(folder: str, port: int, pid: int, floor_port: int, total: int, calls: int = 100_000) -> None:
    """The proxy as a service: a cassette no client opened, 1/8/64 clients beside the floor, and
    its memory over ``calls`` calls."""
    us = 1e6
    make_cassette(os.path.join(folder, "service.yaml"), 1)
    payloads = [request_bytes("/cassettes/service", _body(0))]
    floor_payloads = [request_bytes("", _body(0))]
    load(port, payloads, 8, min(total, 800))  # warm: the first call opens the file
    print(f"\nas a service: a cassette no client opened, one entry served in turn ({total} calls per row)")
    print(
        f"{'clients':>7} {'calls/s':>9} {'p50':>9} {'p99':>9} {'floor p50':>10} {'floor p99':>10} {'added p50':>10}"
    )
    for clients in (1, 8, 64):
        rate, lat = load(port, payloads, clients, total)
        _, floor_lat = load(floor_port, floor_payloads, clients, total)
        p50, p99 = statistics.median(lat), _p99(lat)
        f50, f99 = statistics.median(floor_lat), _p99(floor_lat)
        print(
            f"{clients:7d} {rate:9.0f} {p50 * us:6.0f} us {p99 * us:6.0f} us {f50 * us:7.0f} us "
            f"{f99 * us:7.0f} us {(p50 - f50) * us:7.0f} us"
        )
    before = rss_kib(pid)
    rate, _ = load(port, payloads, 8, calls)
    after_first = rss_kib(pid)
    load(port, payloads, 8, calls)
    after = rss_kib(pid)
    print(
        f"resident memory of the proxy: {before / 1024:.1f} MiB warm, {after_first / 1024:.1f} MiB after "
        f"{calls:,} calls, {after / 1024:.1f} MiB after {2 * calls:,} ({rate:.0f} calls/s)"
    )


def main(argv: list[str]) -> int:
    total = int(argv[0]) if argv else 4000
    only_service = "service" in argv[1:]
    us = 1e6
    with tempfile.TemporaryDirectory() as folder:
        sizes = {"1 entry": 1, "10,000 entries": 10_000}
        for n in sizes.values() if not only_service else ():
            make_cassette(os.path.join(folder, f"bench-{n}.yaml"), n)
        floor, floor_port = start(["-m", "benchmarks.proxy", "floor"])
        proxy, port = start(["-m", "llmvcr", "serve", "--cassette-dir", folder, "--record-mode", "none"])
        try:
            if only_service:
                service(folder, port, proxy.pid, floor_port, total)
                return 0
            floor_payloads = [request_bytes("", _body(0))]
            rows = []
            load(floor_port, floor_payloads, 8, min(total, 800))
            for clients in (1, 8, 64):
                rate, lat = load(floor_port, floor_payloads, clients, total)
                rows.append(
                    ("floor (uvicorn, no cassette)", clients, rate, statistics.median(lat), _p99(lat))
                )
            import urllib.request

            for name, n in sizes.items():
                opened = urllib.request.Request(
                    f"http://127.0.0.1:{port}/_llmvcr/cassettes/bench-{n}",
                    data=b'{"allow_playback_repeats": true}',
                    headers={"content-type": "application/json"},
                    method="POST",
                )
                urllib.request.urlopen(opened).read()
                payloads = [request_bytes(f"/cassettes/bench-{n}", _body(i)) for i in range(n)]
                load(port, payloads, 8, min(total, 800))  # warm: the first calls read the file, fill caches
                for clients in (1, 8, 64):
                    rate, lat = load(port, payloads, clients, total)
                    rows.append((f"llmvcr serve, {name}", clients, rate, statistics.median(lat), _p99(lat)))
            print(f"replayed calls through the proxy ({total} calls per row; 2 shared cores)")
            print(f"{'':38} {'clients':>7} {'calls/s':>9} {'median':>9} {'p99':>9}")
            for label, clients, rate, lat, p99 in rows:
                print(f"{label:38} {clients:7d} {rate:9.0f} {lat * us:6.0f} us {p99 * us:6.0f} us")
            floor_one = next(r[3] for r in rows if r[0].startswith("floor") and r[1] == 1)
            proxy_one = next(r[3] for r in rows if r[0].endswith("1 entry") and r[1] == 1)
            big_one = next(r[3] for r in rows if r[0].endswith("10,000 entries") and r[1] == 1)
            print(
                f"added latency per call (1 client): {(proxy_one - floor_one) * us:.0f} us "
                f"(1 entry), {(big_one - floor_one) * us:.0f} us (10,000 entries)"
            )
            stream_payload = request_bytes("/cassettes/bench-1", _stream_body())
            floor_stream = request_bytes("", _stream_body())
            ttfe = first_events(port, stream_payload)[5:]
            ttfe_floor = first_events(floor_port, floor_stream)[5:]
            print(
                f"time to first event, 500-event stream: proxy {statistics.median(ttfe) * us:.0f} us, "
                f"floor {statistics.median(ttfe_floor) * us:.0f} us"
            )
            in_process = sdk_latency(None, 300, os.path.join(folder, "bench-1.yaml"))
            through = sdk_latency(f"http://127.0.0.1:{port}/cassettes/bench-1", 300)
            print(
                f"anthropic SDK, one call: in-process replay {in_process * us:.0f} us, through the proxy "
                f"{through * us:.0f} us"
            )
            service(folder, port, proxy.pid, floor_port, total)
        finally:
            for process in (proxy, floor):
                process.terminate()
                process.wait(timeout=30)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["floor"]:
        serve_floor()
    else:
        raise SystemExit(main(sys.argv[1:]))
