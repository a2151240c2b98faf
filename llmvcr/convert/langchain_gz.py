"""LangChain's cassettes (``*.yaml.gz``): one gzip-compressed YAML document holding two parallel
lists, ``requests`` (``{method, uri, body, headers: {name: [value]}}``) and ``responses`` (vcrpy's
response mappings), the n-th response answering the n-th request.
"""

from __future__ import annotations

import gzip
import zlib
from typing import Any

from ..errors import CassetteFormatError
from ..storage.sniff import GZIP_MAGIC as GZIP_MAGIC


def interactions(data: bytes, path: str, loader: Any) -> list[Any]:
    """The file's requests and responses paired as vcrpy interactions."""
    try:
        text = gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as err:
        raise CassetteFormatError(
            path, f"a gzip file that does not decompress ({err}); restore it from version control"
        ) from None
    import yaml  # on first use: a process that reads no YAML never pays for PyYAML

    try:
        document = yaml.load(text, Loader=loader)  # a safe loader
    except yaml.YAMLError as err:
        raise CassetteFormatError(path, f"gzip-compressed, but not YAML inside ({err})") from None
    if not isinstance(document, dict) or not {"requests", "responses"} <= set(document):
        found = ", ".join(map(str, document)) if isinstance(document, dict) else type(document).__name__
        raise CassetteFormatError(
            path,
            f"gzip-compressed YAML without LangChain's 'requests' and 'responses' lists (found {found}); "
            "llmvcr reads LangChain's .yaml.gz cassettes and nothing else compressed",
        )
    requests, responses = document["requests"], document["responses"]
    if not isinstance(requests, list) or not isinstance(responses, list) or len(requests) != len(responses):
        raise CassetteFormatError(
            path,
            f"{len(requests) if isinstance(requests, list) else '?'} requests but "
            f"{len(responses) if isinstance(responses, list) else '?'} responses: they must pair up; "
            "restore the file from version control",
        )
    return [{"request": q, "response": r} for q, r in zip(requests, responses, strict=True)]
