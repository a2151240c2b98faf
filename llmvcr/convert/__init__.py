"""Converters between llmvcr cassettes and other formats, and the provider-neutral view they share.

The view is regista's message vocabulary (the dumps of its ``ModelRequest`` and ``ModelResponse``):
a request is ``{model, system, messages, tools, max_tokens, params}``, a message is
``{role, content: [block]}`` with ``text``, ``thinking``, ``tool_use`` and ``tool_result`` blocks,
a response is ``{message, stop_reason, usage, model, request_id}``. Anthropic Messages, OpenAI Chat
Completions and OpenAI Responses entries, plain or streamed, read into it (streams accumulated into
their final message) with :func:`read_call`; :func:`anthropic_wire` and :func:`openai_wire` write a
neutral request back as the SDK would send it.

>>> call = read_call(cassette.entry(0), 0)
>>> call.request["messages"][0]
{'role': 'user', 'content': [{'type': 'text', 'text': 'What is the weather in Paris?'}]}

Nothing here imports an SDK.
"""

from __future__ import annotations

from ..errors import ConversionWarning
from .neutral import (
    DEFAULT_MAX_TOKENS,
    FINAL_STOP_REASONS,
    JSON,
    OPENAI_FINISH,
    OPENAI_STOP,
    STOP_REASONS,
    Call,
    api_of,
    api_stop_reason,
    digest,
    parse_arguments,
    parse_sse,
    text_block,
    text_of,
    tool_use_block,
    usage,
)
from .requests import anthropic_block, anthropic_request, chat_request, responses_request
from .responses import (
    accumulate_anthropic,
    accumulate_chat,
    error_message,
    model_calls,
    read_call,
    stream_finished,
)
from .to_wire import anthropic_body, anthropic_events, anthropic_wire, chat_body, chat_events, openai_wire

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "FINAL_STOP_REASONS",
    "JSON",
    "OPENAI_FINISH",
    "OPENAI_STOP",
    "STOP_REASONS",
    "Call",
    "ConversionWarning",
    "accumulate_anthropic",
    "accumulate_chat",
    "anthropic_block",
    "anthropic_body",
    "anthropic_events",
    "anthropic_request",
    "anthropic_wire",
    "api_of",
    "api_stop_reason",
    "chat_body",
    "chat_events",
    "chat_request",
    "digest",
    "error_message",
    "model_calls",
    "openai_wire",
    "parse_arguments",
    "parse_sse",
    "read_call",
    "responses_request",
    "stream_finished",
    "text_block",
    "text_of",
    "tool_use_block",
    "usage",
]
