"""The Anthropic SDK: a Stainless client; ``anthropic-version``/``anthropic-beta`` carry meaning."""

from ._http import StainlessProvider

provider = StainlessProvider(
    "anthropic",
    package="anthropic",
    client_names=("Anthropic",),
    meaning_headers=("anthropic-version", "anthropic-beta"),
)
