"""The mcp SDK's private names llmvcr uses (``providers._internals``): a release that renames a name
llmvcr cannot do without makes every MCP client session opened inside a cassette raise one clear
``SDKChangedError`` (never a session recorded by halves or a replay that starts the server); one with
a fallback is said once, and sessions record as before."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp.client.stdio")  # (tests/mcp is on the path too: a bare "mcp" is found)

from sdk_release import RENAMES

from llmvcr.providers import _internals

HERE = Path(__file__).resolve().parent
SCRIPT = """
import json, sys
from sdk_release import RENAMES, Release
release = Release(RENAMES["mcp"][sys.argv[1]])
sys.meta_path.insert(0, release)
import anyio
import llmvcr
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.sse import sse_client

async def stdio():
    params = StdioServerParameters(command=sys.executable, args=[sys.argv[3]])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()

async def outside():
    await stdio()
    return "ok"

def attempt(fn):
    try:
        return ["ok", anyio.run(fn)]
    except BaseException as err:
        while getattr(err, "exceptions", None):
            err = err.exceptions[0]
        return [type(err).__name__, str(err)]

import warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    with llmvcr.use_cassette(sys.argv[2]):
        inside = attempt(stdio)
said = [str(w.message) for w in caught if w.category.__name__ == "SDKChangedWarning"]
print(json.dumps({"inside": inside, "outside": attempt(outside), "rewritten": release.rewritten, "said": said}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(RENAMES["mcp"]))
def test_a_release_renaming_an_mcp_name_gives_the_declared_outcome(key: str, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parents[1]), str(HERE.parent)])}
    cassette = tmp_path / "c.yaml"
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, key, str(cassette), str(HERE / "clock_server.py")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["rewritten"], "the simulated release changed nothing"
    assert result["outside"] == ["ok", "ok"]  # outside every cassette the SDK works as it always did
    kind, message = result["inside"]
    if _internals.declared(key).outcome == _internals.FALLBACK:  # said once; stdio records as before
        assert kind == "ok" and len(result["said"]) == 1 and _internals.where(key) in result["said"][0]
        assert "initialize" in cassette.read_text()
        return
    assert kind == "SDKChangedError"
    assert "mcp 2." in message and _internals.where(key) in message and "ClientSession" in message
    assert not cassette.exists() or "initialize" not in cassette.read_text()
