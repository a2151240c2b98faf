"""A provider for any function: records its arguments and return value (or yielded items).

For SDKs with no shared HTTP funnel (gRPC clients, hand-written SDKs, your own wrappers).
Pydantic models and dataclasses are stored as JSON with their class, and rebuilt on replay.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from ..cassette import Request, Response
from ..errors import RecordedCallError
from ..session import Decision
from ..wire.headers import is_credential_header
from ._patch import Patch, resolve_attr
from .base import decide, outer_call, package_version, watching
from .registry import register_provider

Serialize = Callable[[Any], Any]
Deserialize = Callable[[Any], Any]


def to_json(value: Any) -> Any:
    """JSON-able form of a value; models and dataclasses keep their class in ``__type__``."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    cls = type(value)
    name = f"{cls.__module__}:{cls.__qualname__}"
    if hasattr(value, "model_dump"):
        return {"__type__": name, "value": value.model_dump(mode="json")}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"__type__": name, "value": to_json(dataclasses.asdict(value))}
    if isinstance(value, bytes):
        return {"__type__": "bytes", "value": value.decode("latin-1")}
    return {"__type__": "repr", "value": repr(value)}


def _load_class(name: str) -> Any:
    owner, attr = resolve_attr(name)
    return getattr(owner, attr)


def from_json(value: Any) -> Any:
    if isinstance(value, list):
        return [from_json(v) for v in value]
    if isinstance(value, dict):
        kind = value.get("__type__")
        if kind is None:
            return {k: from_json(v) for k, v in value.items()}
        inner = value.get("value")
        if kind == "bytes":
            return str(inner).encode("latin-1")
        if kind == "repr":
            return inner
        cls = _load_class(str(kind))
        if hasattr(cls, "model_validate"):
            return cls.model_validate(inner)
        if isinstance(cls, type) and dataclasses.is_dataclass(cls) and isinstance(inner, dict):
            return cls(**inner)
        return inner
    return value


def error_json(err: BaseException) -> dict[str, Any]:
    """How a raised exception is stored: its class as ``module:qualname`` and its message."""
    cls = type(err)
    return {"type": f"{cls.__module__}:{cls.__qualname__}", "message": str(err)}


def rebuild_error(
    data: Any, fallback: type[RecordedCallError] = RecordedCallError, what: str = "call"
) -> BaseException:
    """The recorded exception raised again: its own class with its message when that class can be
    imported and built so, else ``fallback`` naming the recorded type."""
    try:
        cls = _load_class(str(data["type"]))
        if isinstance(cls, type) and issubclass(cls, Exception):
            return cls(data.get("message", ""))
    except Exception:  # a class that cannot be rebuilt from its message: say so instead
        pass
    return fallback(
        f"the recorded {what} raised {data.get('type')}: {data.get('message')} (that class cannot be "
        f"imported here, or not built from its message)"
    )


class FunctionProvider:
    """Records ``target`` (``"package.module:Class.method"``) while a cassette is open."""

    fallback_error: type[RecordedCallError] = RecordedCallError  # a recorded class that cannot be rebuilt
    what = "call"  # how the fallback error names the call

    def __init__(
        self, target: str, serialize: Serialize | None = None, deserialize: Deserialize | None = None
    ) -> None:
        if ":" not in target:
            raise ValueError(f"patch_function({target!r}): expected 'package.module:Class.method'")
        self.target = target
        self.name = target
        self.serialize = serialize or to_json
        self.deserialize = deserialize or from_json
        self._patch: Patch | None = None

    def sdk_version(self) -> str | None:
        return package_version(self.target.split(".")[0].split(":")[0])

    def install(self) -> None:
        if self._patch is None:
            owner, attr = resolve_attr(self.target)
            self._patch = Patch(owner, attr, self._wrapper)
            self._patch.apply()

    def uninstall(self) -> None:
        if self._patch is not None:
            self._patch.undo()
            self._patch = None

    # -- calls --------------------------------------------------------------------------------
    def decision(self, args: Any, kwargs: Any) -> Decision | None:
        """The decision for this call, or None to call through untouched (outside every cassette)."""
        if not watching():
            return None
        body = {"args": self.serialize(list(args)), "kwargs": self.serialize(dict(kwargs))}
        # a credential passed by name (api_key=, token=) is learned by the session as a credential
        # header is: replaced in the stored call and wherever it comes back (raw, base64, quoted)
        credentials = {k: v for k, v in kwargs.items() if isinstance(v, str) and is_credential_header(k)}
        decision = decide(self, Request(method="CALL", path=self.target, body=body, headers=credentials))
        fault = decision.fault
        if fault is not None:  # an injected failure: raised, never a live call
            raise (TimeoutError if fault.kind == "timeout" else ConnectionError)(fault.message)
        if decision.entry is None and not decision.recording:
            return None
        return decision

    def _wrapper(self, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        __tracebackhide__ = True  # pytest shows the user's frame and the message
        decision = self.decision(args, kwargs)
        if decision is None:
            return wrapped(*args, **kwargs)
        return self.run(decision, wrapped, args, kwargs)

    def run(self, decision: Decision, wrapped: Any, args: Any, kwargs: Any) -> Any:
        """Serve ``decision``'s entry, or call ``wrapped`` live and record what it returned or raised
        (a coroutine, a generator or an async generator when ``wrapped`` is one)."""
        __tracebackhide__ = True
        if inspect.isasyncgenfunction(wrapped):
            return self._async_gen(decision, wrapped, args, kwargs)
        if inspect.isgeneratorfunction(wrapped):
            return self._gen(decision, wrapped, args, kwargs)
        if inspect.iscoroutinefunction(wrapped):
            return self._coroutine(decision, wrapped, args, kwargs)
        if decision.entry is not None:
            return self._replay_value(decision.entry.response)
        try:
            with outer_call():
                result = wrapped(*args, **kwargs)
        except Exception as err:
            _record(decision, Response(500, body={"error": error_json(err)}))
            raise
        _record(decision, Response(200, body={"return": self.serialize(result)}))
        return result

    def _replay_value(self, response: Response) -> Any:
        body = response.body if isinstance(response.body, dict) else {}
        if "error" in body:
            raise rebuild_error(body["error"], self.fallback_error, self.what)
        return self.deserialize(body.get("return"))

    async def _coroutine(self, decision: Decision, wrapped: Any, args: Any, kwargs: Any) -> Any:
        if decision.entry is not None:
            return self._replay_value(decision.entry.response)
        try:
            with outer_call():
                result = await wrapped(*args, **kwargs)
        except Exception as err:
            _record(decision, Response(500, body={"error": error_json(err)}))
            raise
        _record(decision, Response(200, body={"return": self.serialize(result)}))
        return result

    def _items(self, response: Response) -> tuple[list[Any], Any]:
        items = [self.deserialize(ev.get("data")) for ev in response.stream or []]
        error = response.body.get("error") if isinstance(response.body, dict) else None
        return items, error

    def _gen(self, decision: Decision, wrapped: Any, args: Any, kwargs: Any) -> Iterator[Any]:
        if decision.entry is not None:
            yield from self._replayed_items(decision.entry.response)
            return
        with _Items(decision, self.serialize) as items:
            inner = iter(wrapped(*args, **kwargs))
            while True:
                with outer_call():  # only while the generator runs, not while the caller does
                    item = next(inner, _END)
                if item is _END:
                    break
                yield items.add(item)
            items.finished = True

    async def _async_gen(
        self, decision: Decision, wrapped: Any, args: Any, kwargs: Any
    ) -> AsyncIterator[Any]:
        if decision.entry is not None:
            for item in self._replayed_items(decision.entry.response):
                yield item
            return
        with _Items(decision, self.serialize) as items:
            inner = wrapped(*args, **kwargs).__aiter__()
            while True:
                with outer_call():
                    item = await anext(inner, _END)
                if item is _END:
                    break
                yield items.add(item)
            items.finished = True

    def _replayed_items(self, response: Response) -> Iterator[Any]:
        items, error = self._items(response)
        yield from items
        if error:
            raise rebuild_error(error, self.fallback_error, self.what)


def _record(decision: Decision, response: Response) -> None:
    """Hand ``response`` to the session, which redacts it. A key-shaped value is learned first
    wherever it stands in the answer, so that its encoded forms (base64, percent-encoded) are
    replaced even where they come before it, as a credential learned from a request is."""
    session = decision.session
    if session is not None:
        session.redactor.learn_encoded([response.body, response.stream])  # a key returned as base64
        session.redactor.tree([response.body, response.stream])
    decision.record(response)


_END = object()  # a generator's end, told apart from any item it yields


class _Items:
    """The items a live generator yields, recorded when it ends (finished, failed or abandoned)."""

    def __init__(self, decision: Decision, serialize: Serialize) -> None:
        self.decision, self.serialize = decision, serialize
        self.seen: list[dict[str, Any]] = []
        self.finished = False

    def add(self, item: Any) -> Any:
        self.seen.append({"data": self.serialize(item)})
        return item

    def __enter__(self) -> _Items:
        return self

    def __exit__(self, kind: Any, error: Any, tb: Any) -> None:
        failure = error_json(error) if isinstance(error, Exception) else None
        body = {"error": failure} if failure else None
        truncated = not self.finished and not failure
        _record(self.decision, Response(200, body=body, stream=self.seen, truncated=truncated))


def patch_function(
    target: str, *, serialize: Serialize | None = None, deserialize: Deserialize | None = None
) -> FunctionProvider:
    """Record and replay calls of any function, method, generator or async generator.

    >>> llmvcr.patch_function("my_gateway.client:Gateway.complete")
    >>> with llmvcr.use_cassette("gateway"):
    ...     Gateway().complete("hi")            # recorded once, replayed after
    """
    provider = FunctionProvider(target, serialize, deserialize)
    register_provider(provider)
    return provider
