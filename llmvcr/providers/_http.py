"""Interception for SDKs built on httpx2 (or httpx): the shared seam of Stainless-generated clients.

Why this seam: every call of these SDKs, whatever resource or helper made it (``create``,
``stream()``, ``parse()``, ``with_raw_response``, beta, Azure), ends in ``Client.send`` of the
HTTP library with the final wire request. Serving a recorded ``Response`` there lets the SDK run
its own parsing, typed objects, exceptions and stream helpers unchanged. ``send`` sits inside
the SDK's retry loop, which would retry and wrap our errors as connection errors, so an llmvcr
error leaves ``send`` as a ``BaseException`` carrier (past the SDK's ``except Exception``) and
the SDK's own ``request`` method, wrapped as the provider's funnel, turns it back into the error.
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import importlib.metadata
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import wrapt

from .. import faults
from ..cassette import Entry, Request, Response
from ..errors import LLMVCRError
from ..redact import _QUICK, CREDENTIAL_HEADERS, REQUEST_HEADERS, RESPONSE_HEADERS, Redactor
from ..session import Decision, bound_session, current_session

# The SDK client whose funnel the current call is in (None outside every funnel): errors raised
# below it travel as _Halt, and a client bound by an adapter finds its own session by it.
_in_funnel: contextvars.ContextVar[Any] = contextvars.ContextVar("llmvcr_in_funnel", default=None)


class _Halt(BaseException):
    """Carries an llmvcr error through the SDK's retry loop to its funnel, unwrapped."""

    def __init__(self, error: LLMVCRError) -> None:
        super().__init__(str(error))
        self.error = error


class _Patch:
    """One reversible wrapt patch of ``owner.attr``; ``undo`` puts the original object back."""

    def __init__(self, owner: Any, attr: str, wrapper: Callable[..., Any]) -> None:
        self.owner, self.attr, self.wrapper = owner, attr, wrapper
        self.original = owner.__dict__[attr]

    def apply(self) -> None:
        wrapt.wrap_function_wrapper(self.owner, self.attr, self.wrapper)

    def undo(self) -> None:
        setattr(self.owner, self.attr, self.original)


def _import_attr(spec: str) -> tuple[Any, str]:
    module_name, _, dotted = spec.partition(":")
    owner: Any = importlib.import_module(module_name)
    *parents, attr = dotted.split(".")
    for name in parents:
        owner = getattr(owner, name)
    return owner, attr


# -- the funnel: where a carried error becomes itself again --------------------------------
def _funnel_sync(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    token = _in_funnel.set(instance)
    try:
        return wrapped(*args, **kwargs)
    except _Halt as halt:
        raise halt.error from None
    finally:
        _in_funnel.reset(token)


def _funnel_async(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    async def run() -> Any:
        token = _in_funnel.set(instance)
        try:
            return await wrapped(*args, **kwargs)
        except _Halt as halt:
            raise halt.error from None
        finally:
            _in_funnel.reset(token)

    return run()


@dataclass
class HttpProvider:
    """An SDK whose calls reach the network through ``httpx2``/``httpx`` ``Client.send``.

    ``owns`` says whether a wire request is this SDK's; ``funnels`` name the SDK methods
    (``"module:Class.method"``, ``async`` ones flagged) that every call passes above its retry loop.
    """

    name: str
    package: str
    meaning_headers: tuple[str, ...] = ()
    sync_funnels: tuple[str, ...] = ()
    async_funnels: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()
    _patches: list[_Patch] = field(default_factory=list, repr=False)
    _version: str | None = field(default=None, repr=False)

    def sdk_version(self) -> str | None:
        if self._version is None:
            try:
                self._version = importlib.metadata.version(self.package)
            except importlib.metadata.PackageNotFoundError:
                return None
        return self._version

    def owns(self, request: Any) -> bool:
        return request.url.host in self.hosts

    def install(self) -> None:
        """Wrap the funnels of an SDK that is already imported (never import one ourselves)."""
        if self._patches or self.package not in sys.modules:
            return
        for specs, wrapper in ((self.sync_funnels, _funnel_sync), (self.async_funnels, _funnel_async)):
            for spec in specs:
                owner, attr = _import_attr(spec)
                patch = _Patch(owner, attr, wrapper)
                patch.apply()
                self._patches.append(patch)

    def uninstall(self) -> None:
        while self._patches:
            self._patches.pop().undo()

    # -- request and response records -----------------------------------------------------
    def request_record(self, request: Any, redactor: Redactor) -> Request:
        allow = REQUEST_HEADERS.union(self.meaning_headers)
        items, content_type = _scan_headers(request, allow)
        headers = redactor.headers(items, allow)
        headers.pop("content-type", None)
        url = request.url
        query = redactor.query(url.params.multi_items()) if url.query else ()
        body = _parse_body(request.read(), content_type)
        if isinstance(body, dict) and body.get("stream") is False:
            # .parse() sends "stream": false where create() omits it: the same request.
            body = {k: v for k, v in body.items() if k != "stream"}
        return Request(
            method=request.method,
            path=url.path,
            body=_redact_body(redactor, body),
            query=query,
            headers=headers,
        )


# -- reading wire requests cheaply ---------------------------------------------------------
# httpx's Headers.multi_items() decodes every header; the record needs the few the redactor keeps
# or learns from, so the raw byte pairs are filtered first and only those are decoded.
def _decode(value: bytes, headers: Any) -> str:
    # An ASCII value decodes the same under every encoding httpx may pick for the headers.
    return value.decode("ascii") if value.isascii() else value.decode(headers.encoding)


_KEPT: dict[frozenset[str], frozenset[bytes]] = {}


def _scan_headers(request: Any, allow: frozenset[str]) -> tuple[list[tuple[str, str]], str]:
    """The header pairs ``Redactor.headers`` keeps or learns from (it drops the others anyway), and
    the content type as ``request.headers.get`` gives it."""
    kept = _KEPT.get(allow)
    if kept is None:
        kept = _KEPT[allow] = frozenset(name.encode("ascii") for name in allow | CREDENTIAL_HEADERS)
    headers = request.headers
    raw = headers.raw
    if b"".join([k for k, _ in raw]).isascii():
        pairs = [(k, v) for k, v in raw if k.lower() in kept]
    else:  # a non-ASCII name only str.lower() can judge: the redactor sees those
        pairs = [(k, v) for k, v in raw if k.lower() in kept or not k.isascii()]
    items = [(_decode(k, headers), _decode(v, headers)) for k, v in pairs]
    content_types = [_decode(v, headers) for k, v in raw if k.lower() == b"content-type"]
    return items, ", ".join(content_types)


_QUICK_BYTES = re.compile(_QUICK.pattern.encode("ascii"))
_JSON_ESCAPED = re.compile(r'["\\\x00-\x1f\x7f]')


def _redact_body(redactor: Redactor, body: Any) -> Any:
    """``redactor.tree(body)``, skipping the walk when the body's JSON text holds nothing it would change.

    Each string of the body appears verbatim in its JSON text, and neither the secret-shape
    prefixes nor a known credential free of JSON escapes can hide behind an escape, so one scan
    of the text answers for every string. User patterns may match escaped characters: they walk.
    """
    if body is None or redactor.patterns or redactor.paths:
        return redactor.body(body)
    try:
        data = orjson.dumps(body)
    except TypeError:
        return redactor.tree(body)
    if _QUICK_BYTES.search(data):
        return redactor.tree(body)
    for secret in redactor.secrets:
        if _JSON_ESCAPED.search(secret) or secret.encode("utf-8") in data:
            return redactor.tree(body)
    return body


class StainlessProvider(HttpProvider):
    """The shared adapter for Stainless-generated SDKs (anthropic, openai, groq, cerebras, ...).

    Their clients name themselves in ``User-Agent`` (``Anthropic/Python 2.16.0``); their base
    client's ``request`` is the funnel.
    """

    def __init__(
        self,
        name: str,
        *,
        package: str,
        client_names: tuple[str, ...],
        meaning_headers: tuple[str, ...] = (),
        hosts: tuple[str, ...] = (),
    ) -> None:
        super().__init__(
            name,
            package,
            meaning_headers,
            sync_funnels=(f"{package}._base_client:SyncAPIClient.request",),
            async_funnels=(f"{package}._base_client:AsyncAPIClient.request",),
            hosts=hosts,
        )
        self.client_names = client_names

    def replay_client(self, *, asynchronous: bool = False) -> Any:
        """A client of this SDK to serve a cassette: a placeholder key (no call leaves), no retries."""
        module = importlib.import_module(self.package)
        name = ("Async" if asynchronous else "") + self.client_names[0]
        return getattr(module, name)(api_key="llmvcr-replay", max_retries=0)

    def owns(self, request: Any) -> bool:
        agent = request.headers.get("user-agent", "")
        head = agent.split("/", 1)[0]
        return any(name in head for name in self.client_names) or super().owns(request)


def _parse_body(data: bytes, content_type: str) -> Any:
    if not data:
        return None
    if "json" in content_type or data[:1] in (b"{", b"["):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        import base64

        return {"base64": base64.b64encode(data).decode("ascii")}


def _body_bytes(body: Any, content_type: str) -> bytes:
    if body is None:
        return b""
    if isinstance(body, str) and "json" not in content_type:
        return body.encode("utf-8")
    if isinstance(body, dict) and set(body) == {"base64"} and "json" not in content_type:
        import base64

        return base64.b64decode(body["base64"])
    return orjson.dumps(body)


# -- server-sent events -------------------------------------------------------------------
class SSEParser:
    """Splits a byte stream into events as it arrives, keeping names and arrival offsets.

    With ``start=None`` (a body read after the fact, as from a vcrpy cassette) no offsets are kept.
    """

    def __init__(self, start: float | None) -> None:
        self.start = start
        self.buffer = b""
        self.events: list[dict[str, Any]] = []

    def feed(self, chunk: bytes) -> None:
        self.buffer += chunk.replace(b"\r\n", b"\n")
        while b"\n\n" in self.buffer:
            block, self.buffer = self.buffer.split(b"\n\n", 1)
            self._block(block)

    def flush(self) -> None:
        if self.buffer.strip():
            self._block(self.buffer)
        self.buffer = b""

    def _block(self, block: bytes) -> None:
        name: str | None = None
        data: list[str] = []
        for line in block.decode("utf-8", "replace").split("\n"):
            if not line or line.startswith(":"):
                continue
            key, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if key == "event":
                name = value
            elif key == "data":
                data.append(value)
        if name is None and not data:
            return
        text = "\n".join(data)
        parsed: Any = text
        if text[:1] in ("{", "["):
            try:
                parsed = orjson.loads(text)
            except orjson.JSONDecodeError:
                parsed = text
        event: dict[str, Any] = {}
        if name is not None:
            event["event"] = name
        event["data"] = parsed
        if self.start is not None:
            event["t"] = round((time.perf_counter() - self.start) * 1000, 1)
        self.events.append(event)


def encode_event(event: dict[str, Any]) -> bytes:
    """One server-sent event on the wire: ``event:`` when named, one ``data:`` line per line of data."""
    data = event.get("data")
    name = event.get("event")
    head = b"" if name is None else b"event: " + str(name).encode() + b"\n"
    if not isinstance(data, str):
        # Compact JSON holds no raw newline (orjson escapes them in strings): a single data line.
        return head + b"data: " + orjson.dumps(data) + b"\n\n"
    lines = "".join(f"data: {line}\n" for line in data.split("\n"))
    return head + lines.encode() + b"\n"


def _encode_events(events: list[dict[str, Any]]) -> list[tuple[Any, bytes]]:
    """``(t, encode_event(event))`` for each event, sharing the ``event:`` line of events of one name."""
    heads: dict[str | None, bytes] = {}
    dumps = orjson.dumps
    out = []
    for event in events:
        name = event.get("event")
        data = event.get("data")
        if isinstance(data, str) or not (name is None or type(name) is str):
            out.append((event.get("t"), encode_event(event)))
            continue
        head = heads.get(name)
        if head is None:
            head = heads[name] = (b"" if name is None else b"event: " + name.encode() + b"\n") + b"data: "
        out.append((event.get("t"), head + dumps(data) + b"\n\n"))
    return out


def _is_sse(content_type: str) -> bool:
    return "text/event-stream" in content_type


# -- recording ------------------------------------------------------------------------------
class _Capture:
    """Collects a live response while the caller reads it, then hands the record to the session."""

    def __init__(
        self,
        finish: Callable[[Response], None],
        status: int,
        headers: dict[str, str],
        sse: bool,
        start: float,
    ) -> None:
        self.finish_cb, self.status, self.headers, self.sse = finish, status, headers, sse
        self.parser = SSEParser(start)
        self.raw: list[bytes] = []
        self.done = False

    def feed(self, chunk: bytes) -> None:
        if self.sse:
            self.parser.feed(chunk)
        else:
            self.raw.append(chunk)

    def finish(self, *, truncated: bool = False, failure: str | None = None) -> None:
        if self.done:
            return
        self.done = True
        if self.sse:
            self.parser.flush()
            response = Response(
                self.status, self.headers, stream=self.parser.events, truncated=truncated, failure=failure
            )
        else:
            body = _parse_body(b"".join(self.raw), self.headers.get("content-type", ""))
            response = Response(self.status, self.headers, body=body, truncated=truncated, failure=failure)
        self.finish_cb(response)


def _stream_classes(module: Any) -> tuple[type, type]:
    return module.SyncByteStream, module.AsyncByteStream


def _make_tee(module: Any, inner: Any, capture: _Capture, is_async: bool) -> Any:
    sync_base, async_base = _stream_classes(module)
    if not is_async:

        class Tee(sync_base):  # type: ignore[misc, valid-type]
            def __iter__(self) -> Iterator[bytes]:
                try:
                    for chunk in inner:
                        capture.feed(chunk)
                        yield chunk
                except Exception as err:
                    capture.finish(failure=f"{type(err).__name__}: {err}")
                    raise
                capture.finish()

            def close(self) -> None:
                capture.finish(truncated=True)
                inner.close()

        return Tee()

    class AsyncTee(async_base):  # type: ignore[misc, valid-type]
        async def __aiter__(self) -> Any:
            try:
                async for chunk in inner:
                    capture.feed(chunk)
                    yield chunk
            except Exception as err:
                capture.finish(failure=f"{type(err).__name__}: {err}")
                raise
            capture.finish()

        async def aclose(self) -> None:
            capture.finish(truncated=True)
            await inner.aclose()

    return AsyncTee()


# -- replaying -------------------------------------------------------------------------------
def _replay_stream(module: Any, response: Response, speed: float | None, is_async: bool) -> Any:
    sync_base, async_base = _stream_classes(module)
    chunks = _encode_events(response.stream or [])
    failure = response.failure

    def delays() -> Iterator[tuple[float, bytes]]:
        last = 0.0
        for t, chunk in chunks:
            wait = 0.0
            if speed and isinstance(t, (int, float)):
                wait = max(0.0, (t - last) / 1000 / speed)
                last = t
            yield wait, chunk

    def fail() -> BaseException:
        # "RemoteProtocolError: peer closed ..." -> the HTTP library's own exception class again
        name, _, message = (failure or "").partition(": ")
        cls = getattr(module, name, None)
        if isinstance(cls, type) and issubclass(cls, Exception) and message:
            return cls(message)
        return module.RemoteProtocolError(failure or "stream ended")

    if not is_async:

        class Replay(sync_base):  # type: ignore[misc, valid-type]
            closed = False  # reading on after close() fails as it does on a closed socket

            def __iter__(self) -> Iterator[bytes]:
                for wait, chunk in delays():
                    if self.closed:
                        raise module.ReadError("llmvcr: read from a closed stream")
                    if wait:
                        time.sleep(wait)
                    yield chunk
                if self.closed:
                    raise module.ReadError("llmvcr: read from a closed stream")
                if failure:
                    raise fail()

            def close(self) -> None:
                self.closed = True

        return Replay()

    class AsyncReplay(async_base):  # type: ignore[misc, valid-type]
        closed = False

        async def __aiter__(self) -> Any:
            for wait, chunk in delays():
                if self.closed:
                    raise module.ReadError("llmvcr: read from a closed stream")
                if wait:
                    await asyncio.sleep(wait)
                yield chunk
            if self.closed:
                raise module.ReadError("llmvcr: read from a closed stream")
            if failure:
                raise fail()

        async def aclose(self) -> None:
            self.closed = True

    return AsyncReplay()


def _served_headers(response: Response) -> dict[str, str]:
    return {
        k: v
        for k, v in response.headers.items()
        if k not in ("content-length", "content-encoding", "set-cookie")
    }


def build_response(module: Any, recorded: Response, request: Any, speed: float | None, is_async: bool) -> Any:
    headers = _served_headers(recorded)
    if recorded.stream is not None:
        headers.setdefault("content-type", "text/event-stream")
        stream = _replay_stream(module, recorded, speed, is_async)
        return module.Response(recorded.status, headers=headers, stream=stream, request=request)
    content = _body_bytes(recorded.body, headers.get("content-type", "application/json"))
    return module.Response(recorded.status, headers=headers, content=content, request=request)


# -- the send wrappers ------------------------------------------------------------------------
_ProviderSource = Callable[[], list[HttpProvider]]
# Set by the pytest plugin's --llmvcr-block-network: asked about requests made outside any cassette.
network_guard: Callable[[Any, HttpProvider | None], LLMVCRError | None] | None = None
_providers_source: _ProviderSource = list
_send_patches: list[_Patch] = []
_patched_modules: set[str] = set()
_hooked_modules: set[str] = set()
_http_active = False
_lock = threading.RLock()  # a post-import hook may fire while an install imports


def _owner(request: Any) -> HttpProvider | None:
    for provider in _providers_source():
        if provider.owns(request):
            if not provider._patches:
                provider.install()  # the SDK was imported after the cassette opened
            return provider
    return None


def _prepare(module: Any, args: Any, kwargs: Any) -> tuple[Any, Any, HttpProvider, Request, Any] | None:
    client = _in_funnel.get()
    session = (bound_session(client) if client is not None else None) or current_session()
    request = args[0] if args else kwargs["request"]
    if session is None:
        if network_guard is not None:
            error = network_guard(request, _owner(request))
            if error is not None:
                if _in_funnel.get() is not None:
                    raise _Halt(error) from None
                raise error
        return None
    provider = _owner(request)
    if provider is None:
        return None
    record = provider.request_record(request, session.redactor)
    fault = faults.take(provider.name)
    if fault is not None:
        if fault.kind == "timeout":
            raise module.ReadTimeout(fault.message, request=request)
        if fault.kind == "connection":
            raise module.ConnectError(fault.message, request=request)
        return (
            session,
            request,
            provider,
            record,
            Decision(Entry(provider.name, record, fault.response(provider.name), ""), False, ""),
        )
    try:
        decision = session.decide(provider.name, record)
    except LLMVCRError as err:
        if _in_funnel.get() is not None:
            raise _Halt(err) from None
        raise
    return session, request, provider, record, decision


def _record_headers(session: Any, response: Any) -> dict[str, str]:
    return session.redactor.headers(response.headers.multi_items(), RESPONSE_HEADERS)


def _make_wrappers(module: Any) -> tuple[Callable[..., Any], Callable[..., Any]]:
    def sync_send(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        prepared = _prepare(module, args, kwargs)
        if prepared is None:
            return wrapped(*args, **kwargs)
        session, request, provider, record, decision = prepared
        stream = kwargs.get("stream", False)
        if decision.entry is not None:
            response = build_response(
                module, decision.entry.response, request, session.options.replay_speed, False
            )
            if not stream:
                response.read()
            return response
        request.headers["accept-encoding"] = "identity"
        start = time.perf_counter()
        response = wrapped(*args, **kwargs)
        finish = _finisher(session, provider, record, decision.request_hash)
        capture = _Capture(
            finish,
            response.status_code,
            _record_headers(session, response),
            _is_sse(response.headers.get("content-type", "")) and stream,
            start,
        )
        if stream:
            response.stream = _make_tee(module, response.stream, capture, False)
            session.stream_opened(lambda: capture.finish(truncated=True))
        else:
            capture.feed(response.content)
            capture.finish()
        return response

    def async_send(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        async def run() -> Any:
            prepared = _prepare(module, args, kwargs)
            if prepared is None:
                return await wrapped(*args, **kwargs)
            session, request, provider, record, decision = prepared
            stream = kwargs.get("stream", False)
            if decision.entry is not None:
                response = build_response(
                    module, decision.entry.response, request, session.options.replay_speed, True
                )
                if not stream:
                    await response.aread()
                return response
            request.headers["accept-encoding"] = "identity"
            start = time.perf_counter()
            response = await wrapped(*args, **kwargs)
            finish = _finisher(session, provider, record, decision.request_hash)
            capture = _Capture(
                finish,
                response.status_code,
                _record_headers(session, response),
                _is_sse(response.headers.get("content-type", "")) and stream,
                start,
            )
            if stream:
                response.stream = _make_tee(module, response.stream, capture, True)
                session.stream_opened(lambda: capture.finish(truncated=True))
            else:
                capture.feed(response.content)
                capture.finish()
            return response

        return run()

    return sync_send, async_send


def _finisher(
    session: Any, provider: HttpProvider, record: Request, request_hash: str
) -> Callable[[Response], None]:
    def finish(response: Response) -> None:
        redacted = Response(
            response.status,
            response.headers,
            body=session.redactor.body(response.body),
            stream=session.redactor.events(response.stream) if response.stream is not None else None,
            truncated=response.truncated,
            failure=response.failure,
        )
        session.record(provider.name, record, redacted, request_hash)

    return finish


def install_http(source: _ProviderSource) -> None:
    """Wrap ``Client.send``/``AsyncClient.send`` of httpx2 and of legacy httpx, now or when it loads.

    Called again on each install: it patches only what is not patched yet.
    """
    global _providers_source, _http_active
    with _lock:
        _providers_source = source
        _http_active = True
        for module_name in ("httpx2", "httpx"):
            if module_name in _patched_modules:
                continue
            if module_name == "httpx" and module_name not in sys.modules:
                if module_name not in _hooked_modules:  # never import it ourselves; patch it as it loads
                    _hooked_modules.add(module_name)
                    wrapt.register_post_import_hook(_on_http_import, module_name)
                continue
            try:
                module = importlib.import_module(module_name)
            except ImportError:
                continue
            _patch_send(module)


def _patch_send(module: Any) -> None:
    sync_send, async_send = _make_wrappers(module)
    for owner, wrapper in ((module.Client, sync_send), (module.AsyncClient, async_send)):
        patch = _Patch(owner, "send", wrapper)
        patch.apply()
        _send_patches.append(patch)
    _patched_modules.add(module.__name__)


def _on_http_import(module: Any) -> None:
    with _lock:
        if _http_active and module.__name__ not in _patched_modules:
            _patch_send(module)


def uninstall_http() -> None:
    global _http_active
    with _lock:
        _http_active = False
        while _send_patches:
            _send_patches.pop().undo()
        _patched_modules.clear()
