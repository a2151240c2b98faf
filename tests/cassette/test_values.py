"""llmvcr's dataclasses take ``==``, ``hash`` and ``repr`` from ``llmvcr.cassette.values`` instead of having
them generated at import: they must answer exactly as the generated methods would."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import re
import threading
from typing import Any

import pytest

import llmvcr
from llmvcr.cassette.entries import Entry, Request, Response
from llmvcr.cassette.values import FrozenValue, Value
from llmvcr.matching.rules import Placeholder
from llmvcr.options import Options, Settings


def _twin(cls: type) -> type:
    """The same fields under the stdlib's own generated methods, for comparison."""
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    fields = [(f.name, f.type, f) for f in dataclasses.fields(cls)]
    copies = []
    for name, kind, f in fields:
        copies.append((name, kind, dataclasses.field(default=f.default, default_factory=f.default_factory, repr=f.repr, compare=f.compare)))  # fmt: skip
    return dataclasses.make_dataclass(cls.__name__, copies, frozen=params.frozen)


def _same_as_generated(a: Any, b: Any) -> None:
    twin = _twin(type(a))
    ta = twin(**{f.name: getattr(a, f.name) for f in dataclasses.fields(a) if f.init})
    tb = twin(**{f.name: getattr(b, f.name) for f in dataclasses.fields(b) if f.init})
    assert (a == b) is (ta == tb)
    assert (a != b) is (ta != tb)
    assert repr(a).replace(type(a).__qualname__, "X", 1) == repr(ta).replace(twin.__qualname__, "X", 1)
    try:
        expected: object = hash(ta) == hash(tb)
    except TypeError as err:
        expected = type(err)
    try:
        got: object = hash(a) == hash(b)
    except TypeError as err:
        got = type(err)
    assert got == expected


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (Request("POST", "/v1/messages", {"a": 1}), Request("POST", "/v1/messages", {"a": 1})),
        (Request("POST", "/v1/messages", {"a": 1}), Request("POST", "/v1/messages", {"a": 2})),
        (Response(200, body="x"), Response(200, body="x")),
        (Response(200, stream=[{"data": 1}]), Response(500, stream=[{"data": 1}])),
        (Placeholder(re.compile(r"\d+"), "n"), Placeholder(re.compile(r"\d+"), "n")),
        (Placeholder(re.compile(r"\d+"), "n"), Placeholder(re.compile(r"\d+"), "m")),
        (Settings(), Settings()),
        (Settings(record_mode="none"), Settings()),
    ],
)
def test_equality_hash_and_repr_answer_as_the_generated_ones(a: Any, b: Any) -> None:
    _same_as_generated(a, b)


def test_an_entry_compares_its_nested_values_and_hashes_when_they_do() -> None:
    req = Request("POST", "/p", None, (("a", "b"),), {})
    one = Entry("anthropic", req, Response(200), "sha256:1")
    assert one == Entry(
        "anthropic", Request("POST", "/p", None, (("a", "b"),), {}), Response(200), "sha256:1"
    )
    assert one != Entry("openai", req, Response(200), "sha256:1")
    with pytest.raises(TypeError, match="unhashable type: 'dict'"):  # headers are a dict, as before
        hash(one)
    frozen = Placeholder(re.compile("x"), "n")
    assert len({frozen, Placeholder(re.compile("x"), "n")}) == 1


def test_only_the_same_class_is_equal_and_a_mutable_value_is_unhashable() -> None:
    assert Settings() != object()
    assert Settings().__eq__(object()) is NotImplemented
    with pytest.raises(TypeError, match="unhashable"):
        hash(Settings())
    with pytest.raises(dataclasses.FrozenInstanceError):
        Request("GET", "/").method = "POST"  # type: ignore[misc]
    options = Options(record_mode="none")
    assert dataclasses.replace(options, record_mode="all").record_mode == "all"
    assert "record_mode='none'" in repr(options)


def test_a_lock_field_left_out_of_repr_stays_out() -> None:
    from llmvcr.pytest_plugin._summary import RunSummary

    summary = RunSummary()
    assert "lock" not in repr(summary)
    assert isinstance(summary.lock, type(threading.Lock()))


def _llmvcr_dataclasses() -> list[type]:
    found = []
    for info in pkgutil.walk_packages(llmvcr.__path__, "llmvcr."):
        # commands and pages a test run never imports: their import time is not the plugin's
        if info.name.startswith(
            ("llmvcr.cli", "llmvcr.convert", "llmvcr.demo", "llmvcr.__main__", "llmvcr.proxy", "llmvcr.view")
        ):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if isinstance(value, type) and value.__module__ == info.name and dataclasses.is_dataclass(value):
                found.append(value)
    return found


def test_every_dataclass_outside_the_commands_and_converters_inherits_its_methods() -> None:
    """A new dataclass written as ``@dataclass`` alone would compile its methods at import again."""
    classes = _llmvcr_dataclasses()
    assert len(classes) >= 20
    generated = [
        c.__qualname__
        for c in classes
        if c.__dataclass_params__.eq or c.__dataclass_params__.repr  # type: ignore[attr-defined]
    ]
    assert not generated, (
        f"declare these @dataclass(eq=False, repr=False) over llmvcr.cassette.values.Value: {generated}"
    )
    wrong_base = [
        c.__qualname__
        for c in classes
        if c.__dataclass_params__.eq is False  # type: ignore[attr-defined]
        and c.__qualname__ != "Decision"  # one call's answer: equal only to itself
        and not issubclass(c, FrozenValue if c.__dataclass_params__.frozen else Value)  # type: ignore[attr-defined]
    ]
    assert not wrong_base, wrong_base
