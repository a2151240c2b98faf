"""An llmvcr adapter for an SDK with no HTTP seam: one wrapper, one call to decide()."""

from typing import Any

import userlib
import wrapt

from llmvcr.cassette import Request, Response
from llmvcr.providers import decide, watching


class GatewayProvider:
    name = "gateway"  # stored in each entry

    def __init__(self) -> None:
        self._handle: Any = None

    def sdk_version(self) -> str | None:
        return None  # a package's version here goes into recorded_with

    def install(self) -> None:
        if self._handle is None:
            self._handle = wrapt.wrap_function_wrapper(userlib.Gateway, "complete", self._call)

    def uninstall(self) -> None:
        if self._handle is not None:  # removes only this wrapper, whatever others added
            wrapt.unwrap_object(userlib.Gateway, "complete", self._handle)
            self._handle = None

    def _call(self, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        if not watching():  # no cassette open anywhere: stay out of the way
            return wrapped(*args, **kwargs)
        request = Request("CALL", "gateway/complete", body={"prompt": args[0]})
        decision = decide(self, request, instance)  # redacts, matches, may raise ReplayDivergence
        if decision.fault is not None:  # llmvcr.inject_error(kind="timeout")
            raise TimeoutError(decision.fault.message)
        if decision.entry is not None:  # replay
            return userlib.Reply.model_validate(decision.entry.response.body)
        reply = wrapped(*args, **kwargs)  # live
        decision.record(Response(200, body=reply.model_dump()))  # kept when the cassette records
        return reply


provider = GatewayProvider()
