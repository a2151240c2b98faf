"""The Anthropic SDK: a Stainless client; ``anthropic-version``/``anthropic-beta`` carry meaning."""

from .http import StainlessProvider

provider = StainlessProvider(
    "anthropic",
    package="anthropic",
    client_names=("Anthropic",),
    meaning_headers=("anthropic-version", "anthropic-beta"),
    hosts=("api.anthropic.com",),
    wire=(("/v1/messages", "anthropic-version"), ("/v1/messages/count_tokens", "anthropic-version")),
)
