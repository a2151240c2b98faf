"""Undo a response's ``content-encoding`` as its body arrives, so a recording keeps what the SDK read.

llmvcr asks for ``accept-encoding: identity`` when it records, but a server may compress anyway.
The HTTP library decodes the body for the SDK above the raw byte stream llmvcr tees, so the tee
decodes it the same way: gzip and deflate always, ``br`` and ``zstd`` when their module is
installed. An encoding no HTTP library knows is passed on as sent, as the HTTP library does.
"""

from __future__ import annotations

import importlib
import zlib
from collections.abc import Callable
from typing import Any

from ..errors import LLMVCRError, UndecodableError


class Step:
    """One encoding undone chunk by chunk; ``done`` tells whether its stream reached its end."""

    def __init__(self, decode: Callable[[bytes], bytes], done: Callable[[], bool]) -> None:
        self.name = ""
        self.decode = decode
        self.done = done


# encoding -> (module names to try, in order; the pip package that provides one)
_OPTIONAL: dict[str, tuple[tuple[str, ...], str]] = {
    "br": (("brotli", "brotlicffi"), "brotli"),
    "zstd": (("compression.zstd", "zstandard"), "zstandard"),
}


class DecodeFailed(Exception):
    """The body is not valid for its ``content-encoding``: the HTTP library will fail on it too."""


def _gzip() -> Step:
    """gzip, every member of a multi-member body."""
    state = {"obj": zlib.decompressobj(zlib.MAX_WBITS | 16)}

    def decode(chunk: bytes) -> bytes:
        out = [state["obj"].decompress(chunk)]
        while state["obj"].eof and state["obj"].unused_data:  # another gzip member follows
            rest = state["obj"].unused_data
            state["obj"] = zlib.decompressobj(zlib.MAX_WBITS | 16)
            out.append(state["obj"].decompress(rest))
        return b"".join(out)

    return Step(decode, lambda: bool(state["obj"].eof))


def _deflate() -> Step:
    # "deflate" is zlib-wrapped by the standard and raw in some servers: try the first, fall back once
    state: dict[str, Any] = {"obj": zlib.decompressobj(), "first": True}

    def decode(chunk: bytes) -> bytes:
        if state["first"]:
            state["first"] = False
            try:
                return bytes(state["obj"].decompress(chunk))
            except zlib.error:
                state["obj"] = zlib.decompressobj(-zlib.MAX_WBITS)
        return bytes(state["obj"].decompress(chunk))

    return Step(decode, lambda: bool(state["obj"].eof))


def decoder_module(encoding: str) -> Any:
    """The installed module that decodes ``br`` or ``zstd``, or None when none is."""
    for name in _OPTIONAL[encoding][0]:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        return module
    return None


def _optional(encoding: str) -> Step:
    module = decoder_module(encoding)
    if module is None:
        raise UndecodableError(
            f"the server sent this response with content-encoding: {encoding} although llmvcr asked for "
            f"none, and no {encoding} decoder is installed, so its body cannot be recorded (nothing was "
            f"written for this call). pip install {_OPTIONAL[encoding][1]}, or have the server honour "
            f"'accept-encoding: identity'"
        )
    name = module.__name__
    if name == "brotli":
        brotli = module.Decompressor()
        return Step(brotli.process, brotli.is_finished)
    if name == "brotlicffi":
        cffi = module.Decompressor()
        return Step(cffi.decompress, cffi.is_finished)
    zstd = module.ZstdDecompressor().decompressobj() if name == "zstandard" else module.ZstdDecompressor()
    return Step(zstd.decompress, lambda: bool(zstd.eof))


_BUILTIN: dict[str, Callable[[], Step]] = {"gzip": _gzip, "x-gzip": _gzip, "deflate": _deflate}


class Decoder:
    """Undoes ``content-encoding`` (a header value such as ``"gzip"`` or ``"deflate, br"``) chunk by chunk.

    ``decode`` raises :class:`UndecodableError` for ``br``/``zstd`` without their module, and
    :class:`DecodeFailed` when the bytes are not what the header says; ``finish`` raises
    :class:`DecodeFailed` when the body ended before its compressed stream did (a cut body).
    """

    def __init__(self, content_encoding: str) -> None:
        self.names = [n.strip().lower() for n in content_encoding.split(",") if n.strip()]
        self._steps: list[Step] | None = None

    @property
    def active(self) -> bool:
        """Whether any encoding this decoder knows of is applied (identity and unknown ones are not)."""
        return any(n in _BUILTIN or n in _OPTIONAL for n in self.names)

    def _build(self) -> list[Step]:
        steps: list[Step] = []
        for name in reversed(self.names):  # the last encoding applied is undone first
            if name in _BUILTIN:
                steps.append(_BUILTIN[name]())
            elif name in _OPTIONAL:
                steps.append(_optional(name))
            else:
                continue  # identity, or an encoding no HTTP library undoes: passed on as sent
            steps[-1].name = name
        return steps

    def decode(self, chunk: bytes) -> bytes:
        if self._steps is None:
            self._steps = self._build()
        try:
            for step in self._steps:
                chunk = step.decode(chunk)
        except (zlib.error, OSError, ValueError) as err:
            raise DecodeFailed(str(err)) from None
        except Exception as err:  # brotli.error, zstandard.ZstdError: their own classes
            if isinstance(err, LLMVCRError):
                raise
            raise DecodeFailed(f"{type(err).__name__}: {err}") from None
        return chunk

    def finish(self) -> None:
        """Check, once the whole body was decoded, that no compressed stream was cut short."""
        for step in self._steps or []:
            if not step.done():
                raise DecodeFailed(f"the {step.name} stream ends early: the body was cut")
