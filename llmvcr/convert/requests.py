"""Requests into the neutral view: Anthropic Messages, OpenAI Chat Completions and Responses bodies."""

from __future__ import annotations

from typing import Any

from .neutral import DEFAULT_MAX_TOKENS, JSON, parse_arguments, text_block, text_of, tool_use_block

# -- requests ----------------------------------------------------------------------------------
_ANTHROPIC_CORE = ("model", "messages", "system", "tools", "max_tokens", "stream")
_CHAT_CORE = ("model", "messages", "tools", "max_tokens", "stream", "stream_options")
_RESPONSES_CORE = ("model", "instructions", "input", "tools", "max_output_tokens", "stream")


def _spec(name: Any, description: Any, schema: Any) -> JSON:
    return {
        "name": str(name),
        "description": description if isinstance(description, str) else "",
        "input_schema": schema if isinstance(schema, dict) else {},
        "parallel_safe": False,
    }


def anthropic_block(block: Any, notes: list[str], where: str) -> JSON | None:
    if isinstance(block, str):
        return text_block(block)
    kind = block.get("type") if isinstance(block, dict) else None
    if kind == "text":
        return text_block(str(block.get("text", "")))
    if kind == "thinking":
        return {
            "type": "thinking",
            "thinking": str(block.get("thinking", "")),
            "signature": block.get("signature"),
        }
    if kind == "tool_use":
        return tool_use_block(str(block.get("id", "")), str(block.get("name", "")), block.get("input"))
    if kind == "tool_result":
        return {
            "type": "tool_result",
            "tool_use_id": str(block.get("tool_use_id", "")),
            "content": text_of(block.get("content"), notes, where),
            "is_error": bool(block.get("is_error", False)),
        }
    notes.append(f"{where}: a {kind!r} block has no neutral form; dropped")
    return None


def anthropic_request(body: JSON, notes: list[str]) -> JSON:
    messages = []
    for i, m in enumerate(body.get("messages") or []):
        content = m.get("content") if isinstance(m, dict) else None
        raw = [content] if isinstance(content, str) else content if isinstance(content, list) else []
        blocks = [b for b in (anthropic_block(b, notes, f"messages[{i}]") for b in raw) if b is not None]
        messages.append({"role": str(m.get("role", "user")), "content": blocks})
    tools = []
    for tool in body.get("tools") or []:
        if isinstance(tool, dict) and "input_schema" in tool:
            tools.append(_spec(tool.get("name"), tool.get("description"), tool.get("input_schema")))
        else:
            notes.append(
                f"tools: the server tool {tool.get('type') if isinstance(tool, dict) else tool!r} dropped"
            )
    max_tokens = body.get("max_tokens")
    return {
        "model": str(body.get("model", "")),
        "system": text_of(body.get("system"), notes, "system"),
        "messages": messages,
        "tools": tools,
        "max_tokens": max_tokens if isinstance(max_tokens, int) else DEFAULT_MAX_TOKENS,
        "params": {k: v for k, v in body.items() if k not in _ANTHROPIC_CORE},
    }


def tool_result_block(call_id: str, content: Any, is_error: bool = False) -> JSON:
    """A tool's answer to the call ``call_id``, as an Anthropic ``tool_result`` block."""
    return {"type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": is_error}


def append_result(messages: list[JSON], block: JSON) -> None:
    """Tool results travel as one user message of tool_result blocks, in call order."""
    last = messages[-1] if messages else None
    if (
        last
        and last["role"] == "user"
        and last["content"]
        and all(b["type"] == "tool_result" for b in last["content"])
    ):
        last["content"].append(block)
    else:
        messages.append({"role": "user", "content": [block]})


def _append_tool_use(messages: list[JSON], block: JSON) -> None:
    if messages and messages[-1]["role"] == "assistant":
        messages[-1]["content"].append(block)
    else:
        messages.append({"role": "assistant", "content": [block]})


def chat_request(body: JSON, notes: list[str]) -> JSON:
    system: list[str] = []
    messages: list[JSON] = []
    for i, m in enumerate(body.get("messages") or []):
        if not isinstance(m, dict):
            continue
        role, where = m.get("role"), f"messages[{i}]"
        if role in ("system", "developer"):
            text = text_of(m.get("content"), notes, where)
            if messages:
                messages.append({"role": "system", "content": [text_block(text)]})
            else:
                system.append(text)
        elif role == "tool":
            append_result(
                messages,
                tool_result_block(str(m.get("tool_call_id", "")), text_of(m.get("content"), notes, where)),
            )
        elif role == "assistant":
            content: list[JSON] = []
            if m.get("reasoning_content"):
                content.append(
                    {"type": "thinking", "thinking": str(m["reasoning_content"]), "signature": None}
                )
            text = text_of(m.get("content"), notes, where)
            if text:
                content.append(text_block(text))
            for call in m.get("tool_calls") or []:
                fn = call.get("function") or {}
                content.append(
                    tool_use_block(
                        str(call.get("id", "")), str(fn.get("name", "")), parse_arguments(fn.get("arguments"))
                    )
                )
            messages.append({"role": "assistant", "content": content})
        else:
            raw = m.get("content")
            parts = [raw] if isinstance(raw, str) else raw if isinstance(raw, list) else []
            blocks = []
            for part in parts:
                if isinstance(part, str) or (isinstance(part, dict) and isinstance(part.get("text"), str)):
                    blocks.append(text_block(part if isinstance(part, str) else part["text"]))
                else:
                    notes.append(
                        f"{where}: a {part.get('type') if isinstance(part, dict) else part!r} part dropped"
                    )
            messages.append({"role": "user", "content": blocks})
    tools = []
    for tool in body.get("tools") or []:
        fn = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(fn, dict):
            tools.append(_spec(fn.get("name"), fn.get("description"), fn.get("parameters")))
        else:
            notes.append(f"tools: a {tool.get('type') if isinstance(tool, dict) else tool!r} tool dropped")
    max_tokens = body.get("max_tokens", body.get("max_completion_tokens"))
    core = _CHAT_CORE + (("max_completion_tokens",) if "max_tokens" not in body else ())
    return {
        "model": str(body.get("model", "")),
        "system": "\n".join(system),
        "messages": messages,
        "tools": tools,
        "max_tokens": max_tokens if isinstance(max_tokens, int) else DEFAULT_MAX_TOKENS,
        "params": {k: v for k, v in body.items() if k not in core},
    }


def responses_request(body: JSON, notes: list[str]) -> JSON:
    items = body.get("input")
    messages: list[JSON] = []
    for i, item in enumerate([{"role": "user", "content": items}] if isinstance(items, str) else items or []):
        if not isinstance(item, dict):
            continue
        kind, where = item.get("type", "message"), f"input[{i}]"
        if kind == "function_call":
            _append_tool_use(
                messages,
                tool_use_block(
                    str(item.get("call_id", "")),
                    str(item.get("name", "")),
                    parse_arguments(item.get("arguments")),
                ),
            )
        elif kind == "function_call_output":
            append_result(
                messages,
                tool_result_block(str(item.get("call_id", "")), text_of(item.get("output"), notes, where)),
            )
        elif kind == "message":
            role = item.get("role")
            role = (
                "system"
                if role == "developer"
                else role
                if role in ("user", "assistant", "system")
                else "user"
            )
            messages.append(
                {"role": role, "content": [text_block(text_of(item.get("content"), notes, where))]}
            )
        else:
            notes.append(f"{where}: a {kind!r} item has no neutral form; dropped")
    tools = [
        _spec(t.get("name"), t.get("description"), t.get("parameters"))
        for t in body.get("tools") or []
        if isinstance(t, dict) and t.get("type") == "function"
    ]
    max_tokens = body.get("max_output_tokens")
    return {
        "model": str(body.get("model", "")),
        "system": text_of(body.get("instructions"), notes, "instructions"),
        "messages": messages,
        "tools": tools,
        "max_tokens": max_tokens if isinstance(max_tokens, int) else DEFAULT_MAX_TOKENS,
        "params": {k: v for k, v in body.items() if k not in _RESPONSES_CORE},
    }
