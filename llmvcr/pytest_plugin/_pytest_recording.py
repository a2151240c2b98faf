"""What the pytest plugin takes over from a pytest-recording suite: where its cassette files are,
and what its ``vcr_config`` means to llmvcr.

pytest-recording keeps a test's cassette at ``<vcr_cassette_dir>/<default_cassette_name>.yaml``:
the folder ``cassettes/<module>`` beside the test file unless the ``vcr_cassette_dir`` fixture is
overridden, and the test's name (``Class.test[params]``, the innermost class only) with
``<>?%*:|"'/\\`` each made ``-``, unless the ``default_cassette_name`` fixture or the
``default_cassette`` marker says otherwise. Names too long for a file are cut and end in an MD5 of
the whole name. This module computes the same path, so a marked test finds the file pytest-recording
wrote whatever its id holds (spaces, unicode, classes, nested folders).
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

import pytest

from ..matching.as_recorded import from_vcrpy_names, is_vcrpy_match_on
from ..options import RECORD_MODES

_FORBIDDEN = "<>?%*:|\"'/\\"
try:
    _NAME_MAX = os.pathconf(".", "PC_NAME_MAX")
except (AttributeError, ValueError, OSError):  # Windows: no pathconf
    _NAME_MAX = 255

# vcrpy options that concern how vcrpy itself records or stores; llmvcr redacts, decodes and
# stores on its own terms, so they have no meaning for an llmvcr cassette
VCRPY_ONLY_OPTIONS: dict[str, str] = {
    "decode_compressed_response": "llmvcr stores bodies decoded",
    "before_record_request": "use before_record (it receives an llmvcr Entry)",
    "before_record_response": "use before_record (it receives an llmvcr Entry)",
    "filter_query_parameters": "llmvcr drops credentials from queries itself; use redact=",
    "filter_post_data_parameters": "use redact= with a JSON path",
    "ignore_hosts": "llmvcr only answers the LLM SDKs' calls; other hosts are never recorded",
    "ignore_localhost": "llmvcr only answers the LLM SDKs' calls; other hosts are never recorded",
    "serializer": "llmvcr writes YAML (or JSON by a .json name)",
    "path_transformer": "use the marker's name or --llmvcr-dir",
    "cassette_library_dir": "use --llmvcr-dir",
    "record_on_exception": "llmvcr keeps what was recorded before an exception",
    "func_path_generator": "use the marker's name",
    "custom_patches": "llmvcr patches the SDKs itself",
    "drop_unused_requests": "use prune=True or llmvcr prune",
    "persister": "llmvcr writes its own files",
}


def default_cassette_name(request: pytest.FixtureRequest) -> str:
    """pytest-recording's name for the test's cassette: its fixture's, when the project overrides it."""
    try:
        return str(request.getfixturevalue("default_cassette_name"))
    except pytest.FixtureLookupError:  # pytest-recording not installed, no override
        pass
    marker = request.node.get_closest_marker("default_cassette")
    if marker is not None and marker.args:
        return str(marker.args[0])
    cls = getattr(request.node, "cls", None)
    name = f"{cls.__name__}.{request.node.name}" if cls is not None else str(request.node.name)
    for ch in _FORBIDDEN:
        name = name.replace(ch, "-")
    return name


def cassette_dir(request: pytest.FixtureRequest) -> str:
    """pytest-recording's folder for the module: the ``vcr_cassette_dir`` fixture's, when there is one."""
    try:
        return str(request.getfixturevalue("vcr_cassette_dir"))
    except pytest.FixtureLookupError:
        path = str(request.node.path)
        module = os.path.splitext(os.path.basename(path))[0]
        return os.path.join(os.path.dirname(path), "cassettes", module)


def cassette_path(request: pytest.FixtureRequest, vcr_config: dict[str, Any]) -> str:
    """Where pytest-recording keeps (or would write) this test's cassette."""
    name = default_cassette_name(request)
    suffix = "." + str(vcr_config["serializer"]) if "serializer" in vcr_config else ".yaml"
    if len(name) + len(suffix) > _NAME_MAX:  # as pytest-recording cuts a long name
        digest = hashlib.md5(name.encode()).hexdigest()
        name = f"{name[: _NAME_MAX - len(suffix) - len(digest) - 3]}...{digest}"
    return os.path.join(cassette_dir(request), name + suffix)


def vcr_config(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The project's ``vcr_config`` fixture's value, or ``{}`` when it has none."""
    try:
        value = request.getfixturevalue("vcr_config")
    except pytest.FixtureLookupError:
        return {}
    return dict(value) if isinstance(value, dict) else {}


def translate(config: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """An options dict that may hold vcrpy's keys (a ``vcr_config`` renamed ``llmvcr_config``) as
    llmvcr options, and the vcrpy keys that have no meaning here (``key (why)``).

    A ``match_on`` in vcrpy's names (``uri``, ``host``...) says how the cassettes were recorded: it
    becomes ``recorded_match_on``, so those cassettes keep matching as they did and new ones are
    matched by llmvcr's default.
    """
    out: dict[str, Any] = {}
    ignored: list[str] = []
    for key, value in config.items():
        if key in VCRPY_ONLY_OPTIONS:
            ignored.append(f"{key} ({VCRPY_ONLY_OPTIONS[key]})")
        elif key == "match_on" and is_vcrpy_match_on(value):
            from_vcrpy_names(value)  # a name neither tool knows: ValueError now, naming it
            out["recorded_match_on"] = [value] if isinstance(value, str) else list(value)
        elif key == "record_mode" and value == "rewrite":  # pytest-recording's name for 'all'
            out[key] = "all"
        elif key == "record_mode" and hasattr(value, "value"):  # vcrpy's RecordMode enum
            out[key] = str(value.value)
        elif key == "filter_headers" and not isinstance(value, str):
            # vcrpy takes (name, replacement) pairs too; llmvcr drops the header whatever it held
            out[key] = [h[0] if isinstance(h, (tuple, list)) else h for h in value]
        else:
            out[key] = value
    if "record_mode" in out and out["record_mode"] not in RECORD_MODES:
        out.pop("record_mode")
        ignored.append(f"record_mode={config['record_mode']!r} (not a record mode llmvcr knows)")
    return out, ignored


def recorded_match_on(request: pytest.FixtureRequest) -> list[str] | None:
    """The ``match_on`` of the project's ``vcr_config``: how its pytest-recording cassettes were matched."""
    value = vcr_config(request).get("match_on")
    if value is None:
        return None
    return [value] if isinstance(value, str) else [str(v) for v in value]
