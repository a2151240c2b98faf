"""Fixtures of the frameworks suite (the harness is ``roundtrip.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from llm_server import LLMServer
from roundtrip import Roundtrip


@pytest.fixture
def roundtrip(server: LLMServer, cassette_dir: Path) -> Roundtrip:
    return Roundtrip(server, cassette_dir)
