"""A traced Gemini call (google-genai) written back as the SDK sends and receives it.

The request is a ``models/{model}:generateContent`` body (``contents`` with ``user`` / ``model``
turns, ``systemInstruction``, ``tools[].functionDeclarations``, ``generationConfig``) the way
google-genai serialises one; the answer a ``GenerateContentResponse`` (for a streamed call, the
stream ``llmvcr.wire``'s Gemini grammar builds from it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .neutral import JSON, parse_arguments

__all__ = ["gemini_path", "gemini_request", "gemini_response"]

_FINISH = {  # semantic-convention finish reasons -> Gemini's
    "stop": "STOP",
    "tool_call": "STOP",
    "tool_calls": "STOP",
    "length": "MAX_TOKENS",
    "max_tokens": "MAX_TOKENS",
    "content_filter": "SAFETY",
}
_CONFIG = {  # gen_ai.request.* -> generationConfig
    "gen_ai.request.max_tokens": "maxOutputTokens",
    "gen_ai.request.temperature": "temperature",
    "gen_ai.request.top_p": "topP",
    "gen_ai.request.top_k": "topK",
    "gen_ai.request.seed": "seed",
    "gen_ai.request.stop_sequences": "stopSequences",
    "gen_ai.request.presence_penalty": "presencePenalty",
    "gen_ai.request.frequency_penalty": "frequencyPenalty",
    "gen_ai.request.choice.count": "candidateCount",
}


def gemini_path(model: str, streamed: bool) -> tuple[str, tuple[tuple[str, str], ...]]:
    """The path and query of the call (the Gemini Developer API, as google-genai 1.x and 2.x send it)."""
    model = model.removeprefix("models/")
    if streamed:
        return f"/v1beta/models/{model}:streamGenerateContent", (("alt", "sse"),)
    return f"/v1beta/models/{model}:generateContent", ()


def _parts(parts: list[JSON], names: Mapping[str, str], notes: list[str], where: str) -> list[JSON]:
    out: list[JSON] = []
    for part in parts:
        kind = part.get("type")
        if kind == "text":
            out.append({"text": str(part.get("content", ""))})
        elif kind == "tool_call":
            out.append(
                {"functionCall": {"args": parse_arguments(part.get("arguments")), "name": part.get("name")}}
            )
        elif kind == "tool_call_response":
            response = part.get("response")
            if not isinstance(response, dict):
                response = {"result": response}
            name = names.get(str(part.get("id")), "")
            out.append({"functionResponse": {"name": name, "response": response}})
        elif kind == "reasoning":
            out.append({"text": str(part.get("content", "")), "thought": True})
        else:
            notes.append(f"{where}: a {kind!r} part is not kept by the converter; dropped")
    return out


def gemini_request(attrs: JSON, inputs: list[Any], system: str, tools: list[Any], notes: list[str]) -> JSON:
    """The ``generateContent`` body a traced call sent."""
    names = {  # a function response names its function; the trace ties it to the call by id only
        str(p.get("id")): str(p.get("name"))
        for m in inputs
        if isinstance(m, Mapping)
        for p in m.get("parts") or []
        if isinstance(p, Mapping) and p.get("type") == "tool_call"
    }
    contents = []
    for i, message in enumerate(m for m in inputs if isinstance(m, Mapping)):
        role = str(message.get("role"))
        parts = [p for p in message.get("parts") or [] if isinstance(p, dict)]
        if role == "system":
            system = system or "".join(str(p.get("content", "")) for p in parts if p.get("type") == "text")
            continue
        turn = "model" if role == "assistant" else "user"
        contents.append({"parts": _parts(parts, names, notes, f"contents[{i}]"), "role": turn})
    body: JSON = {"contents": contents}
    if system:
        body["systemInstruction"] = {"parts": [{"text": system}], "role": "user"}
    declarations = []
    for tool in tools:
        if not isinstance(tool, Mapping):
            continue
        fn: Any = tool.get("function") if isinstance(tool.get("function"), Mapping) else tool
        declaration = {"name": fn.get("name")}
        if fn.get("description"):
            declaration["description"] = fn["description"]
        schema = fn.get("parameters", fn.get("input_schema"))
        if schema is not None:
            declaration["parameters"] = schema
        declarations.append(declaration)
    if declarations:
        body["tools"] = [{"functionDeclarations": declarations}]
    config = {key: attrs[attr] for attr, key in _CONFIG.items() if attr in attrs}
    if config:
        body["generationConfig"] = config
    return body


def gemini_response(attrs: JSON, outputs: list[Any], notes: list[str], response_id: str) -> JSON:
    """The ``GenerateContentResponse`` of a traced call."""
    candidates = []
    for index, message in enumerate(m for m in outputs if isinstance(m, Mapping)):
        parts = [p for p in message.get("parts") or [] if isinstance(p, dict)]
        reasons = attrs.get("gen_ai.response.finish_reasons") or []
        finish = message.get("finish_reason") or (reasons[0] if reasons else "stop")
        candidates.append(
            {
                "content": {"parts": _parts(parts, {}, notes, f"candidates[{index}]"), "role": "model"},
                "finishReason": _FINISH.get(str(finish), str(finish).upper()),
                "index": index,
            }
        )
    if not candidates:
        notes.append("the trace holds no output message for this call; the reply is empty")
    prompt = int(attrs.get("gen_ai.usage.input_tokens") or 0)
    answer = int(attrs.get("gen_ai.usage.output_tokens") or 0)
    return {
        "candidates": candidates,
        "usageMetadata": {
            "promptTokenCount": prompt,
            "candidatesTokenCount": answer,
            "totalTokenCount": prompt + answer,
        },
        "modelVersion": str(attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model") or ""),
        "responseId": response_id,
    }
