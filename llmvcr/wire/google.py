"""The Gemini API (google-genai, and the older google-generativeai) on the wire.

A call is ``POST /v1beta/models/{model}:{method}``: ``generateContent``, ``streamGenerateContent``,
``embedContent``, ``batchEmbedContents``, ``countTokens``. The method, not the body, asks for a
stream. With ``?alt=sse`` (what google-genai sends) the answer is server-sent events, each an
unnamed ``GenerateContentResponse`` chunk, the last with its candidates' ``finishReason``; without
it the whole stream comes as one JSON array of those chunks. An error is ``{"error": {"code",
"message", "status"}}`` with its HTTP status.
"""

from __future__ import annotations

import re
from typing import Any

from ..cassette.entries import Request
from .format import WireFormat

METHODS = ("generateContent", "streamGenerateContent", "embedContent", "batchEmbedContents", "countTokens")
STREAM_METHOD, PLAIN_METHOD = ":streamGenerateContent", ":generateContent"

JSON = dict[str, Any]


_MODEL = re.compile(r"/models/([^/:]+):")


def model_of(path: str) -> str | None:
    """The model a Gemini call names in its path."""
    match = _MODEL.search(path)
    return match.group(1) if match else None


def asks_stream(request: Request) -> bool:
    """The path names ``:streamGenerateContent``."""
    return request.path.endswith(STREAM_METHOD)


def asks_sse(request: Request) -> bool:
    """A stream request that wants server-sent events (``?alt=sse``), not one JSON array."""
    return asks_stream(request) and ("alt", "sse") in request.query


def asks_array(request: Request) -> bool:
    """A stream request answered as one JSON array of chunks (no ``?alt=sse``)."""
    return ("alt", "sse") not in request.query


def plain_request(request: Request) -> Request:
    """The same call as ``:generateContent``, without ``alt=sse``."""
    if not asks_stream(request):
        return request
    path = request.path[: -len(STREAM_METHOD)] + PLAIN_METHOD
    query = tuple(pair for pair in request.query if pair != ("alt", "sse"))
    return Request(request.method, path, request.body, query, request.headers)


def finished(events: list[JSON]) -> bool:
    """The last chunk gives a candidate's ``finishReason`` (or the stream ended in an error)."""
    for event in reversed(events):
        data = event.get("data")
        if not isinstance(data, dict):
            continue
        if "error" in data:
            return True
        return any(isinstance(c, dict) and c.get("finishReason") for c in data.get("candidates") or [])
    return False


def events_of(request: Request, body: Any) -> list[JSON]:
    """The stream for a final ``generateContent`` body: one chunk holding all of it."""
    return [{"data": body}]


# the status an error body names for an HTTP status (gRPC's codes), so the SDK fills in ``.status``
_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    413: "INVALID_ARGUMENT",
    424: "FAILED_PRECONDITION",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


def error_body(status: int, kind: str, message: str) -> JSON:
    """An error as the API sends it: its HTTP status as ``code`` and gRPC's name for it as ``status``."""
    return {"error": {"code": status, "message": message, "status": _STATUS.get(status, "INTERNAL")}}


FORMAT = WireFormat(
    name="google",
    hosts=("generativelanguage.googleapis.com", "aiplatform.googleapis.com"),
    api_host="generativelanguage.googleapis.com",
    agents=("google-genai-sdk",),
    marker_headers=("x-goog-api-client",),
    credential_headers=("x-goog-api-key",),
    sdk_headers={},
    endpoints=re.compile(f":(?:{'|'.join(METHODS)})$"),
    seam_paths=tuple((f":{method}", "") for method in METHODS),
    asks_stream=asks_stream,
    plain_request=plain_request,
    events_of=events_of,
    finished=finished,
    array_stream=asks_array,
    error_body=error_body,
    model_in_path=model_of,
    model_key="modelVersion",
    usage_key="usageMetadata",
)
