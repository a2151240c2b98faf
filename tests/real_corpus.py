"""The real cassettes under tests/data/vcrpy_real, read independently of llmvcr, and re-issued through
today's SDKs: what the API answered each recorded call, and what the SDK gives back on replay.

The reader here is deliberately small and separate from ``llmvcr.convert``: it is the oracle the
converter is checked against, so it must not share the converter's code.
"""

from __future__ import annotations

import gzip
import inspect
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import anthropic
import openai
import yaml

CORPUS = Path(__file__).parent / "data" / "vcrpy_real"
FILES = sorted(p for p in CORPUS.rglob("*") if p.suffix in (".yaml", ".gz") and p.is_file())
ERROR_CLASSES = {
    400: "BadRequestError",
    401: "AuthenticationError",
    404: "NotFoundError",
    429: "RateLimitError",
}
MEANING_HEADERS = ("anthropic-beta", "openai-beta")


@dataclass(frozen=True)
class Call:
    """One recorded call: what the SDK sent and what the API answered."""

    file: str
    index: int
    host: str
    path: str
    query: dict[str, str]
    body: dict[str, Any]
    headers: dict[str, str]
    status: int
    answer: Any  # the JSON body, or the list of SSE data payloads for a stream

    @property
    def name(self) -> str:
        return f"{self.file}#{self.index}"


def _values(headers: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in (headers or {}).items():
        out[str(name).lower()] = str(value[0] if isinstance(value, list) else value)
    return out


def _text(body: Any, encoding: str) -> str:
    if isinstance(body, dict):
        if body.get("type") == "json":  # cassetter
            return json.dumps(body["content"])
        if "type" in body:
            return str(body.get("content") or "")
        body = body.get("string")
    data = body if isinstance(body, bytes) else str(body or "").encode()
    if encoding == "gzip":
        data = gzip.decompress(data)
    return data.decode()


def _sse(text: str) -> list[Any]:
    return [
        json.loads(line[5:])
        for line in text.splitlines()
        if line.startswith("data:") and "[DONE]" not in line
    ]


def _interactions(path: Path) -> Iterator[dict[str, Any]]:
    if path.suffix == ".gz":  # LangChain: gzip-compressed YAML with parallel lists
        document = yaml.safe_load(gzip.decompress(path.read_bytes()))
        for request, response in zip(document["requests"], document["responses"], strict=True):
            yield {"request": request, "response": response}
    else:
        yield from yaml.safe_load(path.read_text())["interactions"]


def calls(path: Path) -> list[Call]:
    out: list[Call] = []
    for index, raw in enumerate(_interactions(path)):
        req, res = raw["request"], raw["response"]
        url = urlsplit(req["uri"])
        req_headers, res_headers = _values(req.get("headers")), _values(res.get("headers"))
        body = req["parsed_body"] if "parsed_body" in req else json.loads(_text(req.get("body"), ""))
        status = res["status"]["code"] if isinstance(res["status"], dict) else res["status"]
        if "parsed_body" in res:
            answer: Any = res["parsed_body"]
        else:
            text = _text(res.get("body"), res_headers.get("content-encoding", ""))
            stream = "event-stream" in res_headers.get("content-type", "")
            answer = _sse(text) if stream else json.loads(text)
        out.append(
            Call(
                str(path.relative_to(CORPUS)),
                index,
                url.hostname or "",
                url.path,
                dict(parse_qsl(url.query)),
                body,
                {k: v for k, v in req_headers.items() if k in MEANING_HEADERS},
                status,
                answer,
            )
        )
    return out


def clients() -> tuple[Any, Any]:
    """Clients of today's SDKs with placeholder keys: replay never lets a call leave."""
    return (
        anthropic.Anthropic(api_key="sk-ant-placeholder", max_retries=0),
        openai.OpenAI(api_key="sk-placeholder", max_retries=0),
    )


def _method(call: Call, a: Any, o: Any) -> Any:
    if call.host.endswith("anthropic.com"):
        return a.messages.count_tokens if call.path.endswith("/count_tokens") else a.messages.create
    return {
        "/v1/chat/completions": o.chat.completions.create,
        "/v1/responses": o.responses.create,
        "/v1/embeddings": o.embeddings.create,
    }[call.path]


def issue(call: Call, a: Any, o: Any) -> Any:
    """Make the recorded call again through the SDK; what came back, in the shape of ``call.answer``."""
    method = _method(call, a, o)
    known = set(inspect.signature(method).parameters)
    kwargs = {k: v for k, v in call.body.items() if k in known}
    extra = {k: v for k, v in call.body.items() if k not in known}
    if extra:
        kwargs["extra_body"] = extra
    if call.headers:
        kwargs["extra_headers"] = call.headers
    try:
        result = method(**kwargs)
        if call.body.get("stream"):
            return [event.to_dict() for event in result]
        return result.to_dict()
    except (anthropic.APIStatusError, openai.APIStatusError) as err:
        return [type(err).__name__, err.status_code, err.response.json()]


def expected(call: Call) -> Any:
    if call.status >= 400:
        return [ERROR_CLASSES.get(call.status, "APIStatusError"), call.status, call.answer]
    if call.body.get("stream") and call.host.endswith("anthropic.com"):
        return [event for event in call.answer if event.get("type") != "ping"]  # the SDK skips pings
    return call.answer
