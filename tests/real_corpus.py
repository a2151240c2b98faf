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
import httpx
import openai
import yaml
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types

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
            stream = "event-stream" in res_headers.get("content-type", "") or text.lstrip().startswith(
                ("data:", "event:")  # a stream whose headers the recorder dropped
            )
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


def _gemini_parts(call: Call) -> tuple[str, str, str]:
    """(API version, model, method) of ``/v1beta/models/{model}:{method}``."""
    version = call.path.split("/")[1]
    model, method = call.path.split("/models/", 1)[1].split(":")
    return version, model, method


def _gemini_json(result: Any) -> Any:
    """An SDK result without what the SDK adds of its own (the raw HTTP headers, its AFC history)."""
    out = result.to_json_dict()
    out.pop("sdk_http_response", None)
    out.pop("automatic_function_calling_history", None)
    return out


def _issue_gemini(call: Call) -> Any:
    version, model, method = _gemini_parts(call)
    body = call.body
    if method == "streamGenerateContent" and call.query.get("alt") != "sse":
        # asked for the whole stream as one JSON array, as llm-gemini does over plain httpx:
        # google-genai never asks that way, so the call is made as that client made it
        with httpx.Client() as http:
            url = f"https://{call.host}{call.path}"
            answer = http.post(url, json=body, headers={"x-goog-api-key": "placeholder"})
        return (
            answer.json() if answer.status_code < 400 else ["ClientError", answer.status_code, answer.json()]
        )
    options = genai_types.HttpOptions(
        api_version=version, retry_options=genai_types.HttpRetryOptions(attempts=1)
    )
    client = genai.Client(api_key="placeholder", http_options=options)
    try:
        if method == "batchEmbedContents":
            requests = body["requests"]
            config = {k: v for k, v in requests[0].items() if k not in ("model", "content")}
            result = client.models.embed_content(
                model=model,
                contents=[r["content"] for r in requests],
                config=genai_types.EmbedContentConfig.model_validate(config),
            )
            return _gemini_json(result)
        fields = dict(body.get("generationConfig") or {})
        fields.update(
            {k: body[k] for k in ("systemInstruction", "safetySettings", "tools", "toolConfig") if k in body}
        )
        config = (
            genai_types.GenerateContentConfig.model_validate(fields)
            if fields or "generationConfig" in body
            else None
        )
        if method == "streamGenerateContent":
            chunks = client.models.generate_content_stream(
                model=model, contents=body["contents"], config=config
            )
            return [_gemini_json(c) for c in chunks]
        return _gemini_json(
            client.models.generate_content(model=model, contents=body["contents"], config=config)
        )
    except genai_errors.APIError as err:
        return [type(err).__name__, err.code, err.details]


def _expected_gemini(call: Call) -> Any:
    if call.status >= 400:
        return ["ClientError" if call.status < 500 else "ServerError", call.status, call.answer]
    _, _, method = _gemini_parts(call)
    if method == "batchEmbedContents":
        return _gemini_json(genai_types.EmbedContentResponse.model_validate(call.answer, extra="ignore"))
    if method == "streamGenerateContent" and call.query.get("alt") != "sse":
        return call.answer

    def parse(raw: Any) -> Any:  # as the SDK reads an answer: fields it does not know are left out
        return genai_types.GenerateContentResponse.model_validate(raw, extra="ignore")

    if method == "streamGenerateContent":
        return [_gemini_json(parse(chunk)) for chunk in call.answer]
    return _gemini_json(parse(call.answer))


def issue(call: Call, a: Any, o: Any) -> Any:
    """Make the recorded call again through the SDK; what came back, in the shape of ``call.answer``."""
    if call.host.endswith("googleapis.com"):
        return _issue_gemini(call)
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
    if call.host.endswith("googleapis.com"):
        return _expected_gemini(call)
    if call.status >= 400:
        return [ERROR_CLASSES.get(call.status, "APIStatusError"), call.status, call.answer]
    if call.body.get("stream") and call.host.endswith("anthropic.com"):
        return [event for event in call.answer if event.get("type") != "ping"]  # the SDK skips pings
    return call.answer
