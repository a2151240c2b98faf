"""Canonical JSON, the request hash, matchers, ignore paths and placeholders (see ``rules``).

The package keeps the names ``llmvcr.matching`` always had; ``as_recorded`` matches as the
recorder did, ``diff`` explains a divergence, ``jsonpath`` and ``multipart`` read bodies.
"""

from .rules import (
    BUILTIN_MATCHERS,
    DEFAULT_FINGERPRINTER,
    DEFAULT_MATCH_ON,
    Fingerprinter,
    MatcherFn,
    MatcherSpec,
    Normalised,
    Placeholder,
    canonical_json,
    default_request_hash,
    hash_bytes,
    last_user_message,
    placeholder,
    register_matcher,
)

__all__ = [
    "BUILTIN_MATCHERS",
    "DEFAULT_FINGERPRINTER",
    "DEFAULT_MATCH_ON",
    "Fingerprinter",
    "MatcherFn",
    "MatcherSpec",
    "Normalised",
    "Placeholder",
    "canonical_json",
    "default_request_hash",
    "hash_bytes",
    "last_user_message",
    "placeholder",
    "register_matcher",
]
