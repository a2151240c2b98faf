"""A pytest fixture that runs ``llmvcr serve`` for a test that starts a process of its own.

Load it from a ``conftest.py``::

    pytest_plugins = ["llmvcr.proxy.fixture"]

    def test_node_app(llmvcr_proxy):
        env = {**os.environ, **llmvcr_proxy.env(cassette="node-app")}
        subprocess.run(["node", "app.js"], env=env, check=True)

The proxy serves the cassettes folder beside the test file (where the marker keeps them), honours
``--llmvcr-record-mode`` and ``CI`` as the marker does, and closes every cassette (writing it) when
the test ends. Override ``llmvcr_proxy_upstreams`` to send recorded calls somewhere else than the
real APIs (a local emulator).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ..options import settings
from .server import ProxyServer


@pytest.fixture
def llmvcr_proxy_upstreams() -> dict[str, str]:
    """Provider name -> base URL recorded calls go to (default: none given, so the real APIs)."""
    return {}


@pytest.fixture
def llmvcr_proxy(
    request: pytest.FixtureRequest, llmvcr_proxy_upstreams: dict[str, str]
) -> Iterator[ProxyServer]:
    """A running proxy on a free loopback port; ``.url`` and ``.env(cassette=...)`` point SDKs at it."""
    folder = Path(str(request.node.path)).parent / "cassettes"
    server = ProxyServer(folder, upstreams=llmvcr_proxy_upstreams, record_mode=settings.record_mode)
    server.start()
    try:
        yield server
    finally:
        server.stop()
