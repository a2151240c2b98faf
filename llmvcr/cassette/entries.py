"""The data llmvcr records: a request, its response, and the entry that pairs them.

Plain frozen values with no behaviour beyond a normalised view; how they are written to a file
is ``llmvcr.cassette.schema``'s business, how they are matched ``llmvcr.matching.rules``'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .values import FrozenValue


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Request(FrozenValue):
    """The semantic request: what was asked, without the SDK's noise or any credential."""

    method: str
    path: str
    body: Any = None
    query: tuple[tuple[str, str], ...] = ()
    headers: Mapping[str, str] = field(default_factory=dict)

    def normalised(self) -> dict[str, Any]:
        """The plain form matchers and diffs see."""
        return {
            "method": self.method,
            "path": self.path,
            "query": [list(pair) for pair in self.query],
            "headers": dict(self.headers),
            "body": self.body,
        }


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Response(FrozenValue):
    """The semantic response: status, a few headers, and a JSON body or a list of stream events.

    ``stream`` holds ``{"event": name?, "data": parsed-json-or-text, "t": ms-offset?}``
    mappings. ``truncated`` marks a stream the caller stopped reading early while recording;
    ``failure`` is the connection error that ended a stream mid-way, replayed as the same error.
    ``as_asked`` marks an answer whose source did not record whether the call streamed (a trace):
    it is served in the shape the live request asks for, a stream built from ``body`` with the
    provider's event grammar when the request streams (``llmvcr.wire``).
    """

    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    body: Any = None
    stream: list[dict[str, Any]] | None = None
    truncated: bool = False
    failure: str | None = None
    as_asked: bool = False


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Entry(FrozenValue):
    """One recorded exchange.

    ``hashed_as_sent`` marks an entry whose ``before_record`` hook changed the request it stores:
    ``request_hash`` is then the hash of the request as it was sent, which replay must still find,
    and not a sign of a hand edit.
    """

    provider: str
    request: Request
    response: Response
    request_hash: str
    hashed_as_sent: bool = False
