"""The loopback LLM server and ``llmvcr serve`` for the Node test (``proxy.test.ts``).

Prints ``{"proxy": URL}`` once both listen. On the line ``replay`` from stdin it closes every
cassette (written), stops the LLM server and makes the proxy replay only, then prints how many
requests the server saw. On end of input it stops.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(TESTS), str(TESTS.parent)]

from llm_server import LLMServer  # noqa: E402 - found through the path set above

from llmvcr.proxy import ProxyServer  # noqa: E402


def main() -> None:
    emulator = LLMServer().start()
    upstreams = {name: emulator.url for name in ("anthropic", "openai", "google")}
    # recording is what this phase is for, so it records even where CI is set (CI replays only)
    proxy = ProxyServer(sys.argv[1], upstreams=upstreams, record_mode="once").start()
    print(json.dumps({"proxy": proxy.url}), flush=True)
    for line in sys.stdin:
        if line.strip() == "replay":
            proxy.app.cassettes.close_all()
            proxy.app.cassettes.record_mode = "none"
            seen = emulator.request_count
            emulator.stop()
            print(json.dumps({"requests": seen}), flush=True)
    proxy.stop()
    emulator.stop()


if __name__ == "__main__":
    main()
