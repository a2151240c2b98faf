"""A provider for any function: records its arguments and return value (or yielded items).

For SDKs with no shared HTTP funnel (gRPC clients, hand-written SDKs, your own wrappers).
Pydantic models and dataclasses are stored as JSON with their class, and rebuilt on replay.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import inspect
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import wrapt

from ..cassette import Request, Response
from ..errors import LLMVCRError

Serialize = Callable[[Any], Any]
Deserialize = Callable[[Any], Any]


class RecordedCallError(LLMVCRError):
    """A recorded call raised an exception whose class could not be rebuilt on replay."""


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
    module, _, qualname = name.partition(":")
    owner: Any = importlib.import_module(module)
    for part in qualname.split("."):
        owner = getattr(owner, part)
    return owner


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
        if dataclasses.is_dataclass(cls):
            return cls(**inner)
        return inner
    return value


def _error_json(err: BaseException) -> dict[str, Any]:
    cls = type(err)
    return {"type": f"{cls.__module__}:{cls.__qualname__}", "message": str(err)}


def _rebuild_error(data: Any) -> BaseException:
    try:
        cls = _load_class(str(data["type"]))
        if isinstance(cls, type) and issubclass(cls, Exception):
            return cls(data.get("message", ""))
    except Exception:  # a class that cannot be rebuilt from its message: say so instead
        pass
    return RecordedCallError(f"the recorded call raised {data.get('type')}: {data.get('message')}")


class FunctionProvider:
    """Records ``target`` (``"package.module:Class.method"``) while a cassette is open."""

    def __init__(
        self, target: str, serialize: Serialize | None = None, deserialize: Deserialize | None = None
    ) -> None:
        if ":" not in target:
            raise ValueError(f"patch_function({target!r}): expected 'package.module:Class.method'")
        self.target = target
        self.name = target
        self.serialize = serialize or to_json
        self.deserialize = deserialize or from_json
        self._owner: Any = None
        self._attr = ""
        self._original: Any = None

    def sdk_version(self) -> str | None:
        try:
            return importlib.metadata.version(self.target.split(".")[0].split(":")[0])
        except importlib.metadata.PackageNotFoundError:
            return None

    def install(self) -> None:
        if self._owner is not None:
            return
        module_name, _, dotted = self.target.partition(":")
        owner: Any = importlib.import_module(module_name)
        *parents, attr = dotted.split(".")
        for part in parents:
            owner = getattr(owner, part)
        self._owner, self._attr = owner, attr
        self._original = (
            owner.__dict__[attr] if attr in getattr(owner, "__dict__", {}) else getattr(owner, attr)
        )
        wrapt.wrap_function_wrapper(owner, attr, self._wrapper)

    def uninstall(self) -> None:
        if self._owner is not None:
            setattr(self._owner, self._attr, self._original)
            self._owner = None

    # -- calls --------------------------------------------------------------------------------
    def _request(self, instance: Any, args: Any, kwargs: Any) -> Request:
        body = {"args": self.serialize(list(args)), "kwargs": self.serialize(dict(kwargs))}
        return Request(method="CALL", path=self.target, body=body)

    def _wrapper(self, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        from ..session import current_session

        session = current_session()
        if session is None:
            return wrapped(*args, **kwargs)
        request = self._request(instance, args, kwargs)
        decision = session.decide(self.name, request)
        if inspect.isasyncgenfunction(wrapped):
            return self._async_gen(session, request, decision, wrapped, args, kwargs)
        if inspect.isgeneratorfunction(wrapped):
            return self._gen(session, request, decision, wrapped, args, kwargs)
        if inspect.iscoroutinefunction(wrapped):
            return self._coroutine(session, request, decision, wrapped, args, kwargs)
        if decision.entry is not None:
            return self._replay_value(decision.entry.response)
        try:
            result = wrapped(*args, **kwargs)
        except Exception as err:
            session.record(
                self.name, request, Response(500, body={"error": _error_json(err)}), decision.request_hash
            )
            raise
        session.record(
            self.name, request, Response(200, body={"return": self.serialize(result)}), decision.request_hash
        )
        return result

    def _replay_value(self, response: Response) -> Any:
        body = response.body if isinstance(response.body, dict) else {}
        if "error" in body:
            raise _rebuild_error(body["error"])
        return self.deserialize(body.get("return"))

    async def _coroutine(
        self, session: Any, request: Request, decision: Any, wrapped: Any, args: Any, kwargs: Any
    ) -> Any:
        if decision.entry is not None:
            return self._replay_value(decision.entry.response)
        try:
            result = await wrapped(*args, **kwargs)
        except Exception as err:
            session.record(
                self.name, request, Response(500, body={"error": _error_json(err)}), decision.request_hash
            )
            raise
        session.record(
            self.name, request, Response(200, body={"return": self.serialize(result)}), decision.request_hash
        )
        return result

    def _items(self, response: Response) -> tuple[list[Any], Any]:
        items = [self.deserialize(ev.get("data")) for ev in response.stream or []]
        error = response.body.get("error") if isinstance(response.body, dict) else None
        return items, error

    def _gen(
        self, session: Any, request: Request, decision: Any, wrapped: Any, args: Any, kwargs: Any
    ) -> Iterator[Any]:
        if decision.entry is not None:
            items, error = self._items(decision.entry.response)
            yield from items
            if error:
                raise _rebuild_error(error)
            return
        seen: list[dict[str, Any]] = []
        failure: dict[str, Any] | None = None
        finished = False
        try:
            for item in wrapped(*args, **kwargs):
                seen.append({"data": self.serialize(item)})
                yield item
            finished = True
        except Exception as err:
            failure = _error_json(err)
            raise
        finally:
            body = {"error": failure} if failure else None
            session.record(
                self.name,
                request,
                Response(200, body=body, stream=seen, truncated=not finished and not failure),
                decision.request_hash,
            )

    async def _async_gen(
        self, session: Any, request: Request, decision: Any, wrapped: Any, args: Any, kwargs: Any
    ) -> AsyncIterator[Any]:
        if decision.entry is not None:
            items, error = self._items(decision.entry.response)
            for item in items:
                yield item
            if error:
                raise _rebuild_error(error)
            return
        seen: list[dict[str, Any]] = []
        failure: dict[str, Any] | None = None
        finished = False
        try:
            async for item in wrapped(*args, **kwargs):
                seen.append({"data": self.serialize(item)})
                yield item
            finished = True
        except Exception as err:
            failure = _error_json(err)
            raise
        finally:
            body = {"error": failure} if failure else None
            session.record(
                self.name,
                request,
                Response(200, body=body, stream=seen, truncated=not finished and not failure),
                decision.request_hash,
            )


def patch_function(
    target: str, *, serialize: Serialize | None = None, deserialize: Deserialize | None = None
) -> FunctionProvider:
    """Record and replay calls of any function, method, generator or async generator.

    >>> llmvcr.patch_function("my_gateway.client:Gateway.complete")
    >>> with llmvcr.use_cassette("gateway"):
    ...     Gateway().complete("hi")            # recorded once, replayed after
    """
    from . import register_provider

    provider = FunctionProvider(target, serialize, deserialize)
    register_provider(provider)
    return provider
