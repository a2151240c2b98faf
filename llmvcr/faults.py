"""Turning a recorded success into a failure, for testing retry and fallback code offline."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from .cassette import Response
from .cassette.values import Value
from .wire import error_body

_KINDS = ("status", "timeout", "connection")
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    429: "rate_limit_error",
    500: "api_error",
    503: "api_error",
    529: "overloaded_error",
}


@dataclass(eq=False, repr=False)
class Fault(Value):
    """Make the ``call``-th LLM call (1-based, counted while active) fail as ``kind``."""

    call: int
    kind: str
    status: int
    provider: str | None
    retry_after: str | None
    message: str
    seen: int = 0
    fired: int = 0

    def response(self, provider: str) -> Response:
        """The recorded answer this fault stands for: ``provider``'s own error body for ``status``."""
        body = error_body(provider, self.status, _ERROR_TYPES.get(self.status, "api_error"), self.message)
        headers = {"content-type": "application/json", "x-should-retry": "false"}
        if self.retry_after is not None:
            headers["retry-after"] = self.retry_after
        return Response(self.status, headers, body=body)


_faults: list[Fault] = []
_lock = threading.Lock()


NOT_LLM = frozenset({"mcp", "tool"})  # entry kinds that are not model calls: counted only when named


def take(provider: str) -> Fault | None:
    """Count one call of ``provider``; the fault due on it, if any."""
    with _lock:
        for fault in _faults:
            if fault.provider == provider or (fault.provider is None and provider not in NOT_LLM):
                fault.seen += 1
                if fault.seen == fault.call:
                    fault.fired += 1
                    return fault
    return None


@contextlib.contextmanager
def inject_error(
    status: int = 429,
    *,
    call: int = 1,
    kind: str = "status",
    provider: str | None = None,
    retry_after: str | None = "1",
    message: str = "injected by llmvcr.inject_error",
) -> Iterator[Fault]:
    """Inside the block, the ``call``-th LLM call fails: an HTTP ``status`` error with the provider's error
    body (the SDK raises its own exception class, not retried), a ``timeout`` or a ``connection`` failure.

    >>> with llmvcr.use_cassette("chat"), llmvcr.inject_error(529, call=2):
    ...     first = client.messages.create(...)          # replayed
    ...     client.messages.create(...)                  # raises anthropic.OverloadedError
    """
    if kind not in _KINDS:
        raise ValueError(f"unknown fault kind {kind!r}; valid: {', '.join(_KINDS)}")
    if call < 1:
        raise ValueError(f"call counts from 1, not {call!r}")
    fault = Fault(call, kind, status, provider, retry_after, message)
    with _lock:
        _faults.append(fault)
    try:
        yield fault
    finally:
        with _lock:
            _faults.remove(fault)
