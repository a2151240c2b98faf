"""The calls every contender serves: N distinct requests, their recorded answers, two long streams.

Everything here is deterministic, so the floor, llmvcr and vcrpy answer exactly the same
requests with exactly the same response bytes. Responses are shaped like the providers' real
ones (ids, usage, a few hundred characters of text) so the SDK's parsing cost is realistic.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

ANTHROPIC_KEY = "bench-anthropic-key-0123456789"  # a placeholder; no call leaves the process
OPENAI_KEY = "bench-openai-key-0123456789"
ANTHROPIC_MODEL = "claude-sonnet-4-5"
OPENAI_MODEL = "gpt-4o-mini"
STREAM_EVENTS = 500
_FILLER = (
    "The quarterly report covers revenue, churn and the new onboarding flow; "
    "summarise the three points a reviewer should check first and say why."
)


@dataclass(frozen=True)
class Call:
    """One SDK call and the response the server would give it."""

    sdk: str  # "anthropic" or "openai"
    kwargs: dict[str, Any]
    headers: dict[str, str]
    body: bytes = b""  # a JSON response, or
    chunks: tuple[bytes, ...] = ()  # the server-sent events of a stream, one chunk each

    @property
    def streamed(self) -> bool:
        return bool(self.chunks)


@dataclass
class Clients:
    """An anthropic and an openai client sharing one httpx2 client, and how to make each call."""

    anthropic: Any
    openai: Any
    _closers: list[Callable[[], None]] = field(default_factory=list)

    def call(self, call: Call) -> Any:
        if call.sdk == "anthropic":
            if call.streamed:
                with self.anthropic.messages.stream(**call.kwargs) as stream:
                    for _ in stream:
                        pass
                    return stream.get_final_message()
            return self.anthropic.messages.create(**call.kwargs)
        if call.streamed:
            return [chunk for chunk in self.openai.chat.completions.create(stream=True, **call.kwargs)]
        return self.openai.chat.completions.create(**call.kwargs)

    def run(self, calls: list[Call]) -> list[float]:
        """Make ``calls`` one after another; returns each one's duration in seconds."""
        clock = time.perf_counter
        durations = []
        for call in calls:
            start = clock()
            self.call(call)
            durations.append(clock() - start)
        return durations

    def close(self) -> None:
        for closer in self._closers:
            closer()


def make_clients(transport: Any = None, base_url: str | None = None) -> Clients:
    """SDK clients over ``transport`` (an httpx2 transport), or over the network to ``base_url``."""
    import anthropic
    import httpx2
    import openai

    http = httpx2.Client(transport=transport) if transport is not None else None
    a_kwargs: dict[str, Any] = {"api_key": ANTHROPIC_KEY, "max_retries": 0}
    o_kwargs: dict[str, Any] = {"api_key": OPENAI_KEY, "max_retries": 0}
    if http is not None:
        a_kwargs["http_client"] = http
        o_kwargs["http_client"] = http
    if base_url is not None:
        a_kwargs["base_url"] = base_url
        o_kwargs["base_url"] = base_url + "/v1"
    clients = Clients(anthropic.Anthropic(**a_kwargs), openai.OpenAI(**o_kwargs))
    clients._closers.append(clients.anthropic.close)
    clients._closers.append(clients.openai.close)
    return clients


def _prompt(i: int) -> str:
    return f"Ticket #{i:06d}. {_FILLER} Reply in {(i % 5) + 2} sentences."


def _answer(i: int) -> str:
    return (
        f"For ticket {i:06d}: first, check that revenue figures reconcile with the ledger; "
        "second, compare churn with the previous quarter and explain any jump; "
        "third, walk through the onboarding flow on a fresh account and note every step that "
        "needs a manual fix. Those three cover most of what goes wrong in such reports."
    )


def anthropic_call(i: int) -> Call:
    kwargs = {
        "model": ANTHROPIC_MODEL,
        "max_tokens": 400,
        "system": "You are a careful reviewer.",
        "messages": [{"role": "user", "content": _prompt(i)}],
    }
    body = {
        "id": f"msg_bench{i:012d}",
        "type": "message",
        "role": "assistant",
        "model": ANTHROPIC_MODEL,
        "content": [{"type": "text", "text": _answer(i)}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 48,
            "output_tokens": 71,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }
    headers = {"content-type": "application/json", "request-id": f"req_bench{i:012d}"}
    return Call("anthropic", kwargs, headers, body=orjson.dumps(body))


def openai_call(i: int) -> Call:
    kwargs = {
        "model": OPENAI_MODEL,
        "max_tokens": 400,
        "messages": [
            {"role": "system", "content": "You are a careful reviewer."},
            {"role": "user", "content": _prompt(i)},
        ],
    }
    body = {
        "id": f"chatcmpl-bench{i:012d}",
        "object": "chat.completion",
        "created": 1_700_000_000 + i,
        "model": OPENAI_MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": _answer(i), "refusal": None, "annotations": []},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 48, "completion_tokens": 71, "total_tokens": 119},
        "system_fingerprint": "fp_bench",
    }
    headers = {"content-type": "application/json", "x-request-id": f"req_bench{i:012d}"}
    return Call("openai", kwargs, headers, body=orjson.dumps(body))


def calls(n: int) -> list[Call]:
    """``n`` distinct calls, alternating ``messages.create`` and ``chat.completions.create``."""
    return [anthropic_call(i) if i % 2 == 0 else openai_call(i) for i in range(n)]


def _sse(event: str | None, data: Any) -> bytes:
    text = data if isinstance(data, str) else orjson.dumps(data).decode()
    return (f"event: {event}\n" if event else "").encode() + f"data: {text}\n\n".encode()


def _words(n: int) -> Iterator[str]:
    words = _answer(0).split(" ")
    for i in range(n):
        yield (" " if i else "") + words[i % len(words)]


def anthropic_stream() -> Call:
    """``messages.stream()`` answered by 500 events (start, 495 text deltas, stop events)."""
    deltas = STREAM_EVENTS - 5
    message: dict[str, Any] = {
        "id": "msg_benchstream",
        "type": "message",
        "role": "assistant",
        "model": ANTHROPIC_MODEL,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 48, "output_tokens": 1},
    }
    chunks = [
        _sse("message_start", {"type": "message_start", "message": message}),
        _sse(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
    ]
    chunks += [
        _sse(
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": w}},
        )
        for w in _words(deltas)
    ]
    chunks += [
        _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": deltas},
            },
        ),
        _sse("message_stop", {"type": "message_stop"}),
    ]
    kwargs = {
        "model": ANTHROPIC_MODEL,
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": "Stream a long answer. " + _prompt(0)}],
    }
    headers = {"content-type": "text/event-stream", "request-id": "req_benchstream"}
    return Call("anthropic", kwargs, headers, chunks=tuple(chunks))


def openai_stream() -> Call:
    """A chat completion with ``stream=True`` answered by 500 events (498 deltas, finish, [DONE])."""
    deltas = STREAM_EVENTS - 2

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _sse(
            None,
            {
                "id": "chatcmpl-benchstream",
                "object": "chat.completion.chunk",
                "created": 1_700_000_000,
                "model": OPENAI_MODEL,
                "system_fingerprint": "fp_bench",
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
            },
        )

    chunks = [
        chunk({"role": "assistant", "content": w} if i == 0 else {"content": w})
        for i, w in enumerate(_words(deltas))
    ]
    chunks += [chunk({}, "stop"), _sse(None, "[DONE]")]
    kwargs = {
        "model": OPENAI_MODEL,
        "messages": [{"role": "user", "content": "Stream a long answer. " + _prompt(0)}],
    }
    headers = {"content-type": "text/event-stream", "x-request-id": "req_benchstream"}
    return Call("openai", kwargs, headers, chunks=tuple(chunks))
