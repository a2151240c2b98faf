"""The generated pytest project of ``python -m benchmarks suite``: a conftest and N small tests.

Every test makes 3 calls (anthropic ``messages.create`` with tools, openai chat, anthropic
``messages.stream()``), each with a 2 KB system prompt. ``BENCH_TOOL`` picks who answers:

* ``floor``: the SDK clients' httpx2 transport answers from memory (no plugin marks the tests);
* ``vcrpy`` (pytest-recording), ``cassetter``: ``@pytest.mark.vcr``, one cassette per test;
* ``llmvcr_yaml``, ``llmvcr_json``: ``@pytest.mark.llmvcr``, one cassette per test;
* ``BENCH_RECORD=1``: a loopback HTTP server in the pytest process answers from the same memory,
  so each tool records its own cassettes through its own interception.

Each tool runs with its own defaults; ``LLMVCR_STATE_DIR`` (set by the suite for the cold-cache
row) moves llmvcr's parse cache to an empty folder.
"""

from __future__ import annotations

CONFTEST = r"""
import os, threading, time, json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import anthropic, httpx2, openai, orjson, pytest

TOOL = os.environ["BENCH_TOOL"]
RECORD = os.environ.get("BENCH_RECORD") == "1"
BASE = os.environ["BENCH_BASE_URL"]
SYSTEM = ("You are a careful reviewer of quarterly reports. Check revenue against the ledger, "
          "compare churn with the previous quarter, and walk the onboarding flow. ") * 12
SYSTEM = SYSTEM[:2048]
TOOLS = [
    {"name": "lookup_ledger", "description": "Read ledger lines for a quarter.",
     "input_schema": {"type": "object", "properties": {"quarter": {"type": "string"},
                      "account": {"type": "string"}}, "required": ["quarter"]}},
    {"name": "churn_report", "description": "Churn by month for a segment.",
     "input_schema": {"type": "object", "properties": {"segment": {"type": "string"}},
                      "required": ["segment"]}},
]
TEXT = ("For this ticket, first check that revenue reconciles with the ledger; second, compare "
        "churn with the previous quarter and explain any jump; third, walk the onboarding flow.")


def _sse(event, data):
    return (f"event: {event}\n" if event else "").encode() + b"data: " + orjson.dumps(data) + b"\n\n"


def answer(path, body):
    user = body["messages"][-1]["content"]
    i = int(user.split("#")[1].split(" ")[0])
    if path.endswith("/chat/completions"):
        return "application/json", orjson.dumps({
            "id": f"chatcmpl-{i:08d}", "object": "chat.completion", "created": 1700000000 + i,
            "model": body["model"], "system_fingerprint": "fp_bench",
            "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                         "message": {"role": "assistant", "content": TEXT, "refusal": None, "annotations": []}}],
            "usage": {"prompt_tokens": 520, "completion_tokens": 40, "total_tokens": 560}})
    if body.get("stream"):
        msg = {"id": f"msg_s{i:08d}", "type": "message", "role": "assistant", "model": body["model"],
               "content": [], "stop_reason": None, "stop_sequence": None,
               "usage": {"input_tokens": 520, "output_tokens": 1}}
        words = TEXT.split(" ")
        events = [_sse("message_start", {"type": "message_start", "message": msg}),
                  _sse("content_block_start", {"type": "content_block_start", "index": 0,
                                               "content_block": {"type": "text", "text": ""}})]
        events += [_sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                        "delta": {"type": "text_delta", "text": (" " if k else "") + w}})
                   for k, w in enumerate(words)]
        events += [_sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
                   _sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn",
                        "stop_sequence": None}, "usage": {"output_tokens": len(words)}}),
                   _sse("message_stop", {"type": "message_stop"})]
        return "text/event-stream", events
    return "application/json", orjson.dumps({
        "id": f"msg_{i:08d}", "type": "message", "role": "assistant", "model": body["model"],
        "content": [{"type": "text", "text": "Let me read the ledger first."},
                    {"type": "tool_use", "id": f"toolu_{i:08d}", "name": "lookup_ledger",
                     "input": {"quarter": "2026-Q3", "account": f"acct-{i}"}}],
        "stop_reason": "tool_use", "stop_sequence": None,
        "usage": {"input_tokens": 640, "output_tokens": 52}})


class _Chunks(httpx2.SyncByteStream):
    def __init__(self, chunks):
        self.chunks = chunks

    def __iter__(self):
        return iter(self.chunks)


def floor_handler(request):
    kind, data = answer(request.url.path, orjson.loads(request.content))
    if isinstance(data, list):
        return httpx2.Response(200, headers={"content-type": kind}, stream=_Chunks(data))
    return httpx2.Response(200, headers={"content-type": kind}, content=data)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = orjson.loads(self.rfile.read(int(self.headers["content-length"])))
        kind, data = answer(self.path, body)
        if isinstance(data, list):
            data = b"".join(data)
        self.send_response(200)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


if RECORD:
    host, port = BASE.rsplit("/", 1)[-1].split(":")
    _server = ThreadingHTTPServer((host, int(port)), _Handler)
    threading.Thread(target=_server.serve_forever, daemon=True).start()

_http = httpx2.Client(transport=httpx2.MockTransport(floor_handler)) if TOOL == "floor" else httpx2.Client()
A = anthropic.Anthropic(api_key="sk-ant-bench", base_url=BASE, http_client=_http, max_retries=0)
O = openai.OpenAI(api_key="sk-bench", base_url=BASE + "/v1", http_client=_http, max_retries=0)


def three_calls(i):
    user = f"Ticket #{i} needs a review of the Q3 report."
    A.messages.create(model="claude-sonnet-4-5", max_tokens=400, system=SYSTEM, tools=TOOLS,
                      messages=[{"role": "user", "content": user}])
    O.chat.completions.create(model="gpt-4o-mini", messages=[
        {"role": "system", "content": SYSTEM}, {"role": "user", "content": user}])
    with A.messages.stream(model="claude-sonnet-4-5", max_tokens=400, system=SYSTEM,
                           messages=[{"role": "user", "content": user}]) as stream:
        for _ in stream:
            pass
        return stream.get_final_message()


if TOOL in ("vcrpy", "cassetter"):
    @pytest.fixture(scope="session")
    def vcr_config():
        return {"match_on": ["method", "uri", "body"], "filter_headers": ["authorization", "x-api-key"]}


def pytest_collection_modifyitems(items):
    for item in items:
        if TOOL in ("vcrpy", "cassetter"):
            item.add_marker(pytest.mark.vcr)
        elif TOOL == "llmvcr_json":
            item.add_marker(pytest.mark.llmvcr(f"test_suite/{item.name}.json"))
        elif TOOL.startswith("llmvcr"):
            item.add_marker(pytest.mark.llmvcr)


_times = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    start = time.perf_counter()
    yield
    _times.append(time.perf_counter() - start)


def pytest_sessionfinish(session):
    out = os.environ.get("BENCH_TIMES")
    if out and _times:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        with open(f"{out}.{worker}", "w") as f:
            json.dump(_times, f)
"""


def test_module(n: int) -> str:
    """``n`` tests, each making the three calls for its own ticket number."""
    lines = ["from conftest import three_calls", ""]
    for i in range(n):
        lines += [f"def test_ticket_{i:04d}():", f"    assert three_calls({i}).content", ""]
    return "\n".join(lines)
