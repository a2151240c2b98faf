"""Tool entries (``provider: tool``) read for people: what was called, with what, and what came back;
and which model call's ``tool_use`` asked for each, so ``llmvcr show`` and ``llmvcr view`` can put
a tool's execution on the timeline between the model call that asked for it and the one that
carried its result.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..cassette import Entry
from .neutral import JSON
from .responses import read_call

TOOL = "tool"  # the provider (and request method) of an ``@llmvcr.tool`` entry


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool entry: its name and arguments, and what it returned, raised or yielded."""

    name: str
    arguments: JSON
    returned: Any = None
    raised: JSON | None = None
    yielded: list[Any] | None = None


@dataclass(frozen=True, slots=True)
class AskedBy:
    """The model call whose answer held the ``tool_use`` a tool entry carried out."""

    call: int  # that call's position in the cassette
    tool_use_id: str


def tool_call_of(entry: Entry) -> ToolCall | None:
    """The tool call an entry records, or None when it is not a tool entry."""
    if entry.provider != TOOL:
        return None
    body = entry.request.body if isinstance(entry.request.body, dict) else {}
    arguments = body.get("arguments")
    answer = entry.response.body if isinstance(entry.response.body, dict) else {}
    error = answer.get("error")
    yielded = [event.get("data") for event in entry.response.stream] if entry.response.stream else None
    return ToolCall(
        name=entry.request.path,
        arguments=arguments if isinstance(arguments, dict) else {},
        returned=answer.get("return"),
        raised=error if isinstance(error, dict) else None,
        yielded=yielded,
    )


def _fits(asked: Any, arguments: JSON) -> bool:
    """The model's input names only arguments the tool got, with the same values (the tool's
    defaults are stored too, so the stored arguments may hold more)."""
    return isinstance(asked, dict) and all(arguments.get(k, _MISSING) == v for k, v in asked.items())


_MISSING = object()


def tool_lines(tool: ToolCall, asked: AskedBy | None) -> list[str]:
    """A tool entry as ``llmvcr show`` prints it: the call, who asked for it, what came back."""
    by = f" (asked by call #{asked.call} [{asked.tool_use_id}])" if asked else ""
    lines = [f"    calls {tool.name} {_json(tool.arguments)}{by}"]
    if tool.yielded is not None:
        lines.append(f"  → yielded {len(tool.yielded)} items: {_json(tool.yielded)[:200]}")
    if tool.raised is not None:
        lines.append(f"  → raised {tool.raised.get('type')}: {tool.raised.get('message')}")
    elif tool.yielded is None:
        lines.append(f"  → returned {_json(tool.returned)[:200]}")
    return lines


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def asked_by(entries: Sequence[Entry]) -> dict[int, AskedBy]:
    """For each tool entry, by position, the latest earlier ``tool_use`` of the same name whose input
    fits its arguments and that no other tool entry took; a tool entry nothing asked for is left out."""
    open_uses: list[tuple[int, str, str, Any]] = []  # (call, tool_use id, name, input), oldest first
    found: dict[int, AskedBy] = {}
    for position, entry in enumerate(entries):
        tool = tool_call_of(entry)
        if tool is not None:
            for n in range(len(open_uses) - 1, -1, -1):
                call, use_id, name, asked = open_uses[n]
                if name == tool.name and _fits(asked, tool.arguments):
                    found[position] = AskedBy(call, use_id)
                    del open_uses[n]
                    break
            continue
        read = read_call(entry, position)
        if read is None or read.response is None:
            continue
        open_uses += [
            (position, str(block.get("id")), str(block.get("name")), block.get("input"))
            for block in read.response["message"]["content"]
            if block.get("type") == "tool_use"
        ]
    return found
