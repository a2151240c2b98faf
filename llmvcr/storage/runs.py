"""Which recording run this process belongs to: ``record_mode="all"`` replaces a cassette's entries
once per run, and every later writer of the same run (an xdist worker) adds to them."""

from __future__ import annotations

import os

__all__ = ["run_id", "set_run"]

_run = os.urandom(16).hex()  # outside pytest and without LLMVCR_RUN_ID, a run is this process


def run_id() -> str:
    """The run this process records for: ``LLMVCR_RUN_ID``, else the one :func:`set_run` set."""
    return os.environ.get("LLMVCR_RUN_ID") or _run


def set_run(new: str) -> str:
    """Start recording for run ``new`` (the pytest plugin does, once per test session); the previous id."""
    global _run
    previous, _run = _run, new
    return previous
