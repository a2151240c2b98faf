"""MCP calls on the model's timeline: each ``tools/call`` beside the model turn that asked for it.

A model turn asks for a tool in its reply (a ``tool_use`` block); the agent then calls that tool on
an MCP server, which the cassette holds as a later ``tools/call`` entry with the same name and
arguments. The page links the two both ways: the MCP call names the turn (``asked_by``), the turn
lists the MCP calls that answered it (``served_by``), so each sits beside the other.
"""

from __future__ import annotations

from typing import Any

from ..cassette import Entry
from ..wire import mcp as wire

JSON = dict[str, Any]
PREVIEW = 400


def _result_text(entry: Entry) -> str:
    body = entry.response.body if isinstance(entry.response.body, dict) else {}
    if "error" in body:
        error = body["error"]
        return f"error: {error.get('message') if isinstance(error, dict) else error}"
    result = body.get("result")
    content = result.get("content") if isinstance(result, dict) else None
    texts = [str(c.get("text")) for c in content or [] if isinstance(c, dict) and c.get("type") == "text"]
    text = "\n".join(texts) if texts else str(result)
    return text[:PREVIEW] + ("…" if len(text) > PREVIEW else "")


def link_mcp(calls: list[JSON], entries: list[Entry]) -> None:
    """Mark the MCP calls of ``calls`` (``calls[i]`` is ``entries[i]``) and tie each ``tools/call`` to
    the latest model turn before it that asked for that tool with those arguments (else that name)."""
    asked: list[tuple[int, Any, Any]] = []  # (model call, tool name, input) not answered yet
    for call, entry in zip(calls, entries, strict=True):
        if not wire.is_mcp(entry):
            blocks = (call.get("reply") or {}).get("content") or []
            asked += [
                (call["i"], b.get("name"), b.get("input"))
                for b in blocks
                if isinstance(b, dict) and b.get("type") == "tool_use"
            ]
            continue
        body = entry.request.body if isinstance(entry.request.body, dict) else {}
        shown: JSON = {"server": entry.request.path, "method": entry.request.method}
        call["mcp"] = shown
        if entry.request.method != "tools/call":
            continue
        name, arguments = body.get("name"), body.get("arguments") or {}
        shown.update(tool=name, arguments=arguments, result=_result_text(entry))
        found = [k for k, a in enumerate(asked) if a[1] == name and a[2] == arguments]
        found = found or [k for k, a in enumerate(asked) if a[1] == name]
        if found:
            turn = asked.pop(found[-1])[0]
            call["asked_by"] = turn
            calls[turn].setdefault("served_by", []).append(call["i"])
