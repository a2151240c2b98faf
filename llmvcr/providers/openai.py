"""The OpenAI SDK, Azure OpenAI included (its path and ``api-version`` query are kept); its wire
format is ``llmvcr.wire.openai``'s."""

from ..wire import openai as wire
from .http import StainlessProvider

provider = StainlessProvider.speaking(wire.FORMAT, "openai", client_names=("OpenAI",))
