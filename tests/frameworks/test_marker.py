"""No user code beyond the marker: a user's test module driving litellm (its own httpx client) and
google-genai's ``client.aio`` (aiohttp), recorded in one run, replayed in the next with the network
blocked by the plugin and the server untouched."""

from __future__ import annotations

import pytest
from llm_server import LLMServer
from roundtrip import SENTINEL

USER_TESTS = f'''
import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm
import pytest
from google import genai
from google.genai import types

URL = os.environ["LLM_SERVER_URL"]


@pytest.mark.llmvcr
def test_litellm_anthropic():
    reply = litellm.completion(
        model="anthropic/claude-sonnet-4-5", api_base=URL, api_key="{SENTINEL}",
        messages=[{{"role": "user", "content": "hi"}}],
    )
    assert reply.choices[0].message.content == "Echo: hi"


@pytest.mark.llmvcr
async def test_genai_async():
    client = genai.Client(api_key="{SENTINEL}", http_options=types.HttpOptions(base_url=URL))
    chunks = [c.text async for c in await client.aio.models.generate_content_stream(model="m", contents="yo")]
    assert "".join(chunks) == "Echo: yo"
'''


def test_marker_records_then_replays_with_the_network_blocked(
    pytester: pytest.Pytester, server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_SERVER_URL", server.url)
    pytester.makepyfile(test_user=USER_TESTS)
    pytester.makeini("[pytest]\nasyncio_mode = auto\n")
    before = server.request_count
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "--llmvcr-no-block-network").assert_outcomes(
        passed=2
    )
    recorded = server.request_count
    assert recorded == before + 2
    cassettes = list(pytester.path.rglob("*.yaml"))
    assert len(cassettes) == 2 and all(SENTINEL not in p.read_text() for p in cassettes)
    replay = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--llmvcr-record-mode=none", "--llmvcr-block-network"
    )
    replay.assert_outcomes(passed=2)
    assert server.request_count == recorded
