"""Re-record the example cassettes in ``cassettes/`` against the loopback server.

Run ``python tests/make_example_cassettes.py`` from the project root.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))

from llm_server import LLMServer

import llmvcr
from llmvcr import demo

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    import anthropic
    import openai

    server = LLMServer().start()
    real_anthropic, real_openai = anthropic.Anthropic, openai.OpenAI

    def a_factory(**kw: object) -> object:
        return real_anthropic(api_key="sk-ant-example", base_url=server.url, max_retries=0)

    def o_factory(**kw: object) -> object:
        return real_openai(api_key="sk-example-0000000000000000", base_url=server.url + "/v1", max_retries=0)

    try:
        anthropic.Anthropic, openai.OpenAI = a_factory, o_factory  # type: ignore[assignment,misc]
        for name, play in (
            ("demo-anthropic", demo.conversation_anthropic),
            ("demo-openai", demo.conversation_openai),
        ):
            path = ROOT / "cassettes" / f"{name}.yaml"
            path.unlink(missing_ok=True)
            with llmvcr.recording(os.fspath(path), record_mode="all", seed=f"{name}-v1") as cassette:
                play(lambda role, text: print(f"{role}: {text}"))
            cassette.metadata["recorded_against"] = "llmvcr test suite loopback server (tests/llm_server.py)"
            llmvcr.save_cassette(path, cassette)
    finally:
        anthropic.Anthropic, openai.OpenAI = real_anthropic, real_openai  # type: ignore[misc]
        server.stop()


if __name__ == "__main__":
    main()
