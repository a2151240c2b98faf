"""The Anthropic SDK: a Stainless client; its wire format (hosts, meaning headers, paths) is
``llmvcr.wire.anthropic``'s."""

from ..wire import anthropic as wire
from .http import StainlessProvider

provider = StainlessProvider(
    wire.NAME,
    package="anthropic",
    client_names=("Anthropic",),
    meaning_headers=wire.MEANING_HEADERS,
    hosts=(wire.API_HOST,),
    wire=wire.SEAM_PATHS,
)
