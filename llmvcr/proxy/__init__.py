"""``llmvcr serve``: the same cassettes for every language, through a local HTTP proxy.

Any SDK whose base URL points at the proxy records and replays with no code change: a call comes
in as HTTP, the cassette's ``Session.decide`` answers it exactly as it answers an in-process call,
and the recorded answer is served (or the call forwarded upstream and captured). The cassettes,
redaction, matchers, record modes and divergence messages are the in-process ones.

>>> from llmvcr.proxy import ProxyServer
>>> with ProxyServer("cassettes") as proxy:
...     subprocess.run(["node", "--test"], env={**os.environ, **proxy.env()})

Needs the ``proxy`` extra (uvicorn and httpx): ``pip install -e 'path/to/llmvcr[proxy]'`` from a checkout.
"""

from .app import Proxy
from .server import ProxyServer, instructions

__all__ = ["Proxy", "ProxyServer", "instructions"]
