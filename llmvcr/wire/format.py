"""What one provider's wire description holds: everything a door, the proxy, the faults, the usage
reader and the viewer ask of a provider, so none of them names one.

Each ``wire/<provider>.py`` builds its :class:`WireFormat` as ``FORMAT``; ``wire/builtin.py`` lists
the built-in ones and ``llmvcr.wire`` registers them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..cassette.entries import Request, Response
from ..cassette.values import FrozenValue

Event = dict[str, Any]
JSON = dict[str, Any]


def error_of(body: Any) -> str | None:
    """The message of an error body shaped ``{"error": {"message": ...}}`` (all three built-in APIs)."""
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return str(message) if message is not None else None


def one_flavor(path: str) -> tuple[str, ...]:
    """An API whose usage is read one way whatever the endpoint."""
    return ("default",)


class ApiKey(NamedTuple):
    """Where a live check finds the API's key and base URL, and the header the key travels in
    (``authorization`` carries it as ``Bearer <key>``)."""

    env: str  # ANTHROPIC_API_KEY
    base_url_env: str  # ANTHROPIC_BASE_URL
    header: str  # x-api-key


@dataclass(frozen=True, eq=False, repr=False)
class WireFormat(FrozenValue):
    """One provider's wire format; ``name`` is the provider name its entries carry."""

    name: str
    hosts: tuple[str, ...]  # API hosts, matched as suffixes (Azure's per-resource hosts)
    agents: tuple[str, ...]  # User-Agent products of the SDK's clients, lowercase ("anthropic")
    marker_headers: tuple[str, ...]  # request headers only this SDK sends
    sdk_headers: Mapping[str, str]  # meaningful request headers every SDK of it sends, with their value
    endpoints: re.Pattern[str]  # searched in the URL path
    asks_stream: Callable[[Request], bool]
    plain_request: Callable[[Request], Request]  # the same call asking for no stream
    events_of: Callable[[Request, Any], list[Event]]  # a stream that builds ``body``
    finished: Callable[[list[Event]], bool]  # the stream holds its terminal event
    error_body: Callable[[int, str, str], JSON]  # (status, kind, message) -> an error in its shape
    api_host: str  # where its SDK sends by default (the proxy's upstream)
    meaning_headers: tuple[str, ...] = ()  # kept in the request: they change its meaning
    credential_headers: tuple[str, ...] = ()  # its own headers that carry a credential, never stored
    # a request from a client that is not the SDK's (litellm's own httpx client) is this API's when its
    # path ends so and it carries the header (or "" for none)
    seam_paths: tuple[tuple[str, str], ...] = ()
    error_of: Callable[[Any], str | None] = error_of  # the message of an error body
    # None: a stream always comes as events; else whether a stream request gets one JSON array instead
    array_stream: Callable[[Request], bool] | None = None
    model_in_path: Callable[[str], str | None] | None = None  # a model named in the path, not the body
    # how genai-prices reads its answers: the API flavours for a path, the model's and the usage's keys
    usage_flavors: Callable[[str], tuple[str, ...]] = one_flavor
    model_key: str = "model"
    usage_key: str = "usage"
    api_key: ApiKey | None = None  # None: ``llmvcr verify`` does not call it

    def recognises(self, headers: Mapping[str, str], host: str, path: str) -> bool:
        """Whether a request outside the SDK's funnel is this provider's (the importers' question)."""
        return (
            self.by_agent(headers)
            or host.endswith(self.hosts)
            or bool(self.endpoints.search(path))
            or any(h in headers for h in self.marker_headers)
        )

    def by_agent(self, headers: Mapping[str, str]) -> bool:
        head = headers.get("user-agent", "").split("/", 1)[0].lower()
        return any(agent in head for agent in self.agents)

    def answers_with_stream(self, response: Response) -> bool:
        """Whether a recorded answer is a stream: events, a stream sent as one JSON array (Gemini's),
        or an event stream a client read whole and was recorded as its text."""
        if response.stream is not None or (self.array_stream is not None and isinstance(response.body, list)):
            return True
        content_type = response.headers.get("content-type", "")
        return isinstance(response.body, str) and "text/event-stream" in content_type

    def model_of(self, request: Request) -> str | None:
        """The model a request names: its body's ``model``, else its path's (Gemini's)."""
        body = request.body
        if isinstance(body, dict) and body.get("model"):
            return str(body["model"])
        return self.model_in_path(request.path) if self.model_in_path else None
