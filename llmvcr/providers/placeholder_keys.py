"""Placeholder API keys for a replay-only run, so a suite replays with no key in the environment.

The SDKs refuse to build a client without a key (anthropic's "Could not resolve authentication
method", openai's "Missing credentials"), before any request a cassette could answer. Where every
call replays (``CI`` set, no record mode given), llmvcr sets each unset key variable to
:data:`PLACEHOLDER`. A placeholder never reaches a real API: a call about to be recorded with it
in its headers or URL is refused with :class:`MissingKeyError`, which says which variable to set.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from .. import wire
from ..errors import LLMVCRError

PLACEHOLDER = "llmvcr-replay-only-no-key"

# (variable, other variables the SDK reads instead): one placeholder per SDK, only where none is set
KEY_VARIABLES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ANTHROPIC_API_KEY", ("ANTHROPIC_AUTH_TOKEN",)),
    ("OPENAI_API_KEY", ()),
    ("GEMINI_API_KEY", ("GOOGLE_API_KEY",)),
)

# the SDKs' own messages when a client is built with no key (Python and Node)
AUTH_ERRORS = re.compile(
    r"Could not resolve authentication method|Missing credentials|api_key client option must be set"
    r"|OPENAI_API_KEY environment variable|Missing key inputs argument|API key must be set",
    re.IGNORECASE,
)
AUTH_HINT = (
    "llmvcr: the SDK found no API key. Replay needs none: llmvcr sets a placeholder for "
    + ", ".join(v for v, _ in KEY_VARIABLES)
    + " when CI is set and no record mode is given; for another SDK, set its key variable to any "
    "value (see docs/ci.md)"
)

RECORD_HINT = (
    "llmvcr: the SDK found no API key. To record, set the provider's key (ANTHROPIC_API_KEY=..., "
    "OPENAI_API_KEY=...); to replay committed cassettes with none, run with CI=true"
)


class MissingKeyError(LLMVCRError):
    """A call about to be recorded carries llmvcr's placeholder key, not a real one."""


def missing(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The key variables to set to the placeholder: those for which no variable is set."""
    env = os.environ if environ is None else environ
    return {
        variable: PLACEHOLDER
        for variable, others in KEY_VARIABLES
        if not env.get(variable) and not any(env.get(o) for o in others)
    }


def set_missing() -> dict[str, str]:
    """Set the missing key variables in this process's environment; what was set, for :func:`unset`."""
    added = missing()
    os.environ.update(added)
    return added


def unset(added: Mapping[str, str]) -> None:
    """Remove the placeholders :func:`set_missing` set (a variable since changed is left alone)."""
    for variable in added:
        if os.environ.get(variable) == PLACEHOLDER:
            del os.environ[variable]


def carries_placeholder(headers: Any, url: str = "") -> bool:
    """The request's headers (anything with ``items()``) or URL hold the placeholder key."""
    if PLACEHOLDER in url:
        return True
    items = headers.items() if hasattr(headers, "items") else headers or ()
    for _, value in items:
        text = value.decode("latin-1") if isinstance(value, bytes) else str(value)
        if PLACEHOLDER in text:
            return True
    return False


def refuse_recording(provider: str, target: str) -> MissingKeyError:
    """The error for a call to ``target`` that would be recorded with the placeholder key."""
    fmt = wire.lookup(provider)
    variable = (
        fmt.api_key.env
        if fmt is not None and fmt.api_key is not None
        else "the provider's API key variable (" + ", ".join(v for v, _ in KEY_VARIABLES) + ")"
    )
    return MissingKeyError(
        f"llmvcr: {target} would be recorded, but it carries llmvcr's placeholder key "
        f"({PLACEHOLDER!r}, set because no key was) and was not sent. Set a real key to record: "
        f"{variable}=... ; or replay only: leave CI set and give no record mode"
    )
