"""The providers llmvcr describes out of the box, one line each: a new HTTP provider's
``wire/<provider>.py`` is added here (and its SDK adapter in ``providers/``)."""

from __future__ import annotations

from . import anthropic, google, openai
from .format import WireFormat

BUILT_IN: tuple[WireFormat, ...] = (
    anthropic.FORMAT,
    openai.FORMAT,
    google.FORMAT,
)
