"""The stdio seam: the server process every stdio route of the ``mcp`` SDK starts.

``stdio_client`` (however a framework imported it: ``from mcp import stdio_client``, FastMCP's
``StdioTransport``, pydantic-ai's ``MCPServerStdio``) starts its server through one function of
its module, looked up as it runs (``mcp.stdio.spawn`` in ``providers._internals``). While a cassette
is open that function hands back a stand-in process instead:

- replaying, a :class:`ReplayedProcess`: nothing is started; each line the client writes to its
  stdin is answered on its stdout from the cassette;
- recording, a :class:`RecordedProcess` around the real one: every line both ways is seen on its way.

Both speak newline-delimited JSON-RPC, so ``llmvcr mcp`` (any client, any language) uses the same
line handling, :class:`Lines`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import anyio
import orjson
from anyio.abc import ByteReceiveStream, ByteSendStream, Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .exchange import Exchange

JSON = dict[str, Any]


class Lines:
    """Bytes in, whole JSON messages out (a line may arrive in pieces)."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, data: bytes) -> list[Any]:
        return [message for _, message in self.feed_lines(data)]

    def feed_lines(self, data: bytes) -> list[tuple[bytes, Any]]:
        """Each whole line (with its newline) and its message."""
        lines = (self._buffer + data).split(b"\n")
        self._buffer = lines.pop()
        out: list[tuple[bytes, Any]] = []
        for line in lines:
            if line.strip():
                try:
                    out.append((line + b"\n", orjson.loads(line)))
                except orjson.JSONDecodeError:
                    out.append((line + b"\n", line.decode("utf-8", "replace")))
        return out


def encode(message: JSON) -> bytes:
    return orjson.dumps(message) + b"\n"


class _ReplayStdin(ByteSendStream):
    def __init__(
        self, exchange: Exchange, out: MemoryObjectSendStream[bytes], closed: Callable[[], None]
    ) -> None:
        self.exchange, self.out, self.lines, self.closed = exchange, out, Lines(), closed

    async def send(self, item: bytes) -> None:
        for message in self.lines.feed(item):
            for answer in self.exchange.from_client(message):
                await self.out.send(encode(answer))

    async def aclose(self) -> None:
        self.closed()
        await self.out.aclose()


class _ReplayStdout(ByteReceiveStream):
    def __init__(self, source: MemoryObjectReceiveStream[bytes]) -> None:
        self.source = source

    async def receive(self, max_bytes: int = 65536) -> bytes:
        try:
            return await self.source.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise anyio.EndOfStream from None

    async def aclose(self) -> None:
        await self.source.aclose()


class ReplayedProcess(Process):
    """A server process that was never started: the cassette answers what the client writes."""

    def __init__(self, exchange: Exchange) -> None:
        send, receive = anyio.create_memory_object_stream[bytes](math.inf)
        self._returncode: int | None = None
        self._stdin = _ReplayStdin(exchange, send, self._exit)
        self._stdout = _ReplayStdout(receive)

    def _exit(self) -> None:
        if self._returncode is None:
            self._returncode = 0

    async def aclose(self) -> None:
        await self._stdin.aclose()

    async def wait(self) -> int:
        while self._returncode is None:
            await anyio.sleep(0.01)
        return self._returncode

    def terminate(self) -> None:
        self._exit()

    def kill(self) -> None:
        self._exit()

    def send_signal(self, signal: Any) -> None:
        self._exit()

    @property
    def pid(self) -> int:
        return 0

    @property
    def returncode(self) -> int | None:
        return self._returncode

    @property
    def stdin(self) -> ByteSendStream:
        return self._stdin

    @property
    def stdout(self) -> ByteReceiveStream:
        return self._stdout

    @property
    def stderr(self) -> ByteReceiveStream | None:
        return None


class _RecordStdin(ByteSendStream):
    """Each whole line goes on to the server, unless the exchange answers it instead (a denied
    ``tools/call``): then its answers go to the client's stdout, and the server never sees it."""

    def __init__(
        self, real: ByteSendStream, exchange: Exchange, answers: MemoryObjectSendStream[bytes]
    ) -> None:
        self.real, self.exchange, self.lines, self.answers = real, exchange, Lines(), answers

    async def send(self, item: bytes) -> None:
        forward = b""
        for line, message in self.lines.feed_lines(item):
            answers = self.exchange.from_client(message)
            for answer in answers:
                await self.answers.send(encode(answer))
            if not answers:
                forward += line
        if forward:
            await self.real.send(forward)

    async def aclose(self) -> None:
        await self.real.aclose()


class _RecordStdout(ByteReceiveStream):
    """The server's stdout, seen; the answers llmvcr gives in the server's place come in between."""

    def __init__(
        self, real: ByteReceiveStream, exchange: Exchange, answers: MemoryObjectReceiveStream[bytes]
    ) -> None:
        self.real, self.exchange, self.lines, self.answers = real, exchange, Lines(), answers
        self.ready: list[bytes] = []  # the server's lines that came as an answer won the race

    async def receive(self, max_bytes: int = 65536) -> bytes:
        try:
            return self.answers.receive_nowait()
        except anyio.WouldBlock:
            pass
        if self.ready:
            return self.ready.pop(0)
        got: list[bytes] = []
        failed: list[BaseException] = []
        answer: list[bytes] = []

        async with anyio.create_task_group() as group:

            async def from_server() -> None:
                try:
                    got.append(await self._server(max_bytes))
                except Exception as err:  # EndOfStream, a broken pipe: raised below, as themselves
                    failed.append(err)
                group.cancel_scope.cancel()

            async def from_llmvcr() -> None:
                try:
                    answer.append(await self.answers.receive())
                except (anyio.EndOfStream, anyio.ClosedResourceError):
                    await anyio.sleep_forever()
                group.cancel_scope.cancel()

            group.start_soon(from_server)
            group.start_soon(from_llmvcr)
        if answer:
            self.ready.extend(got)
            return answer[0]
        if failed:
            raise failed[0]
        return got[0]

    async def _server(self, max_bytes: int) -> bytes:
        try:
            data = await self.real.receive(max_bytes)
        except anyio.EndOfStream:
            self.exchange.close()
            raise
        for message in self.lines.feed(data):
            self.exchange.from_server(message)
        return data

    async def aclose(self) -> None:
        self.exchange.close()
        await self.real.aclose()


class RecordedProcess(Process):
    """The real server process, with every line both ways seen by the exchange."""

    def __init__(self, real: Any, exchange: Exchange) -> None:
        self.real = real
        send, receive = anyio.create_memory_object_stream[bytes](math.inf)
        self._stdin = _RecordStdin(real.stdin, exchange, send)
        self._stdout = _RecordStdout(real.stdout, exchange, receive)

    def __getattr__(self, name: str) -> Any:  # the SDK's shutdown reads its own names of the process
        return getattr(self.real, name)

    async def aclose(self) -> None:
        await self.real.aclose()

    async def wait(self) -> int:
        return await self.real.wait()  # type: ignore[no-any-return]

    def terminate(self) -> None:
        self.real.terminate()

    def kill(self) -> None:
        self.real.kill()

    def send_signal(self, signal: Any) -> None:
        self.real.send_signal(signal)

    @property
    def pid(self) -> int:
        return self.real.pid  # type: ignore[no-any-return]

    @property
    def returncode(self) -> int | None:
        return self.real.returncode  # type: ignore[no-any-return]

    @property
    def stdin(self) -> ByteSendStream:
        return self._stdin

    @property
    def stdout(self) -> ByteReceiveStream:
        return self._stdout

    @property
    def stderr(self) -> ByteReceiveStream | None:
        return self.real.stderr  # type: ignore[no-any-return]
