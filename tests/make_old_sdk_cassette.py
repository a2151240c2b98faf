"""Record ``tests/cassettes/sdk-oldest.yaml`` with the oldest supported SDKs, for the old->new replay test.

The cassette is committed; ``tests/providers/test_sdk_versions.py`` replays it with whatever ``anthropic`` and
``openai`` are installed (normally the newest) and compares the result with a live run of the same
scenario against the loopback server. To re-record it, activate a throw-away virtual environment
holding only ``anthropic==2.10.0 openai==3.51.0 wrapt orjson pyyaml`` (the lower ends of the range
in ``pyproject.toml``), then from the project root::

    PYTHONPATH=.:tests python tests/make_old_sdk_cassette.py
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pydantic

CASSETTE = Path(__file__).resolve().parent / "cassettes" / "sdk-oldest.yaml"
ANTHROPIC_KEY = "sk-ant-api03-SENTINEL-old-sdk-0000000000"
OPENAI_KEY = "sk-proj-SENTINEL-old-sdk-00000000000000"
AZURE_KEY = "SENTINEL-azure-old-sdk-0000"
USER = [{"role": "user", "content": "hello from an old SDK"}]
WEATHER = [{"role": "user", "content": "What is the weather in Paris?"}]
A_TOOL = {
    "name": "get_weather",
    "description": "Weather for a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
O_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


class Pet(pydantic.BaseModel):
    name: str
    age: int


def clients(url: str) -> tuple[Any, Any, Any]:
    import anthropic
    import openai

    a = anthropic.Anthropic(api_key=ANTHROPIC_KEY, base_url=url, max_retries=0)
    o = openai.OpenAI(api_key=OPENAI_KEY, base_url=url + "/v1", max_retries=0)
    az = openai.AzureOpenAI(
        api_key=AZURE_KEY, azure_endpoint=url, api_version="2024-10-21", azure_deployment="dep", max_retries=0
    )
    return a, o, az


def scenario(a: Any, o: Any, az: Any) -> list[Any]:
    """Every main call shape once; returns what the caller saw, as plain data."""
    import anthropic
    import openai

    out: list[Any] = []
    m = a.messages.create(model="claude-test", max_tokens=64, messages=USER)
    assert isinstance(m, anthropic.types.Message)
    out.append(m.model_dump())
    out.append(
        [
            e.model_dump()
            for e in a.messages.create(model="claude-test", max_tokens=64, messages=USER, stream=True)
        ]
    )
    first = a.messages.create(model="claude-test", max_tokens=64, messages=WEATHER, tools=[A_TOOL])
    use = next(b for b in first.content if b.type == "tool_use")
    follow = [
        *WEATHER,
        {"role": "assistant", "content": [b.model_dump() for b in first.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "18C"}]},
    ]
    out.append(
        [
            first.model_dump(),
            a.messages.create(
                model="claude-test", max_tokens=64, messages=follow, tools=[A_TOOL]
            ).model_dump(),
        ]
    )
    with a.messages.stream(model="claude-test", max_tokens=64, messages=USER) as stream:
        out.append(["".join(stream.text_stream), stream.get_final_message().model_dump()])
    out.append(a.messages.count_tokens(model="claude-test", messages=USER).model_dump())
    out.append(a.beta.messages.create(model="claude-test", max_tokens=64, messages=USER).model_dump())
    try:
        a.messages.create(
            model="claude-test", max_tokens=64, messages=[{"role": "user", "content": "__status_429__"}]
        )
    except anthropic.RateLimitError as err:
        out.append(
            ["anthropic.RateLimitError", err.status_code, err.body, err.response.headers.get("retry-after")]
        )

    c = o.chat.completions.create(model="gpt-test", messages=USER)
    assert isinstance(c, openai.types.chat.ChatCompletion)
    out.append(c.model_dump())
    out.append(
        [
            x.model_dump()
            for x in o.chat.completions.create(
                model="gpt-test", messages=USER, stream=True, stream_options={"include_usage": True}
            )
        ]
    )
    call = o.chat.completions.create(model="gpt-test", messages=WEATHER, tools=[O_TOOL])
    tool_call = call.choices[0].message.tool_calls[0]
    follow_o = [
        *WEATHER,
        call.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": tool_call.id, "content": "18C"},
    ]
    out.append(
        [
            call.model_dump(),
            o.chat.completions.create(model="gpt-test", messages=follow_o, tools=[O_TOOL]).model_dump(),
        ]
    )
    parsed = o.chat.completions.parse(model="gpt-test", messages=USER, response_format=Pet)
    out.append(parsed.choices[0].message.parsed.model_dump())
    with o.chat.completions.stream(model="gpt-test", messages=USER) as chat_stream:
        out.append(
            [
                [e.delta for e in chat_stream if e.type == "content.delta"],
                chat_stream.get_final_completion().choices[0].message.content,
            ]
        )
    out.append(o.responses.create(model="gpt-test", input="hello responses").model_dump())
    out.append(
        [e.model_dump() for e in o.responses.create(model="gpt-test", input="hello stream", stream=True)]
    )
    with o.responses.stream(model="gpt-test", input="hello helper") as response_stream:
        out.append([[e.type for e in response_stream], response_stream.get_final_response().output_text])
    out.append(o.embeddings.create(model="text-embedding-test", input=["one", "two"]).model_dump())
    try:
        o.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": "__status_429__"}])
    except openai.RateLimitError as err:
        out.append(["openai.RateLimitError", err.status_code, err.body])
    out.append(az.chat.completions.create(model="gpt-test", messages=USER).model_dump())
    return out


def main() -> None:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from llm_server import LLMServer

    import llmvcr

    server = LLMServer().start()
    try:
        CASSETTE.unlink(missing_ok=True)
        with llmvcr.recording(os.fspath(CASSETTE), record_mode="all", seed="sdk-oldest-v1") as cassette:
            scenario(*clients(server.url))
        cassette.metadata["recorded_against"] = "llmvcr test suite loopback server (tests/llm_server.py)"
        cassette.metadata["recorded_by"] = "tests/make_old_sdk_cassette.py"
        llmvcr.save_cassette(CASSETTE, cassette)
        print(f"{len(cassette)} entries, recorded_with {cassette.recorded_with}")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
