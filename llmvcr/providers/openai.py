"""The OpenAI SDK, Azure OpenAI included (its path and ``api-version`` query are kept); its wire
format is ``llmvcr.wire.openai``'s."""

from ..wire import openai as wire
from .http import StainlessProvider

provider = StainlessProvider(
    wire.NAME,
    package="openai",
    client_names=("OpenAI",),
    meaning_headers=wire.MEANING_HEADERS,
    hosts=(wire.API_HOST,),
    wire=wire.SEAM_PATHS,
)
