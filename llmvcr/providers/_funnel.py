"""The SDK funnel: the one method every call of an SDK passes above its retry loop.

Inside it, llmvcr knows which SDK client made the call, whatever headers a framework set on it
(pydantic-ai, LangChain and the OpenAI Agents SDK replace the SDK's ``User-Agent``). The HTTP
library's ``send`` sits inside the SDK's retry loop, which would retry an llmvcr error and wrap
it as a connection error, so an llmvcr error leaves ``send`` as a ``BaseException`` carrier
(past the SDK's ``except Exception``) and the funnel turns it back into the error.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple

from ..errors import LLMVCRError


class Caller(NamedTuple):
    """Whose funnel the current call is in: the provider's name and the SDK client instance."""

    provider: str
    client: Any


_caller: contextvars.ContextVar[Caller | None] = contextvars.ContextVar("llmvcr_funnel", default=None)


class Halt(BaseException):
    """Carries an llmvcr error through the SDK's retry loop to its funnel, unwrapped."""

    def __init__(self, error: LLMVCRError) -> None:
        super().__init__(str(error))
        self.error = error


def current_caller() -> Caller | None:
    """The funnel the current call is in, or None outside every funnel."""
    return _caller.get()


def carry(error: LLMVCRError) -> BaseException:
    """What to raise below a funnel (a ``Halt``), or the error itself outside one."""
    return Halt(error) if _caller.get() is not None else error


def funnel_wrappers(provider: str) -> tuple[Callable[..., Any], Callable[..., Awaitable[Any]]]:
    """The sync and async wrapt wrappers for ``provider``'s funnel methods."""

    def sync_funnel(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        __tracebackhide__ = True  # pytest shows the user's frame and the message
        token = _caller.set(Caller(provider, instance))
        try:
            return wrapped(*args, **kwargs)
        except Halt as halt:
            raise halt.error from None
        finally:
            _caller.reset(token)

    def async_funnel(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Awaitable[Any]:
        async def run() -> Any:
            __tracebackhide__ = True  # pytest shows the user's frame and the message
            token = _caller.set(Caller(provider, instance))
            try:
                return await wrapped(*args, **kwargs)
            except Halt as halt:
                raise halt.error from None
            finally:
                _caller.reset(token)

        return run()

    return sync_funnel, async_funnel
