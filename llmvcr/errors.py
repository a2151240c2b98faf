"""The exceptions llmvcr raises: one shallow hierarchy under :class:`LLMVCRError`."""

from __future__ import annotations

from typing import Any


class LLMVCRError(Exception):
    """Base class of every error llmvcr raises on its own account."""


class ReplayDivergence(LLMVCRError):
    """A live request that no recorded entry answers, and the cassette may not record it.

    ``diff`` lists ``(path, recorded, live)`` against the nearest recorded request (empty when
    the cassette has no request on the same endpoint); ``cassette_path`` names the file.
    """

    def __init__(
        self,
        message: str,
        *,
        cassette_path: str = "",
        diff: list[tuple[str, Any, Any]] | None = None,
        request: Any = None,
    ) -> None:
        super().__init__(message)
        self.cassette_path = cassette_path
        self.diff = diff or []
        self.request = request


class CassetteNotFoundError(LLMVCRError, FileNotFoundError):
    """A cassette was asked to replay (``record_mode="none"``, ``load_cassette``) but the file is missing."""


class CassetteFormatError(LLMVCRError, ValueError):
    """A cassette file could not be read: corrupt, truncated, hand-broken, unsafe or from a newer llmvcr.

    The message names the file, the entry and the field, and says what to do.
    """

    def __init__(self, path: str, detail: str, *, entry: int | None = None, field: str | None = None) -> None:
        where = path
        if entry is not None:
            where += f", entry {entry}"
        if field is not None:
            where += f", field {field!r}"
        super().__init__(f"{where}: {detail}")
        self.path = path
        self.entry = entry
        self.field = field


class ReplayDivergenceWarning(UserWarning):
    """Issued by ``on_divergence="warn"``: no entry matched, the next unused one was served instead."""


class NetworkBlockedError(LLMVCRError):
    """A connection was attempted while llmvcr blocks the network (``--llmvcr-block-network``)."""


class UnrecognizedRequestError(LLMVCRError):
    """An HTTP request inside a replay-only cassette that no provider claims: it would reach the network.

    Register a provider for its SDK (``llmvcr.register_provider``), or let it through with the
    cassette option ``allow_unrecognized=["host"]``.
    """


class UnrecordedCallWarning(UserWarning):
    """A recording cassette let HTTP requests through that no provider claims: they are not in the file."""


class EditedCassetteWarning(UserWarning):
    """A cassette entry's stored ``request_hash`` no longer fits its request: it was edited by hand."""
