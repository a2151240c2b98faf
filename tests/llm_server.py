"""A loopback HTTP server that speaks Anthropic's and OpenAI's wire formats.

Replies are a pure function of the request body (ids come from a hash of it), so identical
requests get identical responses.  The hash ignores ``stream``/``stream_options``: a streamed
request and its non-streamed twin describe the same message (same ids, text and usage).

Behaviour, driven by the last user text (or embeddings input):

* ``"Echo: <text>"``; with ``tools`` and the word "weather" a tool call (city Paris); after a
  tool result ``"The tool said: <result>"``; with a JSON schema (``response_format``,
  ``text.format`` or Anthropic ``output_config.format``) a JSON object valid for it.
* Markers: ``__status_400__`` / ``__status_429__`` / ``__status_500__`` / ``__status_529__`` reply
  with that status and the provider's error body (Gemini's to ``:streamGenerateContent`` labelled
  ``text/event-stream``, as the API labels it); ``__stream_error__`` / ``__stream_drop__``
  (streams only) send four events, then an in-stream error / an abrupt close;
  ``__slow_stream__`` sleeps 50 ms between events; ``__counter__`` appends ``" #<n>"`` (a
  per-server counter) to the echo so identical requests differ; ``__split_stream__`` streams
  the text four characters per event, as a model spells out a word it repeats.
* Hostile servers (streams only): ``__gzip__`` / ``__deflate__`` compress the event stream with
  that ``content-encoding`` whatever the client accepted; ``__stream_cut__`` sends four events and
  half of the fifth, then closes the connection.
* A request header ``x-echo: text|error|header`` makes the server repeat what the request carried
  (header values, query values, the request line's path, a Basic header's user and password),
  each raw, percent-encoded and base64-encoded, in the reply text (bodies and stream events),
  the error message, or the request-id header: the echo a key can come back in.
* ``POST /v1/files`` answers a multipart upload with a file object; a ``/gateway/<token>``
  prefix before any route is ignored, as an API gateway's would be.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, quote, quote_plus, unquote

from typing_extensions import Self

__all__ = ["CREATED", "MARKERS", "LLMServer", "RecordedRequest", "start_server"]

CREATED = 1_700_000_000
STREAM_PREFIX_EVENTS = 4  # events sent before __stream_error__ / __stream_drop__ take effect
MARKERS = (
    "__status_400__",
    "__status_429__",
    "__status_500__",
    "__status_529__",
    "__stream_error__",
    "__stream_drop__",
    "__slow_stream__",
    "__counter__",
    "__gzip__",
    "__deflate__",
    "__stream_cut__",
    "__split_stream__",
)
JSON = dict[str, Any]

_ANTHROPIC_ERRORS = {
    400: ("invalid_request_error", "Invalid request (triggered by __status_400__)"),
    429: ("rate_limit_error", "Rate limit exceeded (triggered by __status_429__)"),
    500: ("api_error", "Internal server error (triggered by __status_500__)"),
    529: ("overloaded_error", "Overloaded (triggered by __status_529__)"),
}
_OPENAI_ERRORS = {
    400: ("invalid_request_error", None, "Invalid request (triggered by __status_400__)"),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached (triggered by __status_429__)"),
    500: ("server_error", None, "The server had an error (triggered by __status_500__)"),
    529: ("server_error", "overloaded", "The engine is overloaded (triggered by __status_529__)"),
}


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    query: str
    headers: dict[str, str]  # lower-cased names
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@dataclass
class _Plan:
    """What the "model" decided to say, independent of the wire format."""

    seed: str
    model: str
    text: str | None  # assistant text, None when only a tool call is made
    tool: tuple[str, JSON] | None = None  # (tool name, input)
    input_tokens: int = 1
    body: JSON = field(default_factory=dict)

    def id(self, salt: str, n: int = 24) -> str:
        return hashlib.sha256(f"{self.seed}:{salt}".encode()).hexdigest()[:n]

    @property
    def arguments(self) -> str:
        return json.dumps(self.tool[1]) if self.tool else ""

    @property
    def output_tokens(self) -> int:
        return max(1, len(_pieces(self.text or "")) + len(_json_pieces(self.arguments)))


# --------------------------------------------------------------------------- text helpers


def _pieces(text: str) -> list[str]:
    """Split into word-sized pieces that concatenate back to `text`."""
    if "__split_stream__" in text:
        return [text[i : i + 4] for i in range(0, len(text), 4)]
    parts = re.findall(r"\s*\S+", text)
    rest = text[len("".join(parts)) :]
    return [*parts[:-1], parts[-1] + rest] if parts and rest else parts or ([rest] if rest else [])


def _json_pieces(s: str) -> list[str]:
    if not s:
        return []
    step = max(1, -(-len(s) // 3))
    return [s[i : i + step] for i in range(0, len(s), step)]


def _text_of(content: Any, types: tuple[str, ...] = ("text",)) -> str:
    """Text of a string content or of a list of content parts of the given types."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") in types)
    return ""


def _fill(schema: Any, root: Any, depth: int = 0) -> Any:
    """A deterministic value valid for a (strict, OpenAI/Anthropic-style) JSON schema."""
    if not isinstance(schema, dict) or depth > 32:
        return None
    if "$ref" in schema:
        target: Any = root
        for part in str(schema["$ref"]).lstrip("#/").split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        return _fill(target, root, depth + 1)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        options = [o for o in schema.get(key) or [] if not (isinstance(o, dict) and o.get("type") == "null")]
        if options:
            return _fill(options[0], root, depth + 1)
    typ = schema.get("type")
    if isinstance(typ, list):
        typ = next((t for t in typ if t != "null"), "null")
    if typ is None:
        typ = "object" if "properties" in schema else "array" if "items" in schema else "string"
    if typ == "object":
        props = schema.get("properties") or {}
        return {k: _fill(v, root, depth + 1) for k, v in props.items() if k in (schema.get("required") or [])}
    if typ == "array":
        return [
            _fill(schema.get("items", {}), root, depth + 1) for _ in range(int(schema.get("minItems", 0)))
        ]
    return {"string": "x", "integer": 1, "number": 1.0, "boolean": True}.get(str(typ))


# --------------------------------------------------------------------------- request analysis


@dataclass
class _Prompt:
    text: str = ""  # last user text (including tool results), where markers are looked for
    tool_result: str | None = None
    tool_name: str | None = None
    schema: JSON | None = None


def _anthropic_prompt(body: JSON) -> _Prompt:
    p = _Prompt()
    users = [m for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "user"]
    if users:
        content = users[-1].get("content")
        p.text = _text_of(content)
        results = (
            [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
            if isinstance(content, list)
            else []
        )
        if results:
            p.tool_result = "".join(_text_of(b.get("content")) for b in results)
            p.text += p.tool_result
    tools = body.get("tools") or []
    if tools and isinstance(tools[0], dict):
        p.tool_name = tools[0].get("name")
    fmt = (body.get("output_config") or {}).get("format") or {}
    if fmt.get("type") == "json_schema":
        p.schema = fmt.get("schema") or {}
    return p


def _chat_prompt(body: JSON) -> _Prompt:
    p = _Prompt()
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    users = [m for m in messages if m.get("role") == "user"]
    if users:
        p.text = _text_of(users[-1].get("content"))
    if messages and messages[-1].get("role") == "tool":
        p.tool_result = _text_of(messages[-1].get("content"))
        p.text = p.tool_result
    tools = body.get("tools") or []
    if tools and isinstance(tools[0], dict):
        p.tool_name = (tools[0].get("function") or tools[0].get("custom") or {}).get("name")
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        p.schema = (fmt.get("json_schema") or {}).get("schema") or {}
    return p


def _responses_prompt(body: JSON) -> _Prompt:
    p = _Prompt()
    items = body.get("input")
    if isinstance(items, str):
        p.text = items
    elif isinstance(items, list):
        items = [i for i in items if isinstance(i, dict)]
        users = [i for i in items if i.get("role") == "user"]
        if users:
            p.text = _text_of(users[-1].get("content"), ("input_text", "text"))
        if items and items[-1].get("type") == "function_call_output":
            p.tool_result = _text_of(items[-1].get("output"), ("input_text", "output_text", "text"))
            p.text = p.tool_result
    tools = body.get("tools") or []
    if tools and isinstance(tools[0], dict):
        p.tool_name = tools[0].get("name")
    fmt = (body.get("text") or {}).get("format") or {}
    if fmt.get("type") == "json_schema":
        p.schema = fmt.get("schema") or {}
    return p


def _embedding_items(body: JSON) -> list[Any]:
    inp = body.get("input")
    if isinstance(inp, list) and inp and all(isinstance(x, int) for x in inp):
        return [inp]  # a single pre-tokenized input
    return inp if isinstance(inp, list) else [inp]


# --------------------------------------------------------------------------- Anthropic renderers


def _anthropic_message(plan: _Plan) -> JSON:
    content: list[JSON] = []
    if plan.text is not None:
        content.append({"type": "text", "text": plan.text})
    if plan.tool:
        content.append(
            {
                "type": "tool_use",
                "id": "toolu_" + plan.id("tool"),
                "name": plan.tool[0],
                "input": plan.tool[1],
            }
        )
    return {
        "id": "msg_" + plan.id("msg"),
        "type": "message",
        "role": "assistant",
        "model": plan.model,
        "content": content,
        "stop_reason": "tool_use" if plan.tool else "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": plan.input_tokens,
            "output_tokens": plan.output_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }


def _anthropic_events(plan: _Plan) -> list[JSON]:
    msg = _anthropic_message(plan)
    start = {**msg, "content": [], "stop_reason": None, "usage": {**msg["usage"], "output_tokens": 1}}
    events: list[JSON] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(msg["content"]):
        if block["type"] == "text":
            first, deltas = (
                {**block, "text": ""},
                [{"type": "text_delta", "text": t} for t in _pieces(block["text"])],
            )
        else:
            first = {**block, "input": {}}
            deltas = [
                {"type": "input_json_delta", "partial_json": j} for j in ["", *_json_pieces(plan.arguments)]
            ]
        events.append({"type": "content_block_start", "index": index, "content_block": first})
        if index == 0:
            events.append({"type": "ping"})
        events += [{"type": "content_block_delta", "index": index, "delta": d} for d in deltas]
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": plan.output_tokens},
        }
    )
    events.append({"type": "message_stop"})
    return events


# --------------------------------------------------------------------------- OpenAI renderers


def _chat_usage(plan: _Plan) -> JSON:
    return {
        "prompt_tokens": plan.input_tokens,
        "completion_tokens": plan.output_tokens,
        "total_tokens": plan.input_tokens + plan.output_tokens,
    }


def _tool_call(plan: _Plan) -> JSON:
    assert plan.tool
    return {
        "id": "call_" + plan.id("call"),
        "type": "function",
        "function": {"name": plan.tool[0], "arguments": plan.arguments},
    }


def _chat_completion(plan: _Plan) -> JSON:
    message: JSON = {"role": "assistant", "content": plan.text, "refusal": None}
    if plan.tool:
        message["tool_calls"] = [_tool_call(plan)]
    return {
        "id": "chatcmpl-" + plan.id("chat"),
        "object": "chat.completion",
        "created": CREATED,
        "model": plan.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if plan.tool else "stop",
            }
        ],
        "usage": _chat_usage(plan),
        "system_fingerprint": "fp_llmserver",
    }


def _chat_chunks(plan: _Plan) -> list[JSON]:
    base = {
        "id": "chatcmpl-" + plan.id("chat"),
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": plan.model,
        "system_fingerprint": "fp_llmserver",
    }

    def chunk(delta: JSON, finish: str | None = None) -> JSON:
        return {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

    if plan.tool:
        call = _tool_call(plan)
        chunks = [
            chunk(
                {
                    "role": "assistant",
                    "content": None,
                    "refusal": None,
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": call["id"],
                            "type": "function",
                            "function": {"name": call["function"]["name"], "arguments": ""},
                        }
                    ],
                }
            )
        ]
        chunks += [
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": a}}]})
            for a in _json_pieces(plan.arguments)
        ]
        chunks.append(chunk({}, "tool_calls"))
    else:
        chunks = [chunk({"role": "assistant", "content": "", "refusal": None})]
        chunks += [chunk({"content": t}) for t in _pieces(plan.text or "")]
        chunks.append(chunk({}, "stop"))
    if (plan.body.get("stream_options") or {}).get("include_usage"):
        chunks.append({**base, "choices": [], "usage": _chat_usage(plan)})
    return chunks


def _response_items(plan: _Plan) -> list[JSON]:
    items: list[JSON] = []
    if plan.text is not None:
        items.append(
            {
                "id": "msg_" + plan.id("item"),
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": plan.text, "annotations": [], "logprobs": []}],
            }
        )
    if plan.tool:
        items.append(
            {
                "id": "fc_" + plan.id("fc"),
                "type": "function_call",
                "status": "completed",
                "call_id": "call_" + plan.id("call"),
                "name": plan.tool[0],
                "arguments": plan.arguments,
            }
        )
    return items


def _response(plan: _Plan, *, done: bool = True) -> JSON:
    b = plan.body
    usage = {
        "input_tokens": plan.input_tokens,
        "output_tokens": plan.output_tokens,
        "total_tokens": plan.input_tokens + plan.output_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    }
    return {
        "id": "resp_" + plan.id("resp", 48),
        "object": "response",
        "created_at": CREATED,
        "status": "completed" if done else "in_progress",
        "completed_at": CREATED if done else None,
        "error": None,
        "incomplete_details": None,
        "instructions": b.get("instructions"),
        "max_output_tokens": b.get("max_output_tokens"),
        "model": plan.model,
        "output": _response_items(plan) if done else [],
        "parallel_tool_calls": b.get("parallel_tool_calls", True),
        "previous_response_id": b.get("previous_response_id"),
        "reasoning": {"effort": None, "summary": None},
        "temperature": b.get("temperature", 1.0),
        "text": b.get("text") or {"format": {"type": "text"}},
        "tool_choice": b.get("tool_choice", "auto"),
        "tools": b.get("tools") or [],
        "top_p": b.get("top_p", 1.0),
        "truncation": b.get("truncation", "disabled"),
        "usage": usage if done else None,
        "user": None,
        "metadata": b.get("metadata") or {},
    }


def _response_events(plan: _Plan) -> list[JSON]:
    events: list[JSON] = [
        {"type": "response.created", "response": _response(plan, done=False)},
        {"type": "response.in_progress", "response": _response(plan, done=False)},
    ]
    for oi, item in enumerate(_response_items(plan)):
        ids = {"item_id": item["id"], "output_index": oi}
        if item["type"] == "message":
            part = item["content"][0]
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": oi,
                    "item": {**item, "status": "in_progress", "content": []},
                }
            )
            events.append(
                {
                    "type": "response.content_part.added",
                    **ids,
                    "content_index": 0,
                    "part": {**part, "text": ""},
                }
            )
            events += [
                {"type": "response.output_text.delta", **ids, "content_index": 0, "delta": t, "logprobs": []}
                for t in _pieces(part["text"])
            ]
            events.append(
                {
                    "type": "response.output_text.done",
                    **ids,
                    "content_index": 0,
                    "text": part["text"],
                    "logprobs": [],
                }
            )
            events.append({"type": "response.content_part.done", **ids, "content_index": 0, "part": part})
        else:
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": oi,
                    "item": {**item, "status": "in_progress", "arguments": ""},
                }
            )
            events += [
                {"type": "response.function_call_arguments.delta", **ids, "delta": a}
                for a in _json_pieces(item["arguments"])
            ]
            events.append(
                {"type": "response.function_call_arguments.done", **ids, "arguments": item["arguments"]}
            )
        events.append({"type": "response.output_item.done", "output_index": oi, "item": item})
    events.append({"type": "response.completed", "response": _response(plan)})
    return [{**e, "sequence_number": n} for n, e in enumerate(events)]


# --------------------------------------------------------------------------- HTTP plumbing


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        path, _, query = self.path.partition("?")
        body = self._read_body()
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.server.owner._record(RecordedRequest(self.command, path, query, headers, body))
        try:
            self.server.owner._dispatch(self, path, headers, body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:
            self.send_json(
                500, {"error": {"message": f"llm_server bug: {exc!r}", "type": "server_error"}}, {}
            )

    do_GET = do_PUT = do_DELETE = do_PATCH = do_POST

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            data = b""
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                data += self.rfile.read(size)
                self.rfile.readline()
            while self.rfile.readline().strip():  # trailers
                pass
            return data
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def send_json(self, status: int, payload: Any, headers: dict[str, str]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        for k, v in {"content-type": "application/json", **headers, "content-length": str(len(data))}.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def send_sse(
        self,
        frames: Iterable[bytes],
        headers: dict[str, str],
        *,
        delay: float,
        fail: bytes | None,
        drop: bool,
        encoding: str = "",
        cut: bool = False,
    ) -> None:
        if encoding:
            return self._send_encoded_sse(list(frames), headers, encoding)
        self.send_response(200)
        for k, v in {
            "content-type": "text/event-stream; charset=utf-8",
            "cache-control": "no-cache",
            **headers,
            "transfer-encoding": "chunked",
        }.items():
            self.send_header(k, v)
        self.end_headers()
        todo = list(frames)
        if cut:  # the fifth event stops half-way, without its blank line
            fifth = todo[STREAM_PREFIX_EVENTS]
            todo, drop = [*todo[:STREAM_PREFIX_EVENTS], fifth[: len(fifth) // 2]], True
        if fail is not None or drop:
            todo = todo[: STREAM_PREFIX_EVENTS + cut] + ([fail] if fail is not None else [])
        for i, frame in enumerate(todo):
            if i and delay:
                time.sleep(delay)
            self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
            self.wfile.flush()
        if drop:  # no terminating chunk: the client sees a truncated body
            self.close_connection = True
            return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        if fail is not None:
            self.close_connection = True

    def _send_encoded_sse(self, frames: list[bytes], headers: dict[str, str], encoding: str) -> None:
        """The whole event stream compressed, in two chunks (the client sees it arrive in pieces)."""
        raw = b"".join(frames)
        data = gzip.compress(raw) if encoding == "gzip" else zlib.compress(raw)
        self.send_response(200)
        for k, v in {
            "content-type": "text/event-stream; charset=utf-8",
            **headers,
            "content-encoding": encoding,
            "transfer-encoding": "chunked",
        }.items():
            self.send_header(k, v)
        self.end_headers()
        half = len(data) // 2
        for piece in (data[:half], data[half:]):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # keep-alive handler threads must not block stop()
    request_queue_size = 256  # 50-way asyncio.gather opens 50 connections at once
    owner: LLMServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return  # a client that stops reading a stream mid-way, as the tests mean it to
        super().handle_error(request, client_address)


def _sse(event: str | None, data: Any) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {data if isinstance(data, str) else json.dumps(data)}\n\n".encode()


class LLMServer:
    """Loopback fake of api.anthropic.com / api.openai.com / Azure OpenAI / the Gemini API (see module docstring)."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self.url = ""
        self._lock = threading.Lock()
        self._counter = 0
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        # the live API changed since recording (tests of `llmvcr verify`): (event or None, payload) ->
        # the (event, payload) pairs sent instead; and a status every model call answers with
        self.drift: Callable[[str | None, JSON], list[tuple[str | None, JSON]]] | None = None
        self.fail_status: int | None = None

    # ---- lifecycle
    def start(self) -> Self:
        if self._httpd is None:
            self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
            self._httpd.owner = self
            self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
            self._thread = threading.Thread(target=self._httpd.serve_forever, name="llm-server", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            if self._thread is not None:
                self._thread.join(timeout=5)
            self._httpd = self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- recorded traffic
    def reset(self) -> None:
        with self._lock:
            self.requests.clear()

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self.requests)

    @property
    def last_request(self) -> RecordedRequest:
        with self._lock:
            return self.requests[-1]

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    # ---- dispatch
    def _dispatch(self, h: _Handler, path: str, headers: dict[str, str], raw: bytes) -> None:
        if _GEMINI_PATH.fullmatch(path):
            return _gemini(h, path, raw)
        route = _route(path)
        anthropic = route.startswith("messages") if route else "anthropic-version" in headers
        echo = _echo(h.path, headers)
        if route == "files":
            return self._file(h, anthropic, raw, headers, echo)
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return self._error(h, anthropic, 400, "", "Request body is not a JSON object", echo)
        if route not in _ROUTES:
            return self._error(h, anthropic, 404, "", f"Unknown path {path}", echo)
        prompt = _ROUTES[route](body)
        status = next((s for s in (400, 429, 500, 529) if f"__status_{s}__" in prompt.text), None)
        seed_body = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
        canonical = json.dumps(seed_body, sort_keys=True, separators=(",", ":"))
        seed = hashlib.sha256(f"{route}|{canonical}".encode()).hexdigest()
        suffix = ""
        if "__counter__" in prompt.text:
            with self._lock:
                self._counter += 1
                suffix = f" #{self._counter}"
            seed = hashlib.sha256(f"{seed}{suffix}".encode()).hexdigest()
        status = status if self.fail_status is None else self.fail_status
        if status is not None:
            return self._error(h, anthropic, status, seed, echo=echo)
        plan = _Plan(
            seed=seed,
            model=str(body.get("model", "")),
            text=None,
            body=body,
            input_tokens=max(1, len(canonical) // 4),
        )
        if prompt.tool_result is not None:
            plan.text = f"The tool said: {prompt.tool_result}"
        elif prompt.tool_name and re.search(r"\bweather\b", prompt.text, re.IGNORECASE):
            plan.tool = (prompt.tool_name, {"city": "Paris"})
            plan.text = "Let me check the weather." if anthropic else None
        elif prompt.schema is not None:
            plan.text = json.dumps(_fill(prompt.schema, prompt.schema))
        else:
            plan.text = f"Echo: {prompt.text}{suffix}"
        if echo and "text" in headers["x-echo"]:
            plan.text = f"{plan.text} {echo}"
        hdrs = self._echo_headers(self._headers(anthropic, seed), headers, echo)
        stream = bool(body.get("stream"))
        if route == "messages/count_tokens":
            return h.send_json(200, {"input_tokens": max(1, len(canonical) // 4)}, hdrs)
        if route == "embeddings":
            return h.send_json(200, _embeddings(body), hdrs)
        if not stream:
            render: Callable[[_Plan], JSON] = {
                "messages": _anthropic_message,
                "chat/completions": _chat_completion,
                "responses": _response,
            }[route]
            return h.send_json(200, self._drifted(None, render(plan))[0][1], hdrs)
        fail: bytes | None = None
        if "__stream_error__" in prompt.text:
            if route == "messages":
                fail = _sse(
                    "error",
                    {
                        "type": "error",
                        "error": {"type": "overloaded_error", "message": "Overloaded"},
                        "request_id": hdrs["request-id"],
                    },
                )
            elif route == "chat/completions":
                fail = _sse(
                    None,
                    {
                        "error": {
                            "message": "The server had an error while processing your request.",
                            "type": "server_error",
                            "param": None,
                            "code": None,
                        }
                    },
                )
            else:
                fail = _sse(
                    "error",
                    {
                        "type": "error",
                        "code": "server_error",
                        "param": None,
                        "message": "The server had an error while processing your request.",
                        "sequence_number": STREAM_PREFIX_EVENTS,
                    },
                )
        if route == "messages":
            frames = [_sse(n, d) for e in _anthropic_events(plan) for n, d in self._drifted(e["type"], e)]
        elif route == "chat/completions":
            frames = [_sse(n, d) for c in _chat_chunks(plan) for n, d in self._drifted(None, c)]
            frames.append(_sse(None, "[DONE]"))
        else:
            frames = [_sse(e["type"], e) for e in _response_events(plan)]
        h.send_sse(
            frames,
            hdrs,
            delay=0.05 if "__slow_stream__" in prompt.text else 0.0,
            fail=fail,
            drop="__stream_drop__" in prompt.text,
            encoding=next((e for e in ("gzip", "deflate") if f"__{e}__" in prompt.text), ""),
            cut="__stream_cut__" in prompt.text,
        )

    def _drifted(self, event: str | None, payload: JSON) -> list[tuple[str | None, JSON]]:
        return [(event, payload)] if self.drift is None else self.drift(event, payload)

    @staticmethod
    def _headers(anthropic: bool, seed: str) -> dict[str, str]:
        rid = "req_" + hashlib.sha256(f"{seed}:request-id".encode()).hexdigest()[:20]
        if anthropic:
            return {"request-id": rid, "anthropic-organization-id": "org-llmserver"}
        return {
            "x-request-id": rid,
            "openai-version": "2020-10-01",
            "openai-processing-ms": "1",
            "set-cookie": "__cf_bm=abc; path=/",
        }

    @staticmethod
    def _echo_headers(hdrs: dict[str, str], headers: dict[str, str], echo: str) -> dict[str, str]:
        if not echo or "header" not in headers["x-echo"]:
            return hdrs
        return {k: f"{v} {echo}" if k.endswith("request-id") else v for k, v in hdrs.items()}

    def _file(self, h: _Handler, anthropic: bool, raw: bytes, headers: dict[str, str], echo: str) -> None:
        """``POST /v1/files``: the reply describes the uploaded part (its id a hash of the parts)."""
        payload = _uploaded_file(headers.get("content-type", ""), raw)
        hdrs = self._echo_headers(self._headers(anthropic, payload["id"]), headers, echo)
        if echo and "text" in headers["x-echo"]:
            payload["filename"] = f"{payload['filename'] or 'upload'} {echo}"
        h.send_json(200, payload, hdrs)

    def _error(
        self,
        h: _Handler,
        anthropic: bool,
        status: int,
        seed: str,
        message: str | None = None,
        echo: str = "",
    ) -> None:
        lower = {k.lower(): v for k, v in h.headers.items()}
        hdrs = self._echo_headers({**self._headers(anthropic, seed), "x-should-retry": "false"}, lower, echo)
        if echo and "error" in lower["x-echo"]:
            default = (_ANTHROPIC_ERRORS if anthropic else _OPENAI_ERRORS).get(status, ("", "", ""))[-1]
            message = f"{message or default} {echo}"
        if status == 429:
            hdrs["retry-after"] = "7"
        if anthropic:
            etype, msg = _ANTHROPIC_ERRORS.get(
                status, ("not_found_error" if status == 404 else "api_error", "")
            )
            payload: JSON = {
                "type": "error",
                "error": {"type": etype, "message": message or msg},
                "request_id": hdrs["request-id"],
            }
        else:
            etype, code, msg = _OPENAI_ERRORS.get(status, ("invalid_request_error", None, ""))
            payload = {"error": {"message": message or msg, "type": etype, "param": None, "code": code}}
        h.send_json(status, payload, hdrs)


def _uploaded_file(content_type: str, raw: bytes) -> JSON:
    """The OpenAI file object for a multipart upload: its id a hash of the parts, not the boundary."""
    boundary = content_type.partition("boundary=")[2].strip('"').encode()
    parts = [p for p in raw.split(b"--" + boundary) if p.strip(b"-\r\n")] if boundary else []
    fields: dict[str, bytes] = {}
    filename = ""
    for part in parts:
        head, _, data = part.partition(b"\r\n\r\n")
        name = re.search(rb'name="([^"]*)"', head)
        found = re.search(rb'filename="([^"]*)"', head)
        if found:
            filename = found.group(1).decode()
        if name:
            fields[name.group(1).decode()] = data.removesuffix(b"\r\n")
    digest = hashlib.sha256(b"|".join(k.encode() + b"=" + v for k, v in sorted(fields.items())))
    return {
        "id": "file-" + digest.hexdigest()[:24],
        "object": "file",
        "bytes": len(fields.get("file", b"")),
        "created_at": CREATED,
        "filename": filename,
        "purpose": fields.get("purpose", b"").decode(),
        "status": "processed",
    }


def _embeddings(body: JSON) -> JSON:
    items = _embedding_items(body)
    data = []
    for i, item in enumerate(items):
        digest = hashlib.sha256(json.dumps(item).encode()).digest()
        vector = [(b - 128) / 128 for b in digest[:8]]  # exactly representable as float32
        emb: Any = (
            base64.b64encode(struct.pack("<8f", *vector)).decode()
            if body.get("encoding_format") == "base64"
            else vector
        )
        data.append({"object": "embedding", "index": i, "embedding": emb})
    tokens = sum(
        len(x.split()) if isinstance(x, str) else len(x) if isinstance(x, list) else 1 for x in items
    )
    return {
        "object": "list",
        "data": data,
        "model": body.get("model", ""),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


# what a request carries that is not the client's own noise: an echo repeats only these
_ECHO_SKIP = frozenset(
    {
        "host",
        "content-length",
        "content-type",
        "accept",
        "accept-encoding",
        "connection",
        "user-agent",
        "x-echo",
    }
)


def _echo(target: str, headers: dict[str, str]) -> str:
    """What ``x-echo`` repeats: each value the request carried, raw, percent-encoded and in base64."""
    if "x-echo" not in headers:
        return ""
    path, _, query = target.partition("?")
    values = [target, path, unquote(path), *unquote(path).split("/")]
    values += [v for k, v in headers.items() if k not in _ECHO_SKIP and not k.startswith("x-stainless")]
    values += [v for _, v in parse_qsl(query, keep_blank_values=True)]
    for v in list(values):
        if v.lower().startswith(("basic ", "bearer ")):
            token = v.split(" ", 1)[1].strip()
            values.append(token)
            if v.lower().startswith("basic "):
                values += base64.b64decode(token).decode("utf-8", "replace").split(":", 1)
    forms = []
    for v in values:
        if v:
            forms += [v, quote(v, safe=""), quote_plus(v), base64.b64encode(v.encode()).decode()]
    return " ".join(dict.fromkeys(forms))


def _route(path: str) -> str | None:
    p = re.sub(r"^/gateway/[^/]+", "", path.rstrip("/"))
    m = re.fullmatch(r"/openai/deployments/[^/]+/(chat/completions|embeddings)", p)
    if m:
        return m.group(1)
    for prefix in ("/openai/v1/", "/openai/", "/v1/"):
        if p.startswith(prefix):
            return p[len(prefix) :]
    return None


_ROUTES: dict[str, Callable[[JSON], _Prompt]] = {
    "messages": _anthropic_prompt,
    "messages/count_tokens": _anthropic_prompt,
    "chat/completions": _chat_prompt,
    "responses": _responses_prompt,
    "embeddings": lambda b: _Prompt(
        " ".join(i if isinstance(i, str) else json.dumps(i) for i in _embedding_items(b))
    ),
}


# --------------------------------------------------------------------------- Gemini (google-genai)

_GEMINI_PATH = re.compile(r"/v1(?:beta|alpha)?/models/([^/:]+):(\w+)")
_GEMINI_STATUS = {400: "INVALID_ARGUMENT", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 529: "UNAVAILABLE"}


def _gemini_vector(item: Any) -> list[float]:
    digest = hashlib.sha256(json.dumps(item, sort_keys=True).encode()).digest()
    return [(b - 128) / 128 for b in digest[:8]]


def _gemini(h: _Handler, path: str, raw: bytes) -> None:
    """``models/{model}:generateContent`` / ``:streamGenerateContent`` (SSE) / ``:embedContent`` /
    ``:batchEmbedContents``: text echo, a ``functionCall`` for "weather" with tools, errors by marker."""
    match = _GEMINI_PATH.fullmatch(path)
    assert match is not None
    model, method = match.groups()
    body = json.loads(raw) if raw else {}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
    seed = hashlib.sha256(f"gemini|{model}|{canonical}".encode()).hexdigest()
    hdrs = {"x-request-id": "req_" + seed[:20]}
    if method == "embedContent":
        return h.send_json(200, {"embedding": {"values": _gemini_vector(body.get("content"))}}, hdrs)
    if method == "batchEmbedContents":
        embeddings = [{"values": _gemini_vector(r.get("content"))} for r in body.get("requests") or []]
        return h.send_json(200, {"embeddings": embeddings}, hdrs)
    contents = [c for c in body.get("contents") or [] if isinstance(c, dict)]
    parts = contents[-1].get("parts") or [] if contents else []
    text = "".join(p.get("text", "") for p in parts if isinstance(p, dict))
    # the SDK writes camelCase, litellm snake_case; the API takes both
    results = [p.get("functionResponse") or p.get("function_response") for p in parts if isinstance(p, dict)]
    results = [r for r in results if r]
    status = next((s for s in (400, 429, 500, 529) if f"__status_{s}__" in text), None)
    if status is not None or method not in ("generateContent", "streamGenerateContent"):
        code = status or 404
        error = {
            "code": code,
            "message": f"Gemini error {code}",
            "status": _GEMINI_STATUS.get(code, "NOT_FOUND"),
        }
        if method == "streamGenerateContent":  # Gemini labels a refused stream's JSON error as the stream
            hdrs = {**hdrs, "content-type": "text/event-stream"}
        return h.send_json(code, {"error": error}, hdrs)
    declarations = [
        d
        for t in body.get("tools") or []
        for d in (t.get("functionDeclarations") or t.get("function_declarations") or [])
    ]
    answer: list[JSON]
    if results:
        answer = [{"text": f"The tool said: {json.dumps(results[-1].get('response'), sort_keys=True)}"}]
    elif declarations and re.search(r"\bweather\b", text, re.IGNORECASE):
        answer = [{"functionCall": {"name": declarations[0]["name"], "args": {"city": "Paris"}}}]
    else:
        answer = [{"text": f"Echo: {text}"}]
    prompt_tokens = max(1, len(canonical) // 4)
    pieces = _pieces(answer[0]["text"]) if "text" in answer[0] else []
    usage = {
        "promptTokenCount": prompt_tokens,
        "candidatesTokenCount": max(1, len(pieces)),
        "totalTokenCount": prompt_tokens + max(1, len(pieces)),
    }

    def reply(parts: list[JSON], last: bool) -> JSON:
        candidate: JSON = {"content": {"role": "model", "parts": parts}, "index": 0}
        if last:
            candidate["finishReason"] = "STOP"
        return {
            "candidates": [candidate],
            "usageMetadata": usage,
            "modelVersion": model,
            "responseId": seed[:22],
        }

    drifted = h.server.owner._drifted  # the live API changed since recording (or reports other usage)
    if method == "generateContent":
        return h.send_json(200, drifted(None, reply(answer, True))[0][1], hdrs)
    chunks = [[{"text": p}] for p in pieces] if pieces else [answer]
    if "alt=sse" not in h.path:  # the stream's other form: one JSON array of the chunks
        return h.send_json(200, [reply(c, i == len(chunks) - 1) for i, c in enumerate(chunks)], hdrs)
    frames = [
        f"data: {json.dumps(d)}\r\n\r\n".encode()
        for i, c in enumerate(chunks)
        for _, d in drifted(None, reply(c, i == len(chunks) - 1))
    ]
    delay = 0.05 if "__slow_stream__" in text else 0.0
    h.send_sse(frames, hdrs, delay=delay, fail=None, drop="__stream_drop__" in text)


def start_server() -> LLMServer:
    """Start a server on an ephemeral loopback port (the caller stops it)."""
    return LLMServer().start()


# --------------------------------------------------------------------------- Responses over WebSocket


class ResponsesWebSocketServer:
    """Loopback fake of OpenAI's Responses WebSocket (``wss://api.openai.com/v1/responses``).

    Each ``response.create`` message is answered with the same events ``POST /v1/responses`` streams
    (``"Echo: <input>"``, ids from a hash of the message). Markers in the input: ``__slow_stream__``
    (50 ms between events), ``__ws_drop__`` (four events, then close code 1011). Other client
    messages get an ``error`` event. Needs the ``websockets`` package.
    """

    def __init__(self) -> None:
        self.messages: list[tuple[str, Any]] = []  # (path, parsed client message)
        self.url = ""
        self._lock = threading.Lock()
        self._server: Any = None
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        from websockets.sync.server import serve

        if self._server is None:
            self._server = serve(self._handle, "127.0.0.1", 0)
            self.url = f"ws://127.0.0.1:{self._server.socket.getsockname()[1]}"
            self._thread = threading.Thread(
                target=self._server.serve_forever, name="llm-ws-server", daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            if self._thread is not None:
                self._thread.join(timeout=5)
            self._server = self._thread = None

    @property
    def message_count(self) -> int:
        with self._lock:
            return len(self.messages)

    def _handle(self, connection: Any) -> None:
        from websockets.exceptions import ConnectionClosed

        path = connection.request.path
        try:
            for raw in connection:
                body = json.loads(raw)
                with self._lock:
                    self.messages.append((path, body))
                if body.get("type") != "response.create":
                    connection.send(
                        json.dumps(
                            {
                                "type": "error",
                                "code": "unknown_event",
                                "param": None,
                                "message": f"unsupported event {body.get('type')!r}",
                                "sequence_number": 0,
                            }
                        )
                    )
                    continue
                create = {k: v for k, v in body.items() if k != "type"}
                text = _responses_prompt(create).text
                canonical = json.dumps(create, sort_keys=True, separators=(",", ":"))
                plan = _Plan(
                    seed=hashlib.sha256(f"ws|{canonical}".encode()).hexdigest(),
                    model=str(create.get("model", "")),
                    text=f"Echo: {text}",
                    body=create,
                    input_tokens=max(1, len(canonical) // 4),
                )
                events = _response_events(plan)
                drop = "__ws_drop__" in text
                for i, event in enumerate(events[:STREAM_PREFIX_EVENTS] if drop else events):
                    if i and "__slow_stream__" in text:
                        time.sleep(0.05)
                    connection.send(json.dumps(event))
                if drop:
                    connection.close(1011, "dropped (triggered by __ws_drop__)")
                    return
        except ConnectionClosed:
            pass
