"""The OpenAI SDK, Azure OpenAI included (its path and ``api-version`` query are kept)."""

from .http import StainlessProvider

provider = StainlessProvider(
    "openai",
    package="openai",
    client_names=("OpenAI",),
    meaning_headers=("openai-beta",),
    hosts=("api.openai.com",),
    wire=(("/chat/completions", ""), ("/responses", ""), ("/embeddings", "")),
)
