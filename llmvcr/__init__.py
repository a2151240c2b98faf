"""llmvcr: record LLM SDK calls into cassettes once, replay them bit-for-bit forever after.

>>> import llmvcr
>>> @llmvcr.use_cassette("bug-427")
... def test_summary(): ...

Public names are imported on first use, so ``import llmvcr`` stays cheap and imports no SDK.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .errors import (
    CassetteFormatError,
    CassetteNotFoundError,
    LLMVCRError,
    NetworkBlockedError,
    ReplayDivergence,
    ReplayDivergenceWarning,
)

__version__ = "0.1.0"

_LAZY = {
    "use_cassette": "session",
    "recording": "session",
    "configure": "session",
    "Options": "session",
    "Cassette": "cassette",
    "Entry": "cassette",
    "Request": "cassette",
    "Response": "cassette",
    "load_cassette": "storage",
    "save_cassette": "storage",
    "register_matcher": "matching",
    "placeholder": "matching",
    "register_provider": "providers",
    "Provider": "providers",
    "patch_function": "providers.function",
    "create_recording_adapter": "adapters",
    "create_replay_adapter": "adapters",
    "inject_error": "faults",
    "to_regista_trace": "convert.regista",
    "from_regista_trace": "convert.regista",
    "to_agentskit": "convert.agentskit",
    "from_agentskit": "convert.agentskit",
    "from_vcrpy": "convert.vcrpy",
}

__all__ = [
    "CassetteFormatError",
    "CassetteNotFoundError",
    "LLMVCRError",
    "NetworkBlockedError",
    "ReplayDivergence",
    "ReplayDivergenceWarning",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'llmvcr' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from .cassette import Cassette, Entry, Request, Response
    from .matching import placeholder, register_matcher
    from .providers import Provider, register_provider
    from .session import Options, configure, recording, use_cassette
    from .storage import load_cassette, save_cassette
