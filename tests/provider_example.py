"""An llmvcr adapter for the mistralai SDK (Speakeasy-generated, on httpx2)."""

from typing import Any

import llmvcr
from llmvcr.providers import HttpProvider


class MistralProvider(HttpProvider):
    def owns(self, request: Any) -> bool:
        # Called for every request reaching httpx2/httpx Client.send: is it this SDK's?
        agent = request.headers.get("user-agent", "")
        return agent.startswith("mistral-client-python/") or super().owns(request)


provider = MistralProvider(
    name="mistral",                   # stored in each entry and in recorded_with
    package="mistralai",              # its version goes into recorded_with
    hosts=("api.mistral.ai",),        # requests to these hosts are its own too
    # The SDK method above its retry loop: an llmvcr error (a replay divergence) raised
    # in send() leaves through it unwrapped, and is never retried.
    sync_funnels=("mistralai.client.basesdk:BaseSDK.do_request",),
    async_funnels=("mistralai.client.basesdk:BaseSDK.do_request_async",),
)

llmvcr.register_provider(provider)
