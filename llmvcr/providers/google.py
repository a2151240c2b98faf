"""The google-genai SDK (Gemini API): ``generate_content``, its stream, chats and embeddings.

Every call of the SDK, sync or async, passes ``BaseApiClient``'s request methods above its retry
loop (tenacity): those are the funnels (their names are in ``providers._internals``). Below them
the sync client sends through httpx2 (``providers._httpx``) and ``client.aio`` through aiohttp when
it is importable (``providers._aiohttp``), else httpx2. Replaying at the HTTP layer lets the SDK
build its own types and raise its own ``errors.APIError`` subclasses from the recorded status and
body.

Its key travels as ``x-goog-api-key`` (or a ``?key=`` query): both are credentials the session
learns and never writes (``llmvcr.wire.headers.CREDENTIAL_HEADERS``, which takes it from
``llmvcr.wire.google``, and ``llmvcr.redaction.SECRET_QUERY_KEYS``).
"""

from __future__ import annotations

from typing import Any

from ..wire import google as wire
from . import _internals
from .base import funnel_wrappers, package_version
from .http import HttpProvider


class GoogleProvider(HttpProvider):
    """google-genai: the import name (``google.genai``) differs from the distribution's."""

    def sdk_version(self) -> str | None:
        return package_version("google-genai")

    def adapted(self, client: Any) -> tuple[Any, ...] | None:
        """A ``genai.Client`` (or its ``.aio``) makes its calls through the API client it holds."""
        if not type(client).__module__.startswith("google.genai"):
            return None
        name = _internals.attribute("google.api_client")
        inner = getattr(client, name, None)
        if inner is None or not _internals.present("google.api_client"):
            raise _internals.error("google.api_client")
        return (client, inner)

    def targets(self) -> list[tuple[Any, str, Any]]:
        """Both funnels, each left out (reported once by the registry) when a release renamed it."""
        if not _internals.present("google.module"):
            return []
        sync_funnel, async_funnel = funnel_wrappers(self.name)
        out = []
        for key, wrapper in (("google.request", sync_funnel), ("google.async_request", async_funnel)):
            found = _internals.resolve(key)
            if found is not None:
                out.append((*found, wrapper))
        return out


provider = GoogleProvider.speaking(wire.FORMAT, "google.genai")
