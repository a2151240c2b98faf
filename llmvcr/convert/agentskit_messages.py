"""agentskit messages <-> the neutral view: ids, roles, string content, tool calls and results."""

from __future__ import annotations

from typing import Any

from .neutral import JSON, digest, parse_arguments, text_block
from .requests import append_result, tool_result_block

CREATED_AT = "1970-01-01T00:00:00.000Z"  # a fixed timestamp: exports stay byte-stable (not fingerprinted)


def _message(position: int, role: str, content: str, **extra: Any) -> JSON:
    message: JSON = {
        "id": f"msg-{position}-{digest(role, content, n=8)}",
        "role": role,
        "content": content,
        "status": "complete",
        "createdAt": CREATED_AT,
    }
    message.update({k: v for k, v in extra.items() if v})
    return message


def to_messages(request: JSON) -> list[JSON]:
    """Neutral messages as agentskit's: system first, tool results as ``role: "tool"`` messages."""
    out: list[JSON] = []
    if request.get("system"):
        out.append(_message(0, "system", request["system"]))
    for message in request["messages"]:
        role, blocks = message["role"], message["content"]
        if role == "assistant":
            text = "".join(b["text"] for b in blocks if b["type"] == "text")
            calls = [
                {"id": b["id"], "name": b["name"], "args": b["input"], "status": "complete"}
                for b in blocks
                if b["type"] == "tool_use"
            ]
            thinking = [
                {"thinking": b["thinking"], "signature": b.get("signature")}
                for b in blocks
                if b["type"] == "thinking"
            ]
            out.append(
                _message(
                    len(out),
                    "assistant",
                    text,
                    toolCalls=calls,
                    metadata={"llmvcr": {"thinking": thinking}} if thinking else None,
                )
            )
            continue
        texts: list[str] = []
        for block in [*blocks, {"type": "end"}]:
            if block["type"] == "text":
                texts.append(block["text"])
                continue
            if texts:
                out.append(_message(len(out), role, "".join(texts)))
                texts = []
            if block["type"] == "tool_result":
                metadata = {"llmvcr": {"is_error": True}} if block.get("is_error") else None
                out.append(
                    _message(
                        len(out), "tool", block["content"], toolCallId=block["tool_use_id"], metadata=metadata
                    )
                )
        if not blocks:
            out.append(_message(len(out), role, ""))
    return out


def from_messages(messages: list[JSON], system_prompt: Any) -> tuple[str, list[JSON]]:
    """agentskit messages as a neutral system prompt and neutral messages.

    ``context.systemPrompt`` wins; leading system messages are the prompt when it is absent, and are
    dropped when they repeat it (``createRuntime`` sends it both ways).
    """
    system = system_prompt if isinstance(system_prompt, str) else ""
    neutral: list[JSON] = []
    for m in messages:
        role, content = m.get("role"), str(m.get("content") or "")
        metadata = m.get("metadata")
        meta = (metadata.get("llmvcr") or {}) if isinstance(metadata, dict) else {}
        if role == "system" and not neutral and (not system or content == system):
            system = system or content
            continue
        if role == "tool":
            block = tool_result_block(
                str(m.get("toolCallId", "")), content, bool(meta.get("is_error", False))
            )
            append_result(neutral, block)
        elif role == "assistant":
            blocks: list[JSON] = [
                {"type": "thinking", "thinking": str(t.get("thinking", "")), "signature": t.get("signature")}
                for t in meta.get("thinking") or []
            ]
            if content or not m.get("toolCalls"):
                blocks.append(text_block(content))
            blocks.extend(
                {
                    "type": "tool_use",
                    "id": str(call.get("id", "")),
                    "name": str(call.get("name", "")),
                    "input": parse_arguments(call.get("args")),
                }
                for call in m.get("toolCalls") or []
            )
            neutral.append({"role": "assistant", "content": blocks})
        else:
            neutral.append(
                {"role": "system" if role == "system" else "user", "content": [text_block(content)]}
            )
    return system, neutral
