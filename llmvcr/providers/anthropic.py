"""The Anthropic SDK: a Stainless client; its wire format (hosts, meaning headers, paths) is
``llmvcr.wire.anthropic``'s."""

from ..wire import anthropic as wire
from .http import StainlessProvider

provider = StainlessProvider.speaking(wire.FORMAT, "anthropic", client_names=("Anthropic",))
