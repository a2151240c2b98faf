"""Bodies as other recorders store them: text, ``!!binary`` bytes, ``base64_string``, hex, and the
content codings HTTP compresses them with (gzip, deflate, and brotli or zstd when installed).

A body that cannot be read is an error naming the file and interaction, never a body dropped.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from ..errors import CassetteFormatError
from ..wire.content_encoding import DecodeFailed, Decoder, decoder_module


def stored_bytes(body: Any, path: str, position: int, side: str) -> bytes | None:
    """The bytes of a vcrpy body (``str``, ``bytes``, ``{"string": ...}``, ``{"base64_string": ...}``);
    None when the body is absent."""
    if isinstance(body, dict):
        if "base64_string" in body:
            try:
                return base64.b64decode(body["base64_string"] or "", validate=True)
            except (binascii.Error, ValueError, TypeError):
                raise CassetteFormatError(
                    path, f"{side} base64_string is not base64; restore the file", entry=position
                ) from None
        if "string" not in body:
            raise CassetteFormatError(
                path,
                f"{side} body has none of 'string', 'base64_string' ({', '.join(map(str, body)) or 'empty'}):"
                " a serializer llmvcr does not know; convert it with the serializer that wrote it first",
                entry=position,
            )
        body = body["string"]
    if body is None:
        return None
    if isinstance(body, (bytes, bytearray)):
        return bytes(body)
    return str(body).encode("utf-8")


_EXTRAS = {"br": ("brotli", "brotli"), "zstd": ("zstandard", "zstd")}  # coding -> (module, llmvcr extra)


def _one(data: bytes, coding: str, path: str, position: int) -> bytes:
    if coding in _EXTRAS and decoder_module(coding) is None:
        module, extra = _EXTRAS[coding]
        raise CassetteFormatError(
            path,
            f"the response body is {coding}-compressed and {module} is not installed; "
            f"pip install 'llmvcr[{extra}]' and convert again",
            entry=position,
        )
    decoder = Decoder(coding)
    if not decoder.active:
        raise CassetteFormatError(
            path,
            f"the response body has an unknown content-encoding {coding!r}; decode it first",
            entry=position,
        )
    out = decoder.decode(data)
    decoder.finish()
    return out


def _plain(data: bytes) -> bool:
    """Bytes that are already readable text (vcrpy's decode_compressed_response leaves the header)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return not text or text.lstrip()[:1] in ("{", "[") or text.startswith(("event:", "data:", ":"))


def decompress(data: bytes, encoding: str, path: str, position: int) -> bytes:
    """``data`` with every content coding of ``encoding`` undone, last applied first."""
    codings = [c.strip().lower() for c in encoding.split(",") if c.strip() and c.strip() != "identity"]
    if not codings and data[:2] == b"\x1f\x8b":
        codings = ["gzip"]  # gzip bytes under a header a filter removed
    for coding in reversed(codings):
        if _plain(data):
            return data
        try:
            data = _one(data, coding, path, position)
        except DecodeFailed as err:
            raise CassetteFormatError(
                path,
                f"the response body does not decode as {coding} ({err}); "
                "restore the file from version control or re-record it",
                entry=position,
            ) from None
    return data


def hex_bytes(text: Any, path: str, position: int) -> bytes:
    """cassetter's ``binary`` bodies: hex digits (an all-digit one may have been read as a number)."""
    try:
        return bytes.fromhex(str(text))
    except ValueError:
        raise CassetteFormatError(
            path, "a binary body is not hex; restore the file", entry=position
        ) from None
