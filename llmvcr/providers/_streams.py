"""Responses between the HTTP library and the cassette: captured while the caller reads, served back.

``capture`` tees a live response body into a ``Response`` record, handed to ``on_done`` when the
caller has read it (a stream the caller closes early is marked truncated; one cut by a
connection error keeps the error as its ``failure``, and drops the event it cut in half, which
the SDK never saw). A body the server compressed is decoded first, as the HTTP library does.
``serve`` builds the HTTP library's own response from a recorded one, pacing stream events by
``replay_speed`` and ending a stream that failed with the same exception class, and one recorded
cut short with ``TruncatedStreamError`` at the cut (the session sets that ``failure``). A stream
closed after its terminal event (openai's SDK closes at ``[DONE]``) is complete, not truncated.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator, Mapping
from typing import Any

from ..cassette import Response
from ..errors import TruncatedStreamError, UndecodableError
from ..wire import stream_finished
from ..wire.content_encoding import DecodeFailed, Decoder
from ..wire.sse import SSEParser, encode_events
from .http import body_bytes, parse_body


class Capture:
    """Collects a live response while the caller reads it, then hands the record to ``on_done``."""

    def __init__(
        self, on_done: Callable[[Response], object], status: int, headers: Mapping[str, str], sse: bool
    ) -> None:
        self.on_done, self.status, self.headers, self.sse = on_done, status, dict(headers), sse
        self.parser = SSEParser(time.perf_counter())
        self.raw: list[bytes] = []
        self.done = False
        self.decoder: Decoder | None = None
        self.decode_failure: str | None = None  # the body did not decode: the HTTP library fails too

    def wire_encoded(self) -> None:
        """The chunks fed are the body as sent, before the HTTP library undoes its ``content-encoding``."""
        decoder = Decoder(self.headers.get("content-encoding", ""))
        self.decoder = decoder if decoder.active else None

    def where(self) -> str:
        """The cassette and call this capture records, for messages (``on_done`` is a decision's)."""
        owner = getattr(self.on_done, "__self__", None)
        path = getattr(getattr(owner, "session", None), "path", "")
        request = getattr(owner, "request", None)
        call = f"{getattr(owner, 'provider', '')} {request.method} {request.path}" if request else "a call"
        return f"llmvcr: {path}: {call.strip()}" if path else f"llmvcr: {call.strip()}"

    def restart_clock(self, start: float) -> None:
        """Offsets count from when the request was sent, not from when the capture was built."""
        self.parser.start = start

    def feed(self, chunk: bytes) -> None:
        if self.decode_failure is not None:
            return
        if self.decoder is not None:
            try:
                chunk = self.decoder.decode(chunk)
            except DecodeFailed as err:
                self.decode_failure = f"DecodingError: {err}"
                return
            except UndecodableError as err:
                self.done = True  # nothing can be recorded for this call
                raise UndecodableError(f"{self.where()}: {err}") from None
        if self.sse:
            self.parser.feed(chunk)
        else:
            self.raw.append(chunk)

    def passing(self, chunks: Iterable[bytes]) -> Iterator[bytes]:
        """``chunks`` passed on to the caller and fed to the capture; the end, or the error that cut
        them, finishes the record."""
        try:
            for chunk in chunks:
                self.feed(chunk)
                yield chunk
        except Exception as err:
            self.failed(err)
            raise
        self.finish()

    async def passing_async(self, chunks: AsyncIterable[bytes]) -> AsyncIterator[bytes]:
        """:meth:`passing` for an async byte stream."""
        try:
            async for chunk in chunks:
                self.feed(chunk)
                yield chunk
        except Exception as err:
            self.failed(err)
            raise
        self.finish()

    def failed(self, error: Exception) -> None:
        """The connection broke mid-body: keep what arrived, and the error to raise again on replay."""
        self.finish(failure=f"{type(error).__name__}: {error}")

    def finish(self, *, truncated: bool = False, failure: str | None = None) -> None:
        if self.done:
            return
        self.done = True
        failure = failure or self.decode_failure
        if self.sse:
            if failure is None:
                self.parser.flush()
            if truncated and stream_finished(self.parser.events):
                truncated = False  # closed after its terminal event (openai's SDK stops at [DONE])
            response = Response(
                self.status, self.headers, stream=self.parser.events, truncated=truncated, failure=failure
            )
        else:
            body = parse_body(b"".join(self.raw), self.headers.get("content-type", ""))
            response = Response(self.status, self.headers, body=body, truncated=truncated, failure=failure)
        self.on_done(response)


def tee(module: Any, inner: Any, capture: Capture, is_async: bool) -> Any:
    """A byte stream of ``module`` (httpx2 or httpx) that passes ``inner``'s chunks on and to ``capture``."""
    capture.wire_encoded()  # the raw stream: httpx undoes content-encoding above it
    if not is_async:

        class Tee(module.SyncByteStream):  # type: ignore[misc]
            def __iter__(self) -> Iterator[bytes]:
                return capture.passing(inner)

            def close(self) -> None:
                capture.finish(truncated=True)
                inner.close()

        return Tee()

    class AsyncTee(module.AsyncByteStream):  # type: ignore[misc]
        def __aiter__(self) -> AsyncIterator[bytes]:
            return capture.passing_async(inner)

        async def aclose(self) -> None:
            capture.finish(truncated=True)
            await inner.aclose()

    return AsyncTee()


def cut_short(failure: str | None) -> TruncatedStreamError | None:
    """The error a served stream ends with when it was recorded cut short and is read past the cut
    (its ``failure`` says so: ``llmvcr.wire.answer_for``), else None: llmvcr's own, whatever the seam."""
    name, _, message = (failure or "").partition(": ")
    return TruncatedStreamError(message) if name == TruncatedStreamError.__name__ else None


class _Replaying:
    """A recorded stream's chunks, paced by ``replay_speed``, ending as the recording did."""

    def __init__(self, module: Any, response: Response, speed: float | None) -> None:
        self.module = module
        self.chunks = schedule(response, speed)
        self.failure = response.failure
        self.closed = False  # reading on after close() fails as it does on a closed socket

    def fail(self) -> BaseException:
        # "RemoteProtocolError: peer closed ..." -> the HTTP library's own exception class again
        failure = self.failure
        cut = cut_short(failure)
        if cut is not None:
            return cut
        name, _, message = (failure or "").partition(": ")
        cls = getattr(self.module, name, None)
        if isinstance(cls, type) and issubclass(cls, Exception) and message:
            return cls(message)
        return self.module.RemoteProtocolError(failure or "stream ended")  # type: ignore[no-any-return]

    def closed_error(self) -> BaseException:
        return self.module.ReadError("llmvcr: read from a closed stream")  # type: ignore[no-any-return]


_STREAM_CLASSES: dict[tuple[Any, bool], type] = {}  # built once per HTTP library, not per call


def _stream_class(module: Any, is_async: bool) -> type:
    key = (module, is_async)
    cls = _STREAM_CLASSES.get(key)
    if cls is not None:
        return cls
    if not is_async:

        class Replay(_Replaying, module.SyncByteStream):  # type: ignore[misc]
            def __iter__(self) -> Iterator[bytes]:
                for wait, chunk in self.chunks:
                    if self.closed:
                        raise self.closed_error()
                    if wait:
                        time.sleep(wait)
                    yield chunk
                if self.closed:
                    raise self.closed_error()
                if self.failure:
                    raise self.fail()

            def close(self) -> None:
                self.closed = True

        cls = _STREAM_CLASSES[key] = Replay
        return cls

    class AsyncReplay(_Replaying, module.AsyncByteStream):  # type: ignore[misc]
        async def __aiter__(self) -> AsyncIterator[bytes]:
            for wait, chunk in self.chunks:
                if self.closed:
                    raise self.closed_error()
                if wait:
                    await asyncio.sleep(wait)
                yield chunk
            if self.closed:
                raise self.closed_error()
            if self.failure:
                raise self.fail()

        async def aclose(self) -> None:
            self.closed = True

    cls = _STREAM_CLASSES[key] = AsyncReplay
    return cls


def _replay_stream(module: Any, response: Response, speed: float | None, is_async: bool) -> Any:
    return _stream_class(module, is_async)(module, response, speed)


# never served back: the body is stored decoded and whole, and a replay sets no cookies
NOT_SERVED = frozenset({"content-length", "content-encoding", "set-cookie"})


def served_headers(recorded: Response) -> list[tuple[str, str]]:
    """The headers a recorded response is served with: a stream says it is one, and a body stored
    without its content type says it is the JSON it is served as (``schedule``), as the server did.
    aiohttp's ``json()``, which google-genai reads an error with, refuses a body that does not."""
    headers = [(k, v) for k, v in recorded.headers.items() if k not in NOT_SERVED]
    if "content-type" not in recorded.headers:
        if recorded.stream is not None:
            headers.append(("content-type", "text/event-stream"))
        elif recorded.body is not None:
            headers.append(("content-type", "application/json"))
    return headers


def schedule(recorded: Response, speed: float | None) -> list[tuple[float, bytes]]:
    """``(seconds to wait first, bytes)``: a stream's events at ``replay_speed`` (at once without
    one), or the whole body."""
    if recorded.stream is None:
        return [(0.0, body_bytes(recorded.body, recorded.headers.get("content-type", "application/json")))]
    out, last = [], 0.0
    for t, chunk in encode_events(recorded.stream):
        wait = 0.0
        if speed and isinstance(t, (int, float)):
            wait, last = max(0.0, (t - last) / 1000 / speed), t
        out.append((wait, chunk))
    return out


def serve(module: Any, recorded: Response, request: Any, speed: float | None, is_async: bool) -> Any:
    """``module.Response`` (httpx2 or httpx) for ``request``, built from the recorded response."""
    headers = dict(served_headers(recorded))
    if recorded.stream is not None:
        stream = _replay_stream(module, recorded, speed, is_async)
        return module.Response(recorded.status, headers=headers, stream=stream, request=request)
    content = body_bytes(recorded.body, headers.get("content-type", "application/json"))
    return module.Response(recorded.status, headers=headers, content=content, request=request)
