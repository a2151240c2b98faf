"""agentskit cassettes: ``@agentskit/eval/replay``'s JSON of adapter requests and stream chunks.

A document is ``{version: 1, seed?, metadata?, entries: [{request: {messages, context?}, chunks}]}``.
Messages carry ``id``, ``role``, a string ``content``, ``status`` and an ISO ``createdAt`` (the
loader requires the last two kinds), plus ``toolCalls`` / ``toolCallId``; chunks are ``text``,
``reasoning``, ``tool_call`` (``args`` a JSON string), ``usage`` (``promptTokens``,
``completionTokens``, ``totalTokens``), ``error`` and ``done``. agentskit records no model, provider
or HTTP detail, so ``to_agentskit`` keeps those in ``context.metadata.llmvcr`` and
``from_agentskit`` reads them back when present.

>>> llmvcr.to_agentskit(cassette, "fixtures/bug-427.cassette.json")
>>> cassette = llmvcr.from_agentskit("fixtures/bug-427.cassette.json")
"""

from __future__ import annotations

import json
import os
import warnings
from typing import Any

from ..cassette import Cassette, Entry
from ..cassette.schema import LLMVCR_VERSION
from ..errors import CassetteFormatError, ConversionWarning
from ..storage.files import load_cassette
from ..storage.writer import atomic_write
from .agentskit_calls import entry_of
from .agentskit_chunks import entry_chunks
from .agentskit_messages import to_messages
from .neutral import JSON
from .responses import model_calls

VERSION = 1


# -- cassette -> agentskit --------------------------------------------------------------------------
def _context(call_request: JSON, body: JSON, entry: Entry, api: str) -> JSON:
    core = {
        "model",
        "messages",
        "system",
        "instructions",
        "input",
        "tools",
        "stream",
        "temperature",
        "max_tokens",
        "max_output_tokens",
    }
    context: JSON = {}
    if call_request.get("system"):
        context["systemPrompt"] = call_request["system"]
    if isinstance(body.get("temperature"), (int, float)):
        context["temperature"] = body["temperature"]
    max_tokens = body.get("max_tokens", body.get("max_output_tokens"))
    if isinstance(max_tokens, int):
        context["maxTokens"] = max_tokens
    if call_request["tools"]:
        context["tools"] = [
            {"name": t["name"], "description": t["description"], "schema": t["input_schema"]}
            for t in call_request["tools"]
        ]
    context["metadata"] = {
        "llmvcr": {
            "provider": entry.provider,
            "api": api,
            "model": call_request["model"],
            "path": entry.request.path,
            "query": [list(p) for p in entry.request.query],
            "stream": bool(body.get("stream")),
            "params": {k: v for k, v in body.items() if k not in core},
        }
    }
    return context


def to_agentskit(cassette: Cassette | str | os.PathLike[str], path: str | os.PathLike[str]) -> str:
    """Write ``cassette`` as an agentskit replay cassette (JSON) at ``path``; returns the path.

    One entry per Anthropic or OpenAI model call, in recording order; streams keep their
    per-delta granularity as ``text`` / ``reasoning`` chunks. Other entries (embeddings, token
    counts) are left out with a :class:`~llmvcr.convert.ConversionWarning`.
    """
    cassette = cassette if isinstance(cassette, Cassette) else load_cassette(cassette)
    calls, left_out = model_calls(cassette)
    entries: list[JSON] = []
    for call in calls:
        entry = call.entry
        entries.append(
            {
                "request": {
                    "messages": to_messages(call.request),
                    "context": _context(call.request, entry.request.body, entry, call.api),
                },
                "chunks": entry_chunks(entry, call.response, call.error, call.api),
            }
        )
    document: JSON = {"version": VERSION}
    if cassette.seed is not None:
        document["seed"] = cassette.seed
    if cassette.metadata:
        document["metadata"] = cassette.metadata
    document["entries"] = entries
    target = os.fspath(path)
    atomic_write(target, (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    if left_out:
        warnings.warn(
            f"{cassette.path or 'the cassette'} -> {target}: " + "; ".join(left_out),
            ConversionWarning,
            stacklevel=2,
        )
    return target


# -- agentskit -> cassette --------------------------------------------------------------------------
def validate(document: Any, path: str) -> None:
    """agentskit's own ``parseCassette`` rules; raises ``CassetteFormatError`` naming the field."""
    if not isinstance(document, dict):
        raise CassetteFormatError(path, "an agentskit cassette is a JSON object")
    if document.get("version") != VERSION:
        raise CassetteFormatError(
            path, f"Unsupported cassette version: {document.get('version')!r}", field="version"
        )
    if not isinstance(document.get("entries"), list):
        raise CassetteFormatError(path, "entries missing", field="entries")
    seed = document.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (str, int, float))):
        raise CassetteFormatError(path, "a string or a finite number", field="seed")
    if "metadata" in document and not isinstance(document["metadata"], dict):
        raise CassetteFormatError(path, "expected an object", field="metadata")
    for i, entry in enumerate(document["entries"]):
        request = entry.get("request") if isinstance(entry, dict) else None
        if not isinstance(request, dict) or not isinstance(request.get("messages"), list):
            raise CassetteFormatError(
                path, "request.messages must be an array", entry=i, field="request.messages"
            )
        for j, message in enumerate(request["messages"]):
            where = f"request.messages[{j}]"
            if not isinstance(message, dict) or not isinstance(message.get("content"), str):
                raise CassetteFormatError(path, "content must be a string", entry=i, field=f"{where}.content")
            if not isinstance(message.get("createdAt"), str) or not _is_iso(message["createdAt"]):
                raise CassetteFormatError(
                    path, "createdAt must be an ISO date string", entry=i, field=f"{where}.createdAt"
                )
        chunks = entry.get("chunks")
        if not isinstance(chunks, list) or not all(
            isinstance(c, dict) and isinstance(c.get("type"), str) for c in chunks
        ):
            raise CassetteFormatError(
                path, "chunks must be an array of objects with a string type", entry=i, field="chunks"
            )


def _is_iso(text: str) -> bool:
    from datetime import datetime

    try:
        datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def from_agentskit(
    path: str | os.PathLike[str],
    *,
    provider: str = "anthropic",
    model: str | None = None,
    stream: bool | None = None,
) -> Cassette:
    """Read an agentskit cassette into an llmvcr cassette of Anthropic (or ``provider="openai"``) calls.

    Entries exported by :func:`to_agentskit` get back their provider, model, path, parameters and
    streaming; for others ``provider``, ``model`` (default ``"agentskit"``) and ``stream`` (default
    True: agentskit records streams) decide the wire shape. Requests are written compactly (string
    contents), so the same SDK call made the plain way matches in strict mode.
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            document = json.loads(f.read())
    except FileNotFoundError:
        raise CassetteFormatError(path, "no such agentskit cassette") from None
    except ValueError as err:
        raise CassetteFormatError(path, f"not valid JSON ({err})") from None
    validate(document, path)
    if provider not in ("anthropic", "openai"):
        raise ValueError(f"provider must be 'anthropic' or 'openai', not {provider!r}")
    seed = document.get("seed")
    cassette = Cassette(
        path="",
        seed=None if seed is None else str(seed),
        recorded_with={"llmvcr": LLMVCR_VERSION, "agentskit": "cassette v1"},
        metadata=document.get("metadata") or {},
    )
    coerced: list[str] = []
    for i, item in enumerate(document["entries"]):
        entry, note = entry_of(i, item, provider, model, stream)
        cassette.append(entry)
        coerced.extend([note] if note else [])
    if coerced:
        warnings.warn(
            f"{path}: " + "; ".join(coerced) + ": llmvcr writes agentskit entries back as Anthropic Messages "
            "or Chat Completions calls only, so these replay through chat.completions.create",
            ConversionWarning,
            stacklevel=2,
        )
    return cassette
