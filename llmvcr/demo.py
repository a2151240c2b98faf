"""Replay the example cassettes through the real SDKs and print the conversations.

Run ``python -m llmvcr.demo``: no API key, no network (every socket connection is refused
while it runs, to prove it). The cassettes were recorded against the test suite's loopback server.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from typing import Any

import llmvcr

DUMMY_KEY = "demo-no-key-needed"


def _cassette_dir() -> Path:
    """The demo cassettes inside the package (package data; a link to ``cassettes/`` in a checkout)."""
    return Path(__file__).resolve().parent / "cassettes"


def _refuse(self: socket.socket, address: Any) -> None:
    raise OSError(f"llmvcr demo: network access attempted ({address!r}) - replay must be offline")


def conversation_anthropic(say: Any) -> None:
    import anthropic

    client = anthropic.Anthropic(api_key=DUMMY_KEY, base_url="http://llm.invalid", max_retries=0)
    question: list[Any] = [{"role": "user", "content": "What is the weather in Paris?"}]
    tool: Any = {
        "name": "get_weather",
        "description": "Weather for a city",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }
    say("user", question[0]["content"])
    first = client.messages.create(model="claude-sonnet-4-5", max_tokens=256, messages=question, tools=[tool])
    use = next(b for b in first.content if b.type == "tool_use")
    say("assistant", f"[tool_use {use.name}({use.input})]")
    say("tool", "18C and sunny")
    follow = [
        *question,
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "18C and sunny"}],
        },
    ]
    with client.messages.stream(
        model="claude-sonnet-4-5", max_tokens=256, messages=follow, tools=[tool]
    ) as stream:
        text = "".join(stream.text_stream)
    say("assistant", text + "   (streamed)")


def conversation_openai(say: Any) -> None:
    import openai

    client = openai.OpenAI(api_key=DUMMY_KEY, base_url="http://llm.invalid/v1", max_retries=0)
    messages: list[Any] = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Say hello to llmvcr"},
    ]
    say("user", messages[1]["content"])
    reply = client.chat.completions.create(model="gpt-5-mini", messages=messages)
    say("assistant", reply.choices[0].message.content or "")
    say("user", "Now stream it")
    chunks = client.chat.completions.create(
        model="gpt-5-mini", messages=[{"role": "user", "content": "Now stream it"}], stream=True
    )
    say("assistant", "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) + "   (streamed)")


def main() -> int:
    directory = _cassette_dir()
    original_connect = socket.socket.connect
    setattr(socket.socket, "connect", _refuse)  # noqa: B010 - a plain assignment trips the type checker
    try:
        for name, play in (("demo-anthropic", conversation_anthropic), ("demo-openai", conversation_openai)):
            path = directory / f"{name}.yaml"
            print(f"== {path.name} (replayed offline through the real SDK)")
            with llmvcr.use_cassette(os.fspath(path), record_mode="none") as cassette:
                play(lambda role, text: print(f"  {role:>9}: {text}"))
            print(
                f"   {len(cassette.entries)} entries, seed={cassette.seed!r}, "
                f"recorded_with={cassette.recorded_with}"
            )
    finally:
        setattr(socket.socket, "connect", original_connect)  # noqa: B010
    return 0


if __name__ == "__main__":
    sys.exit(main())
