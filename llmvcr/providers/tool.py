"""``@llmvcr.tool``: an agent's own tool, recorded and replayed by its name and its arguments.

Inside a cassette each call is one entry (``provider: tool``, ``request.method: tool``,
``request.path``: the tool's name, ``request.body: {arguments: {...}}`` bound to the signature by
name); replay hands back the recorded result, or raises the recorded exception, without running
the body, so an email is sent once: when the cassette was recorded. Outside every cassette the tool
is called as if it were not decorated. The decorated function keeps its name, docstring,
annotations and signature, so agent frameworks build the same tool schema from it.

>>> @llmvcr.tool
... def send_email(to: str, subject: str) -> str:
...     '''Send an email.'''
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from typing import Any, TypeVar, overload

from .. import _active
from ..cassette import Request
from ..errors import RecordedToolError, ReplayDivergence, ToolDeniedError
from ..options import policy_for
from ..session import Decision, Session
from ..wire.headers import is_credential_header
from .base import decide, watching
from .function import Deserialize, FunctionProvider, Serialize

F = TypeVar("F", bound=Callable[..., Any])

TOOL = "tool"  # the provider of every tool entry, and its request method

# What a framework passes to a tool besides the model's arguments (pydantic-ai's RunContext, the
# OpenAI Agents SDK's RunContextWrapper and ToolContext, LangChain's config and callback managers):
# a run's state, different on each run, never part of what the model asked for.
CONTEXT_TYPES = frozenset(
    {
        "RunContext",
        "RunContextWrapper",
        "ToolContext",
        "RunnableConfig",
        "CallbackManagerForToolRun",
        "AsyncCallbackManagerForToolRun",
        "ToolRuntime",
    }
)


def check_tool_policy(session: Session, tool: str, where: str = "") -> str:
    """``"replay"`` or ``"live"`` for a call of the tool named ``tool`` in ``session``, after its
    ``tool_policy``; raises :class:`~llmvcr.errors.ToolDeniedError` for ``"deny"``. The one lookup
    that ``@llmvcr.tool`` and an MCP ``tools/call`` (by ``params.name``) both make; ``where`` says
    where the tool lives (an MCP call: ``" of the MCP server NAME"``)."""
    __tracebackhide__ = True
    policy = policy_for(session.options, tool)
    if policy == "deny":
        test = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0]
        by = f" by {test}" if test else ""
        raise ToolDeniedError(
            f"llmvcr: tool {tool!r}{where} was called{by} in {session.path}, and its tool_policy is 'deny': "
            f"nothing ran. Remove it from tool_policy (or set 'replay' or 'live') if the call is meant."
        )
    return policy


def _annotation_name(annotation: Any) -> str:
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", repr(annotation))
    return str(text).split("[", 1)[0].rsplit(".", 1)[-1]


def _is_context(value: Any) -> bool:
    return any(cls.__name__ in CONTEXT_TYPES for cls in type(value).__mro__)


def _is_method(fn: Callable[..., Any], params: list[inspect.Parameter]) -> bool:
    """A function defined in a class body, whose first parameter is its instance (or class)."""
    owner = str(getattr(fn, "__qualname__", "")).rsplit("<locals>.", 1)[-1]
    return "." in owner and bool(params) and params[0].name in ("self", "cls")


class ToolRecorder(FunctionProvider):
    """One decorated tool: its name, how a call binds to its signature, how its results are stored."""

    fallback_error = RecordedToolError

    def __init__(
        self,
        fn: Callable[..., Any],
        tool: str,
        serialize: Serialize | None = None,
        deserialize: Deserialize | None = None,
    ) -> None:
        where = f"{getattr(fn, '__module__', None) or 'tool'}:{getattr(fn, '__qualname__', tool)}"
        super().__init__(where, serialize, deserialize)
        self.name = TOOL
        self.tool = tool
        self.what = f"tool {tool!r}"
        self.signature = inspect.signature(fn)
        params = list(self.signature.parameters.values())
        self.skip = {p.name for p in params if _annotation_name(p.annotation) in CONTEXT_TYPES}
        if _is_method(fn, params):
            self.skip.add(params[0].name)

    def sdk_version(self) -> str | None:
        return None  # the user's own code: no SDK to name in recorded_with

    def install(self) -> None:
        """Nothing to patch: the decorator is the interception."""

    def uninstall(self) -> None:
        """Nothing was patched."""

    def arguments(self, args: Any, kwargs: Any) -> dict[str, Any]:
        """The call's arguments by parameter name, defaults filled in, the instance and a framework's
        run context left out."""
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError:  # the body raises the same TypeError when it runs; record what was passed
            return {"args": list(args), "kwargs": dict(kwargs)}
        bound.apply_defaults()
        return {
            name: value
            for name, value in bound.arguments.items()
            if name not in self.skip and not _is_context(value)
        }

    def decision(self, args: Any, kwargs: Any) -> Decision | None:
        """The decision for this call, or None to run the body unrecorded (outside every cassette,
        or a ``"live"`` tool)."""
        __tracebackhide__ = True
        session = _active.current_session() if watching() else None
        if session is None or check_tool_policy(session, self.tool) == "live":
            return None
        arguments = self.arguments(args, kwargs)
        # a credential passed by name (api_key=, token=) is learned as a credential header is: replaced
        # in the stored call and wherever it comes back (raw, base64, quoted)
        credentials = {k: v for k, v in arguments.items() if isinstance(v, str) and is_credential_header(k)}
        body = {"arguments": self.serialize(arguments)}
        decision = decide(self, Request(method=TOOL, path=self.tool, body=body, headers=credentials))
        if decision.fault is not None:  # an injected failure: raised, never a live call
            raise (TimeoutError if decision.fault.kind == "timeout" else ConnectionError)(
                decision.fault.message
            )
        entry = decision.entry
        if entry is not None and (entry.provider != TOOL or entry.request.path != self.tool):
            # mode="sequential" serves the next entry whatever it is: never another call's answer
            where = decision.session.path if decision.session is not None else "the cassette"
            raise ReplayDivergence(
                f"llmvcr: {where} served tool {self.tool!r} the entry recorded for "
                f"{entry.provider} {entry.request.method} {entry.request.path}: the calls ran in another "
                f"order than recorded (mode='sequential' serves entries in order). Re-record the cassette, "
                f"or match by request (the default mode).",
                cassette_path=where,
                request=decision.request,
                nearest=entry,
            )
        if entry is None and not decision.recording:
            return None
        return decision


def _wrap(fn: Callable[..., Any], recorder: ToolRecorder) -> Callable[..., Any]:
    """A function of the same kind as ``fn`` (plain, coroutine, generator, async generator), so that
    a framework that asks ``inspect`` which kind it is gets the same answer."""
    wrapper: Callable[..., Any]
    if inspect.isasyncgenfunction(fn):

        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            decision = recorder.decision(args, kwargs)
            items = fn(*args, **kwargs) if decision is None else recorder.run(decision, fn, args, kwargs)
            async for item in items:
                yield item

    elif inspect.isgeneratorfunction(fn):

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            decision = recorder.decision(args, kwargs)
            if decision is None:
                return (yield from fn(*args, **kwargs))
            yield from recorder.run(decision, fn, args, kwargs)

    elif inspect.iscoroutinefunction(fn):

        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True
            decision = recorder.decision(args, kwargs)
            if decision is None:
                return await fn(*args, **kwargs)
            return await recorder.run(decision, fn, args, kwargs)

    else:

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True
            decision = recorder.decision(args, kwargs)
            if decision is None:
                return fn(*args, **kwargs)
            return recorder.run(decision, fn, args, kwargs)

    functools.update_wrapper(wrapper, fn)
    setattr(wrapper, "__signature__", recorder.signature)  # noqa: B010 - mypy knows no such attribute
    setattr(wrapper, "__llmvcr_tool__", recorder)  # noqa: B010
    return wrapper


@overload
def tool(fn: F, /) -> F: ...


@overload
def tool(
    *, name: str | None = None, serialize: Serialize | None = None, deserialize: Deserialize | None = None
) -> Callable[[F], F]: ...


def tool(
    fn: Any = None,
    /,
    *,
    name: str | None = None,
    serialize: Serialize | None = None,
    deserialize: Deserialize | None = None,
) -> Any:
    """Record a tool's calls inside a cassette and replay them without running its body.

    Works on functions and methods, sync or async, generators too; ``name`` is the tool's name in
    the cassette and in ``tool_policy`` (the function's ``__name__`` unless given). Results that are
    JSON values, pydantic models or dataclasses come back as themselves; ``serialize`` and
    ``deserialize`` store anything else. Put it under a framework's own decorator::

        @agent.tool_plain
        @llmvcr.tool
        def send_email(to: str, subject: str) -> str: ...

        search = llmvcr.tool(search)              # a function already defined
    """
    if fn is None:
        return functools.partial(_make, name=name, serialize=serialize, deserialize=deserialize)
    return _make(fn, name=name, serialize=serialize, deserialize=deserialize)


def _make(fn: Any, *, name: str | None, serialize: Serialize | None, deserialize: Deserialize | None) -> Any:
    if getattr(fn, "__llmvcr_tool__", None) is not None:
        return fn  # already a recorded tool
    if not callable(fn) or isinstance(fn, type):
        raise TypeError(f"llmvcr.tool decorates a function or a method, not {fn!r}")
    tool_name = name or getattr(fn, "__name__", None)
    if not tool_name:
        raise TypeError(f"llmvcr.tool({fn!r}): this callable has no __name__; name the tool: name='...'")
    recorder = ToolRecorder(fn, tool_name, serialize, deserialize)
    return _wrap(fn, recorder)
