"""A ``multipart/form-data`` body as its parts, so the boundary the HTTP library picks at random
(httpx: 32 random hex digits per request) does not decide whether a request matches.

A stored body is a string, or ``{"base64": ...}`` when it is not UTF-8 (``providers.http.parse_body``);
the content type is not kept, so a body counts as multipart by its shape: it opens with a
delimiter line and closes with the same delimiter followed by ``--``.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

# RFC 2046: a boundary is 1-70 characters from this set (a space only inside, and no one sends it)
_OPENING = rb"--([0-9A-Za-z'()+_,\-./:=?]{1,70})\r\n"  # compiled at the first multipart body


def _raw(body: Any) -> bytes | None:
    if isinstance(body, str):
        return body.encode("utf-8", "surrogatepass") if body.startswith("--") else None
    if isinstance(body, dict) and len(body) == 1 and isinstance(body.get("base64"), str):
        try:
            data = base64.b64decode(body["base64"], validate=True)
        except (binascii.Error, ValueError):
            return None
        return data if data.startswith(b"--") else None
    return None


def _part(chunk: bytes) -> dict[str, Any]:
    if chunk.startswith(b"\r\n"):  # a part without headers
        head, content = b"", chunk[2:]
    else:
        head, _, content = chunk.partition(b"\r\n\r\n")
    headers = []
    for line in head.split(b"\r\n"):
        name, _, value = line.decode("latin-1").partition(":")
        if name.strip():
            headers.append([name.strip().lower(), value.strip()])
    try:
        text: Any = content.decode("utf-8")
    except UnicodeDecodeError:
        text = {"base64": base64.b64encode(content).decode("ascii")}
    return {"headers": sorted(headers), "content": text}


def multipart_parts(body: Any) -> list[dict[str, Any]] | None:
    """The parts of a stored multipart body (each ``{"headers": [[name, value], ...], "content": ...}``,
    header names lower-cased), or None when ``body`` is not one."""
    data = _raw(body)
    if data is None:
        return None
    opening = re.match(_OPENING, data)
    if opening is None:
        return None
    delimiter = b"\r\n--" + opening.group(1)
    end = data.rfind(delimiter + b"--")
    if end < opening.end() or data[end + len(delimiter) + 2 :].strip(b"\r\n"):
        return None
    # every part follows "\r\n--boundary\r\n"; a boundary not at a line start is content
    return [_part(chunk) for chunk in data[opening.end() : end].split(delimiter + b"\r\n")]


def canonical_body(body: Any) -> Any:
    """``body`` as requests are matched on it: a multipart body as ``{"multipart": parts}``, else as is."""
    parts = multipart_parts(body)
    return body if parts is None else {"multipart": parts}
