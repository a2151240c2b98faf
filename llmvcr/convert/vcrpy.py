"""vcrpy and pytest-recording cassettes (and the layouts built on them: pydantic-ai's
``parsed_body`` serializer, cassetter's typed bodies, LangChain's ``.yaml.gz``) imported as llmvcr
entries.

Each interaction with a provider :mod:`llmvcr.wire` describes (Anthropic, OpenAI, Gemini) becomes
the record llmvcr itself would have made of the call
(see :mod:`llmvcr.convert.http_import`). Nothing is dropped in silence: an interaction llmvcr cannot
read is an error naming the file and the interaction, and a file whose interactions are none of
them LLM calls is an error too, never an empty cassette.

>>> cassette = llmvcr.from_vcrpy("tests/cassettes/test_chat.yaml")
>>> llmvcr.save_cassette("cassettes/test_chat.yaml", cassette)
"""

from __future__ import annotations

import functools
import json
import os
import warnings
from typing import Any
from urllib.parse import urlsplit

from ..cassette import Cassette, Entry
from ..cassette.schema import LLMVCR_VERSION
from ..errors import CassetteFormatError, ConversionWarning
from ..wire import formats
from ..wire.http_request import Parsed
from . import cassetter, langchain_gz
from .encodings import stored_bytes
from .foreign_calls import other_entry
from .http_import import Exchange, entry_of, header_items
from .neutral import JSON

FORMATS = ("vcrpy", "pydantic-ai", "cassetter", "langchain-gz")  # the layouts from_vcrpy names


class NoLLMCallsError(CassetteFormatError):
    """A cassette whose interactions are all calls to other hosts: nothing for llmvcr to replay.

    ``interactions`` counts them and ``hosts`` names the hosts they went to.
    """

    interactions: int = 0
    hosts: tuple[str, ...] = ()


@functools.cache
def vcr_loader() -> Any:
    """A safe loader that also reads the few plain Python tags vcrpy writes (str, unicode, tuple);
    PyYAML is imported on first use (libyaml's loader when PyYAML has it: ~10x faster)."""
    import yaml

    class VcrLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
        pass

    scalar = lambda loader, node: loader.construct_scalar(node)  # noqa: E731
    VcrLoader.add_constructor("tag:yaml.org,2002:python/str", scalar)
    VcrLoader.add_constructor("tag:yaml.org,2002:python/unicode", scalar)
    VcrLoader.add_constructor(
        "tag:yaml.org,2002:python/tuple", lambda loader, node: list(loader.construct_sequence(node))
    )
    return VcrLoader


def read_document(path: str, data: bytes | None = None) -> Any:
    """A vcrpy cassette file (YAML, JSON from vcrpy's json serializer, LangChain's gzip) as plain data."""
    if data is None:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise CassetteFormatError(path, "no such vcrpy cassette") from None
    if data[:2] == langchain_gz.GZIP_MAGIC:
        return {"interactions": langchain_gz.interactions(data, path, vcr_loader()), "layout": "langchain-gz"}
    import yaml

    try:
        if path.lower().endswith(".json"):
            return json.loads(data)
        return yaml.load(data, Loader=vcr_loader())  # a SafeLoader
    except ValueError as err:
        raise CassetteFormatError(path, f"not a readable vcrpy cassette (not JSON: {err})") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise CassetteFormatError(path, f"not a readable vcrpy cassette (invalid YAML{where})") from None


def _exchange(raw: dict[str, Any], position: int, path: str) -> Exchange:
    req, res = raw["request"], raw["response"]
    if req.get("body") is None and "parsed_body" in req:  # pydantic-ai's serializer keeps JSON parsed
        request_body: Any = Parsed(req["parsed_body"])
    else:
        request_body = stored_bytes(req.get("body"), path, position, "request")
    if "status_code" in res:  # the httpx stub of vcrpy < 5
        status: Any = res["status_code"]
        response_body: Any = stored_bytes(res.get("content"), path, position, "response")
    else:
        status = res.get("status")
        status = status.get("code") if isinstance(status, dict) else status
        if res.get("body") is None and "parsed_body" in res:
            response_body = Parsed(res["parsed_body"])
        else:
            response_body = stored_bytes(res.get("body"), path, position, "response")
    return Exchange(
        method=str(req.get("method", "GET")),
        uri=str(req.get("uri", "")),
        request_headers=header_items(req.get("headers")),
        request_body=request_body,
        status=status,
        response_headers=header_items(res.get("headers")),
        response_body=response_body,
    )


def _layout(document: dict[str, Any], interactions: list[Any]) -> str:
    if document.get("layout") == "langchain-gz":
        return "langchain-gz"
    if cassetter.is_cassetter(interactions):
        return "cassetter"
    if any(isinstance(i, dict) and "parsed_body" in (i.get("request") or {}) for i in interactions):
        return "pydantic-ai"
    return "vcrpy"


def from_vcrpy(path: str | os.PathLike[str], data: bytes | None = None) -> Cassette:
    """Import a vcrpy / pytest-recording cassette of Anthropic, OpenAI or Gemini HTTP calls as an llmvcr
    cassette (any provider :mod:`llmvcr.wire` describes).

    Also reads pydantic-ai's ``parsed_body`` serializer, cassetter's typed bodies and LangChain's
    ``.yaml.gz``. Bodies are read whether stored as text, ``!!binary`` bytes or ``base64_string``,
    pretty-printed or compact, gzip/deflate (brotli and zstd with the ``brotli``/``zstd`` extras)
    compressed or not; headers as strings or lists. Credentials are dropped; each entry's
    ``request_hash`` is the one llmvcr computes live, so the result replays through the SDKs with
    ``record_mode="none"``, several answers to one request in their recorded order.

    Interactions with other hosts are left out with a :class:`~llmvcr.errors.ConversionWarning`;
    anything llmvcr cannot read raises :class:`~llmvcr.errors.CassetteFormatError` naming the
    interaction, as does a file of interactions none of which is an LLM call.
    """
    path = os.fspath(path)
    document = read_document(path, data)
    interactions = document.get("interactions") if isinstance(document, dict) else None
    if not isinstance(interactions, list):
        raise CassetteFormatError(
            path, "no 'interactions' list: this is not a vcrpy cassette", field="interactions"
        )
    layout = _layout(document, interactions)
    versions: dict[str, str] = {"llmvcr": LLMVCR_VERSION}
    entries: list[Entry] = []
    others: list[tuple[int, Entry]] = []  # non-LLM calls, answered from the file as vcrpy did
    left_out: list[str] = []
    notes: list[str] = []
    for position, raw in enumerate(interactions):
        if not isinstance(raw, dict) or not all(
            isinstance(raw.get(k), dict) for k in ("request", "response")
        ):
            raise CassetteFormatError(path, "an interaction needs a request and a response", entry=position)
        if layout == "cassetter":
            exchange = cassetter.exchange_of(raw, position, path)
        else:
            exchange = _exchange(raw, position, path)
        result = entry_of(exchange, position, path, versions, notes)
        if isinstance(result, str):
            other = other_entry(exchange, position)
            if isinstance(other, str):
                left_out.append(other)
            else:
                others.append((len(entries) + len(others), other))
        else:
            entries.append(result)
    if interactions and not entries:  # the LLM calls: a file of other calls only stays vcrpy's
        hosts = sorted(
            {urlsplit(str((i.get("request") or {}).get("uri", ""))).hostname or "?" for i in interactions}
        )
        error = NoLLMCallsError(
            path,
            f"none of its {len(interactions)} interaction(s) is a call of a provider llmvcr knows "
            f"({', '.join(f.name for f in formats())}): they went to {', '.join(hosts)} "
            f"({'; '.join(left_out[:3])}); there is nothing for llmvcr to replay: leave the file to vcrpy",
        )
        error.interactions, error.hosts = len(interactions), tuple(hosts)
        raise error
    metadata: JSON = {"converted_from": {"format": layout, "file": os.path.basename(path)}}  # no local paths
    cassette = Cassette(recorded_with=versions, metadata=metadata)
    for position, other in others:  # back in recording order among the LLM calls
        entries.insert(position, other)
    for entry in entries:
        cassette.append(entry)
    if left_out or notes:
        warnings.warn(f"{path}: " + "; ".join(left_out + notes), ConversionWarning, stacklevel=2)
    return cassette
