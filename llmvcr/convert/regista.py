"""regista traces: JSONL session logs that ``regista.replay()`` re-runs for $0.

``to_regista_trace`` writes one session from a cassette: ``session.start``, then per model call an
``llm.request`` (the neutral request and regista's ``request_hash``) and an ``llm.response``, the
``tool.call`` / ``permission.decision`` / ``tool.result`` events between turns (tool results are read
from the next request), and ``session.end``. ``from_regista_trace`` (in ``regista_trace``, imported
here) reads a trace back into a cassette.

>>> llmvcr.to_regista_trace(llmvcr.load_cassette("cassettes/agent.yaml"), "trace.jsonl")
>>> result = await regista.replay("trace.jsonl")     # strict: every request hash-verified
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from ..cassette import Cassette
from ..cassette.schema import LLMVCR_VERSION
from ..errors import ConversionWarning
from ..freshness.usage import cost_of
from ..storage.files import load_cassette
from .neutral import FINAL_STOP_REASONS, JSON, Call, text_block, usage
from .regista_trace import (
    DEFAULT_CONTEXT,
    SCHEMA_VERSION,
    canonical_hash,
    from_regista_trace,
    new_ulid,
    read_trace,
)
from .responses import model_calls
from .tool_calls import ToolCall, asked_by, tool_call_of

__all__ = ["canonical_hash", "from_regista_trace", "read_trace", "to_regista_trace"]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _cassette(source: Cassette | str | os.PathLike[str]) -> Cassette:
    return source if isinstance(source, Cassette) else load_cassette(source)


# -- cassette -> trace ----------------------------------------------------------------------------
def _tool_results(call: Call | None) -> dict[str, JSON]:
    """Every tool_result block the (next) request carries, by tool_use_id."""
    if call is None:
        return {}
    return {
        b["tool_use_id"]: b
        for m in call.request["messages"]
        for b in m["content"]
        if b["type"] == "tool_result"
    }


def _provider(call: Call) -> str:
    return "openai_compat" if call.api.startswith("openai") else "anthropic"


def _ran(tool: ToolCall) -> tuple[Any, bool]:
    """A tool entry's outcome as a ``tool.result``'s content and ``is_error``."""
    if tool.raised is not None:
        return str(tool.raised.get("message", "")), True
    value = tool.returned if tool.yielded is None else tool.yielded
    return (value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)), False


def _start(calls: list[Call], kept: JSON, reasons: list[str]) -> JSON:
    """The ``session.start`` event: the task, instructions, model and tools of the first request."""
    first = calls[0].request if calls else None
    messages = first["messages"] if first else []
    task = ""
    if messages and messages[0]["role"] == "user":
        task = "".join(b.get("text", "") for b in messages[0]["content"] if b["type"] == "text")
    if first is not None and messages != [{"role": "user", "content": [text_block(task)]}]:
        reasons.append(
            f"{calls[0].label} starts with {len(messages)} message(s), not the task alone "
            "(regista's first request is one user text message)"
        )
    if len({_provider(c) for c in calls}) > 1:
        reasons.append("the cassette mixes Anthropic and OpenAI calls")
    return {
        "type": "session.start",
        "task": task,
        "instructions": first["system"] if first else "",
        "model": first["model"] if first else "",
        "provider": _provider(calls[0]) if calls else "anthropic",
        "tool_schemas": first["tools"] if first else [],
        "policy": "allow_all",
        "context": dict(DEFAULT_CONTEXT),
        "regista_version": f"llmvcr-{LLMVCR_VERSION}",
        "replay_of": None,
        "skills": [],
        "parent_session_id": None,
        "llmvcr": kept,
    }


def _error(call: Call, retried: bool) -> JSON:
    return {
        "type": "error",
        "phase": "llm.request",
        "error_type": "ProviderError",
        "message": call.error or "",
        "retried": retried,
    }


@dataclass
class _Session:
    """What ``session.end`` reports, summed turn by turn, and the conversation the next request
    should continue (None after a failed call)."""

    expected: list[JSON] | None
    turn: int = 0
    total: JSON = field(default_factory=usage)
    cost: float = 0.0
    wall: int = 0
    output: str = ""
    stop: str = "completed"

    def answered(self, call: Call, response: JSON, cost: float | None) -> None:
        self.total = usage(*(self.total[key] + response["usage"][key] for key in self.total))
        self.cost += cost or 0.0
        self.wall += call.latency_ms
        text = "".join(b["text"] for b in response["message"]["content"] if b["type"] == "text")
        self.output = text or self.output
        self.expected = call.request["messages"] + [response["message"]]
        self.stop = "completed"

    def end(self) -> JSON:
        return {
            "type": "session.end",
            "stop_reason": self.stop,
            "turns": self.turn,
            "usage": self.total,
            "cost_usd": self.cost,
            "wall_time_ms": self.wall,
            "final_output": self.output,
        }


def _result(use_id: str, found: dict[str, JSON], ran: dict[str, ToolCall]) -> tuple[Any, bool] | None:
    """A tool call's content and ``is_error``: from the next request, else from the tool entry that
    ran it (the recording stopped after the tool ran), else None."""
    if use_id in found:
        return found[use_id]["content"], found[use_id]["is_error"]
    if use_id in ran:
        return _ran(ran[use_id])
    return None


def _tool_turn(
    call: Call, after: Call | None, session: _Session, reasons: list[str], ran: dict[str, ToolCall]
) -> list[JSON]:
    """The tool calls of an answer, each allowed, and the results the next request carries (or
    the tool entries hold)."""
    assert call.response is not None and session.expected is not None
    uses = [b for b in call.response["message"]["content"] if b["type"] == "tool_use"]
    found = _tool_results(after)
    events: list[JSON] = []
    for b in uses:
        events.append({"type": "tool.call", "tool_use_id": b["id"], "name": b["name"], "input": b["input"]})
        events.append(
            {
                "type": "permission.decision",
                "tool_use_id": b["id"],
                "decision": "allow",
                "resolution": None,
                "policy": "allow_all",
                "reason": "",
            }
        )
    results = [(b["id"], _result(b["id"], found, ran)) for b in uses]
    events += [
        {"type": "tool.result", "tool_use_id": id, "content": r[0], "is_error": r[1], "duration_ms": 0}
        for id, r in results
        if r is not None
    ]
    if after is None:
        session.stop = "max_turns"  # regista stops before the next request when the turns run out
    elif all(b["id"] in found for b in uses):
        blocks = [
            {
                "type": "tool_result",
                "tool_use_id": b["id"],
                "content": found[b["id"]]["content"],
                "is_error": found[b["id"]]["is_error"],
            }
            for b in uses
        ]
        session.expected.append({"role": "user", "content": blocks})
    else:
        reasons.append(f"{after.label} does not carry a result for every tool call of {call.label}")
    return events


def _turn(
    call: Call,
    after: Call | None,
    first: JSON,
    session: _Session,
    reasons: list[str],
    ran: dict[str, ToolCall],
) -> list[JSON]:
    """One model call's events, and every reason regista's loop would not have made it so."""
    session.turn += 1
    request = call.request
    if session.expected is not None and request["messages"] != session.expected:
        reasons.append(f"{call.label} does not continue the conversation of the call before it")
    reasons.extend(
        f"{call.label} changes {key!r} (regista keeps the first request's for the session)"
        for key in ("model", "system", "tools", "max_tokens", "params")
        if request[key] != first[key]
    )
    turn = session.turn
    events = [
        {"type": "llm.request", "turn": turn, "request": request, "request_hash": canonical_hash(request)}
    ]
    response = call.response
    if response is None:
        session.stop, session.expected = "error", None
        if after is not None:
            reasons.append(
                f"{call.label} failed and the cassette goes on (regista ends a session at an error)"
            )
        return [*events, _error(call, retried=False)]
    cost = cost_of(call.entry)
    events.append(
        {
            "type": "llm.response",
            "turn": turn,
            "response": response,
            "usage": response["usage"],
            "cost_usd": cost,
            "latency_ms": call.latency_ms,
            "replayed": False,
        }
    )
    session.answered(call, response, cost)
    if response["stop_reason"] == "tool_use":
        events += _tool_turn(call, after, session, reasons, ran)
    elif response["stop_reason"] in FINAL_STOP_REASONS and after is not None:
        reasons.append(
            f"{after.label} follows a final answer ({response['stop_reason']!r}); "
            "regista ends the session there"
        )
    return events


def _tool_entries(cassette: Cassette) -> tuple[dict[str, ToolCall], dict[int, list[str]]]:
    """The tools the agent ran (tool entries) by the ``tool_use`` id that asked for each, and every
    tool entry by position with what to say of it (one no model call asked for is left out)."""
    asked = asked_by(cassette.entries)
    ran: dict[str, ToolCall] = {}
    aside: dict[int, list[str]] = {}
    for position, entry in enumerate(cassette.entries):
        tool = tool_call_of(entry)
        if tool is None:
            continue
        aside[position] = []
        if position in asked:
            ran[asked[position].tool_use_id] = tool
        else:
            aside[position].append(
                f"entry {position} (tool {tool.name}) was asked for by no model call; left out"
            )
    return ran, aside


def _plan(
    calls: list[Call], kept: JSON, ran: dict[str, ToolCall] | None = None
) -> tuple[list[JSON], list[str]]:
    """The event payloads of one session, and every reason regista's loop would not have produced it.

    ``kept`` (the cassette's seed, metadata and versions) rides on ``session.start`` under
    ``llmvcr``: regista's loader ignores keys it does not know, and ``from_regista_trace`` reads it.
    ``ran`` holds the cassette's tool entries by the ``tool_use`` id that asked for each: a result
    the next request does not carry (the recording stopped after the tool ran) is taken from there.
    """
    ran = ran or {}
    reasons: list[str] = []
    events = [_start(calls, kept, reasons)]
    session = _Session(expected=calls[0].request["messages"] if calls else [])
    for k, call in enumerate(calls):
        after = calls[k + 1] if k + 1 < len(calls) else None
        if call.response is None and after is not None and after.request == call.request:
            # The SDK's retry of a failed call: regista's providers retry inside one traced call.
            events.append(_error(call, retried=True))
            continue
        events += _turn(call, after, calls[0].request, session, reasons, ran)
    events.append(session.end())
    return events, reasons


def to_regista_trace(
    cassette: Cassette | str | os.PathLike[str],
    path: str | os.PathLike[str],
    *,
    session_id: str | None = None,
) -> str:
    """Write ``cassette`` as a regista JSONL trace at ``path`` (a folder gets ``<session_id>.jsonl``).

    Anthropic and OpenAI calls (Chat Completions and Responses, streamed or not) become
    provider-neutral ``llm.request`` / ``llm.response`` pairs; other entries (embeddings, token
    counts) are left out. When the calls are not one agent conversation as regista's loop makes it
    (task first, each request the previous one plus the answer and its tool results), the trace is
    still valid for regista's loaders and a :class:`~llmvcr.convert.ConversionWarning` says why a
    strict ``regista.replay()`` will diverge. Returns the path written.
    """
    cassette = _cassette(cassette)
    ran, aside = _tool_entries(cassette)
    calls, left_out = model_calls(cassette, aside)
    kept: JSON = {
        "seed": cassette.seed,
        "metadata": cassette.metadata,
        "recorded_with": cassette.recorded_with,
    }
    events, reasons = _plan(calls, kept, ran)
    if not calls:
        reasons.append("the cassette holds no model calls")
    session_id = session_id or new_ulid()
    target = os.fspath(path)
    if os.path.isdir(target):
        target = os.path.join(target, f"{session_id}.jsonl")
    lines = []
    for seq, payload in enumerate(events):
        envelope = {"schema_version": SCHEMA_VERSION, "session_id": session_id, "seq": seq, "ts": _now()}
        lines.append(json.dumps({**envelope, **payload}, separators=(",", ":"), ensure_ascii=False))
    directory = os.path.dirname(os.path.abspath(target))
    os.makedirs(directory, exist_ok=True)
    with open(target, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    source = cassette.path or "the cassette"
    if reasons:
        warnings.warn(
            f"{source} is not one regista conversation, so a strict regista.replay() of {target} will "
            f"diverge (use mode='warn' to step through it): " + "; ".join(dict.fromkeys(reasons)),
            ConversionWarning,
            stacklevel=2,
        )
    if left_out:
        warnings.warn(f"{source} -> {target}: " + "; ".join(left_out), ConversionWarning, stacklevel=2)
    return target
