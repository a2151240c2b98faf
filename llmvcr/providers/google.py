"""The google-genai SDK (Gemini API): ``generate_content``, its stream, chats and embeddings.

Every call of the SDK, sync or async, passes ``BaseApiClient._request`` / ``_async_request``
above its retry loop (tenacity): those are the funnels. Below them the sync client sends through
httpx2 (``providers._send``) and ``client.aio`` through aiohttp when it is importable
(``providers._aiohttp``), else httpx2. Replaying at the HTTP layer lets the SDK build its own
types and raise its own ``errors.APIError`` subclasses from the recorded status and body.

Its key travels as ``x-goog-api-key`` (or a ``?key=`` query): both are credentials the session
learns and never writes (``redact.CREDENTIAL_HEADERS``, ``redact.SECRET_QUERY_KEYS``).
"""

from __future__ import annotations

from ..wire import google as wire
from .base import package_version
from .http import HttpProvider


class GoogleProvider(HttpProvider):
    """google-genai: the import name (``google.genai``) differs from the distribution's."""

    def sdk_version(self) -> str | None:
        return package_version("google-genai")


provider = GoogleProvider(
    wire.NAME,
    "google.genai",
    sync_funnels=("google.genai._api_client:BaseApiClient._request",),
    async_funnels=("google.genai._api_client:BaseApiClient._async_request",),
    hosts=(wire.API_HOST,),
    wire=wire.SEAM_PATHS,  # its wire format is llmvcr.wire.google's
)
