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
    AnswerShapeError,
    CassetteFormatError,
    CassetteNotFoundError,
    CassetteWriteError,
    LLMVCRError,
    NetworkBlockedError,
    ReplayDivergence,
    ReplayDivergenceWarning,
    SDKChangedError,
    SDKChangedWarning,
    TruncatedStreamError,
)
from .storage import formats as _formats

_LAZY = {
    "use_cassette": "api",
    "recording": "api",
    "configure": "options",
    "Options": "options",
    "Cassette": "cassette",
    "Entry": "cassette",
    "Request": "cassette",
    "Response": "cassette",
    "load_cassette": "api",  # imported there with the in-place reader of other recorders' files
    "save_cassette": "storage.writer",
    "register_matcher": "matching.rules",
    "placeholder": "matching.rules",
    "register_provider": "providers",
    "Provider": "providers",
    "patch_function": "providers.function",
    "tool": "providers.tool",
    "create_recording_adapter": "clients",
    "create_replay_adapter": "clients",
    "inject_error": "faults",
}
_CONVERTERS = _formats.converters()  # from_vcrpy, to_agentskit...: the format table's, by their names

__all__ = [
    "AnswerShapeError",
    "Cassette",
    "CassetteFormatError",
    "CassetteNotFoundError",
    "CassetteWriteError",
    "Entry",
    "LLMVCRError",
    "NetworkBlockedError",
    "Options",
    "Provider",
    "ReplayDivergence",
    "ReplayDivergenceWarning",
    "Request",
    "Response",
    "SDKChangedError",
    "SDKChangedWarning",
    "TruncatedStreamError",
    "configure",
    "create_recording_adapter",
    "create_replay_adapter",
    "inject_error",
    "load_cassette",
    "patch_function",
    "placeholder",
    "recording",
    "register_matcher",
    "register_provider",
    "save_cassette",
    "tool",
    "use_cassette",
    *_CONVERTERS,
]


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from .cassette.schema import LLMVCR_VERSION

        return LLMVCR_VERSION
    module = _LAZY.get(name)
    if module is not None:
        value = getattr(importlib.import_module(f".{module}", __name__), name)
    elif name in _CONVERTERS:
        value = _formats.resolve(_CONVERTERS[name])
    else:
        raise AttributeError(f"module 'llmvcr' has no attribute {name!r}")
    globals()[name] = value
    return value


if TYPE_CHECKING:  # for type checkers, each name as __getattr__ finds it (a test holds _CONVERTERS to this)
    from .api import load_cassette as load_cassette
    from .api import recording as recording
    from .api import use_cassette as use_cassette
    from .cassette import Cassette as Cassette
    from .cassette import Entry as Entry
    from .cassette import Request as Request
    from .cassette import Response as Response
    from .clients import create_recording_adapter as create_recording_adapter
    from .clients import create_replay_adapter as create_replay_adapter
    from .convert.agentskit import from_agentskit as from_agentskit
    from .convert.agentskit import to_agentskit as to_agentskit
    from .convert.otel import from_otel as from_otel
    from .convert.regista import to_regista_trace as to_regista_trace
    from .convert.regista_trace import from_regista_trace as from_regista_trace
    from .convert.vcrpy import from_vcrpy as from_vcrpy
    from .faults import inject_error as inject_error
    from .matching import placeholder as placeholder
    from .matching import register_matcher as register_matcher
    from .options import Options as Options
    from .options import configure as configure
    from .providers import Provider as Provider
    from .providers import register_provider as register_provider
    from .providers.function import patch_function as patch_function
    from .providers.tool import tool as tool
    from .storage.writer import save_cassette as save_cassette
