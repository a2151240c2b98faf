"""The fast YAML path and the parse cache give exactly what PyYAML's safe loader gives.

The property test at the end draws small documents from a grammar of scalars YAML 1.1 and rapidyaml
may read differently. It runs derandomised (the same 400 documents on every run, in CI as on a
laptop); the documents it found once are fixed cases in ``FOUND``. A longer, random search is started
by hand, and prints any document it finds (add it to ``FOUND``)::

    LLMVCR_HYPOTHESIS=long pytest -p no:xdist tests/storage/test_parse_cache.py -k every_document

``long`` draws 20,000 documents (several minutes; ``LLMVCR_HYPOTHESIS_EXAMPLES=N`` sets another count,
1,500 is about a minute).
"""

from __future__ import annotations

import datetime
import glob
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import llmvcr
from llmvcr.cli import main
from llmvcr.storage import parse_cache, yaml_guard
from llmvcr.storage.parse_cache import ParseCache, cache_folder_for, parse_yaml, parse_yaml_pyyaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# other recorders' cassettes (tests/data/vcrpy_real) are read by the vcrpy importer's own loader,
# never by parse_yaml: their !!binary bodies and bare timestamps are not llmvcr's to keep equal
CASSETTES = sorted(
    p
    for p in glob.glob(os.path.join(ROOT, "tests", "**", "*.y*ml"), recursive=True)
    + glob.glob(os.path.join(ROOT, "cassettes", "**", "*.y*ml"), recursive=True)
    if os.path.join("tests", "data", "vcrpy_real") not in p and "node_modules" not in p  # npm's own files
)

# documents where rapidyaml and PyYAML's YAML 1.1 disagree, or that PyYAML refuses
RISKY = [
    "a: yes\nb: off\n",
    "a: 1e5\n",
    "a: 1_000\n",
    "a: 017\n",
    "a: 1:20\n",
    "a: 2024-01-02\n",
    "a: .nan\n",
    "a: &x [1, 2]\n",  # an anchor no alias uses (aliases are refused: tests/test_bad_input.py)
    "a: [1.5e+3, 2]\n",
]


def test_there_are_cassettes_to_compare() -> None:
    assert len(CASSETTES) >= 3


@pytest.mark.parametrize("path", CASSETTES, ids=os.path.basename)
def test_rapidyaml_and_the_fast_path_equal_pyyaml_on_every_cassette(path: str) -> None:
    with open(path, "rb") as f:
        data = f.read()
    expected = parse_yaml_pyyaml(data)
    if not yaml_guard.risky(data):  # what the guard lets through, rapidyaml alone reads the same
        assert repr(_rapidyaml()(data)) == repr(expected)
    assert repr(parse_yaml(data)) == repr(expected)


REAL_WORLD = sorted(glob.glob(os.path.join(ROOT, "tests", "data", "**", "*.y*ml"), recursive=True))


def test_there_are_real_world_cassettes() -> None:
    assert len([p for p in REAL_WORLD if os.path.join("data", "vcrpy_real") in p]) >= 20


@pytest.mark.parametrize("path", REAL_WORLD, ids=lambda p: os.path.relpath(p, ROOT))
def test_every_real_world_cassette_reads_as_pyyamls_safe_loader(path: str) -> None:
    # other projects' files (bare dates, !!binary and python/* tags): the same document, or the same refusal
    with open(path, "rb") as f:
        data = f.read()
    try:
        expected = repr(yaml.load(data, Loader=yaml.CSafeLoader))
    except yaml.YAMLError as error:
        with pytest.raises(type(error)):
            parse_yaml(data)
    else:
        assert repr(parse_yaml(data)) == expected


@pytest.mark.parametrize("text", RISKY)
def test_documents_yaml_versions_read_differently_go_to_pyyaml(text: str) -> None:
    data = text.encode()
    # repr compares types too (1.0 == 1, True == 1) and reads nan as nan
    assert repr(parse_yaml(data)) == repr(parse_yaml_pyyaml(data))


def _rapidyaml() -> Any:
    read = parse_cache.rapidyaml_reader()
    assert read is not None, "rapidyaml is a dependency on this platform"
    return read


def test_rapidyaml_alone_would_read_them_differently() -> None:
    # the guard is there for a reason: these are what rapidyaml reads differently from PyYAML
    for text in (b"a: yes\n", b"a: 1e5\n", b"a: 2024-01-02\n", b"a: True\n", b"a: ~\n", b"1: a\n"):
        assert _rapidyaml_or_error(text) != repr(parse_yaml_pyyaml(text))


@pytest.mark.parametrize("path", CASSETTES, ids=os.path.basename)
def test_without_rapidyaml_pyyaml_is_the_fallback(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parse_cache, "fast_parser", lambda: None)
    with open(path, "rb") as f:
        data = f.read()
    assert parse_yaml(data) == yaml.load(data, Loader=yaml.CSafeLoader)


TIMED_STREAM = (
    b"response:\n  stream:\n  - data: {}\n  timing: [0.0, 12.5, 30, null, 42.61, 42.61, 42.61, 42.61, 42.61, "
    b"42.61, 42.61, 42.61, 42.61,\n    42.61, 50.0]\n  status: 200\n"
)


def test_a_streams_timing_line_keeps_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # every recorded stream has one (wrapped when long); numbers both YAML versions read alike
    expected = yaml.load(TIMED_STREAM, Loader=yaml.CSafeLoader)
    _fast_path_only(monkeypatch)
    assert parse_yaml(TIMED_STREAM) == expected


@pytest.mark.parametrize("flow", [b"[yes, 1]", b"[1, 012]", b"[1e5]", b"[1, 2] # note", b"[0x1F]"])
def test_other_flow_lists_still_go_to_pyyaml(flow: bytes) -> None:
    assert yaml_guard.risky(b"a: " + flow + b"\n")


def _assert_reads_as_pyyaml(data: bytes) -> None:
    """parse_yaml gives what PyYAML gives (repr compares types too), or raises the error it raises."""
    try:
        expected = repr(parse_yaml_pyyaml(data))
    except yaml.YAMLError as error:
        with pytest.raises(type(error)):
            parse_yaml(data)
    else:
        assert repr(parse_yaml(data)) == expected


def _fast_path_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parse_cache, "fast_parser", _rapidyaml)  # also under LLMVCR_YAML=pyyaml

    def refuse(data: bytes) -> object:
        raise AssertionError("sent to PyYAML")

    monkeypatch.setattr(parse_cache, "parse_yaml_pyyaml", refuse)


LINEAR = (
    b"version: 2\nentries:\n- request:\n    body:\n      system: hello\n      messages: [1, 2]\n"
    b"- request:\n    body:\n      system: {same_as: 0}\n      tools: {same_as: 0}\n"
    b"      messages:\n        extends: 0\n        append:\n        - role: user\n"
)


def test_a_linear_layouts_references_keep_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # {same_as: N} with N a plain decimal is the same mapping in YAML 1.1 and 1.2
    expected = yaml.load(LINEAR, Loader=yaml.CSafeLoader)
    _fast_path_only(monkeypatch)
    assert parse_yaml(LINEAR) == expected
    assert expected["entries"][1]["request"]["body"]["system"] == {"same_as": 0}


@pytest.mark.parametrize(
    "flow",
    [
        *(b"{same_as: %s}" % n for n in (b"yes", b"0x1", b"007", b"1e5", b"-1", b"[1]", b"0, b: 1")),
        *(b"{other: 0}", b"{same_as: 0} # note", b"{same_as: 0}: key", b"{same_as:0}"),
    ],
)
def test_other_flow_mappings_still_go_to_pyyaml(flow: bytes) -> None:
    data = b"a: " + flow + b"\n"
    assert yaml_guard.risky(data)
    _assert_reads_as_pyyaml(data)


# where a node starts: a tag or an anchor there is one, elsewhere it is text
NODE_STARTS = [
    b"",
    b"a: ",
    b"a:  ",
    b"- ",
    b"- - ",
    b"? ",
    b"--- ",
    b"a:\n  ",
    b"a:\n\n  ",
    b"a: # c\n  ",
    b"a: 1\n",
]


@pytest.mark.parametrize("prop", [b"!!str", b"&x", b"!t", b"!!binary"])
@pytest.mark.parametrize("before", NODE_STARTS)
def test_a_tag_or_anchor_where_a_node_starts_goes_to_pyyaml(before: bytes, prop: bytes) -> None:
    key = b" k: v" if before in (b"", b"a: 1\n") else b" 1e5"  # at a line's start: a key's property
    data = before + prop + key + b"\n"
    assert yaml_guard.risky(data)
    _assert_reads_as_pyyaml(data)


@pytest.mark.parametrize("prop", [b"&x [1, 2]", b"!!set {a}", b"!!str 1", b"&x"])
@pytest.mark.parametrize("before", [b"a: [", b"a: [1, ", b"a: [1,", b"a: {b: ", b"a: {b:", b'a: {"b":'])
def test_a_property_inside_a_flow_collection_goes_to_pyyaml(before: bytes, prop: bytes) -> None:
    data = before + prop + (b"}" if b"{" in before else b"]") + b"\n"
    assert yaml_guard.risky(data)
    _assert_reads_as_pyyaml(data)


@pytest.mark.parametrize(
    "text",
    [
        b"a: b &x\n",  # inside a plain scalar: text in both
        b"a: 'x &y !z [1e5]'\n",
        b"a: |\n  - **bold** and *this*\n  1. step one\n",  # an LLM's markdown in a block scalar
        b"a: see [1] and {x}\n",
        b'a: |\n  The result:\n\n  ok\n  {"a": 1}\n  [1, "x"]\n',  # JSON lines in a block scalar
    ],
)
def test_text_that_only_looks_like_a_tag_keeps_the_fast_path(text: bytes) -> None:
    assert not yaml_guard.risky(text)
    _assert_reads_as_pyyaml(text)


# documents ryaml (the fast reader before rapidyaml) read differently from PyYAML
READ_DIFFERENTLY = [
    b"yes: 1\n",  # a key
    b"1e5: a\n",
    b"a:\n  1e5\n",  # a value on its own line
    b"a:\n  yes\n",
    b"- a\n- \n  off\n",
    b"a: 0o17\n",  # YAML 1.2's octal
    b"a: -0o17\n",
    b"a: +.5\n",
    b"a: 12e+1\n",
    b"a: 1.5e3\n",
    b"a: yes\r\nb: 1e5\r\n",  # a Windows checkout
    b"a:\n  [1e5]\n",  # a flow collection on its own line
    b"a: [\n  1e5]\n",
    b"[1e5]\n",
    b"? a\n:  1e5\n",
    b"a: 1" + b"0" * 320 + b".0\n",  # PyYAML: inf
    b"a: 1.0e+309\n",
    b"a: x\xe2\x80\xa8b: 1e5\n",  # LS: a line break only in YAML 1.1
]
RAPIDYAML_READS_DIFFERENTLY = [
    # rapidyaml's JSON types only lowercase true/false/null and JSON numbers, and keeps keys as text
    b"a: True\n",
    b"a: FALSE\n",
    b"- Null\n",
    b"a:\n  ~\n",
    b"1: a\n",
    b"- -1.5: a\n",
    b"a:\n  true: 1\n",
    b"null: a\n",
    b"a: 1\nb: *x\n",  # an alias with no anchor: PyYAML refuses it, rapidyaml reads text
    b"- *x\n",
    b"a: @x\n",  # a reserved indicator
    b"a: `x\n",
    b"- ?\n",
    b"---\na: 1\n",  # a document marker: rapidyaml reads a stream of documents
    b"a: 1\n---\nb: 2\n",
]
# what the property test below found, kept as fixed cases: a key PyYAML resolves with spaces before
# its colon, an explicit key, an empty key PyYAML refuses, and the words rapidyaml writes as .nan/.inf
FOUND = [
    b"0 : x\n",
    b"1.5 : y\n",
    b"true : y\n",
    b"- -0 : x\n",
    b"a:\n  null  : 0\n",
    b"? 0\n: x\n",
    b"a: 1\n? 1.5\n: x\n",
    b"- ? true\n  : x\n",
    b"a:\n  : 0\n",
    b": x\n",
    b"- : x\n",
    b"a: b\n: c\n",
    b"a: nan\n",
    b"- -inf\n",
    b"a:\n  infinity\n",
    b"inf: x\n",
    b"'nan': 1\n",
    b'a:\n  "-infinity" : 1\n',
]
RAPIDYAML_READS_DIFFERENTLY += FOUND
READ_DIFFERENTLY += RAPIDYAML_READS_DIFFERENTLY


@pytest.mark.parametrize("text", READ_DIFFERENTLY)
def test_documents_read_differently_go_to_pyyaml(text: bytes) -> None:
    assert yaml_guard.risky(text)
    _assert_reads_as_pyyaml(text)


def test_rapidyaml_alone_reads_those_differently() -> None:
    assert all(_rapidyaml_or_error(t) != _pyyaml_or_error(t) for t in RAPIDYAML_READS_DIFFERENTLY)


def _pyyaml_or_error(text: bytes) -> str:
    try:
        return repr(parse_yaml_pyyaml(text))
    except yaml.YAMLError:
        return "error"


def _rapidyaml_or_error(text: bytes) -> str:
    try:
        return repr(_rapidyaml()(text))
    except Exception:
        return "error"


@pytest.mark.parametrize(
    "text",
    [
        b"python: 3.11.7\nversion: 0.1.0\n",  # versions: text in both
        b"logprob: -1.9361265e-07\nbig: 1.0e+20\ntemperature: 0.7\n",  # PyYAML's own float text
        b"quarter: 2026-Q3\nid: 4116c4dc\ncontent: 18C\nn: 1\nno_key: x\n",
        b"date: Fri, 04 Dec 2026 10:00:00 GMT\nurl: https://x.test/a?b=1&c=2\n",
        b"timing: [0.0, 1.0e-05, 42.61]\nempty: []\nnone: {}\n",
    ],
)
def test_what_llmvcr_writes_keeps_the_fast_path(text: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = yaml.load(text, Loader=yaml.CSafeLoader)
    _fast_path_only(monkeypatch)
    assert parse_yaml(text) == expected


def test_every_cassette_llmvcr_records_keeps_the_fast_path(
    tmp_path: Path, anthropic_client: Any, openai_client: Any
) -> None:
    # an agent loop (the linear layout's same_as and extends), streams, both layouts
    for layout in ("linear", "full"):
        path = tmp_path / f"{layout}.yaml"
        with llmvcr.use_cassette(path, record_mode="all", layout=layout):
            messages: list[dict[str, Any]] = []
            for turn in range(3):
                messages.append({"role": "user", "content": f"Question {turn}: " + "context " * 40})
                reply = anthropic_client.messages.create(
                    model="claude-test", max_tokens=64, system="Be brief. " * 30, messages=messages
                )
                messages.append({"role": "assistant", "content": reply.content[0].text})
            chat = [{"role": "user", "content": "hi"}]
            for _ in openai_client.chat.completions.create(model="gpt-test", messages=chat, stream=True):
                pass
            openai_client.chat.completions.create(model="gpt-test", messages=chat, temperature=0.7)
        data = path.read_bytes()
        if layout == "linear":
            assert b"{same_as: 0}" in data and b"extends: " in data and b"timing: [" in data
        assert not yaml_guard.risky(data), layout
        assert parse_yaml(data) == parse_yaml_pyyaml(data)


# -- the guard, against a grammar of scalars both versions may read differently ----------------
SCALARS = st.sampled_from(
    [
        *[
            "yes",
            "No",
            "ON",
            "off",
            "y",
            "n",
            "true",
            "Null",
            "~",
            "=",
            "<<",
            "x",
            ".inf",
            "-.Inf",
            ".NaN",
            "0",
            "-1",
            "+1",
            "007",
            "08",
            "0o17",
            "0x1F",
            "0x_1",
            "0b101",
        ],
        *[
            "1e5",
            "1.5e3",
            "1.5e+3",
            "1.0e-05",
            "1.",
            ".5",
            "+.5",
            "1_000",
            "1:20",
            "2024-01-02",
            "2024-01-02T10:00:00Z",
            "3.11.7",
        ],
        *["12e+1", "18C", "2026-Q3", "'1e5'", '"yes"', "*x", "[1,yes]", "{a:1e5}", "{same_as:0}"],
        *["a b", "2001-12-14 21:59:43.10 -5", "&x 1", "!!str 1", "[1, 2]", "{a: 1e5}", "{same_as: 0}"],
    ]
) | st.text(alphabet="0123456789_.:+-eExXoOTZ Q", min_size=1, max_size=8)
SCALARS |= st.sampled_from(["nan", "-inf", "infinity", "Infinity", "NaN", "", "?", ":", "- x", "x: y"])
# a key: plain, quoted, explicit (``? k``); its colon with or without spaces before it
KEYS = (st.sampled_from(["a", "n", "role"]) | SCALARS).flatmap(
    lambda key: st.sampled_from([key, f"'{key}'", f'"{key}"'])
)
COLONS = st.sampled_from([":", ":", " :", "  :"])


@st.composite
def documents(draw: st.DrawFn, depth: int = 0) -> str:
    """Small YAML documents: mappings, lists, values on their own line, flow collections, comments."""
    indent = "  " * depth
    lines = []
    for _ in range(draw(st.integers(1, 3))):
        key = draw(KEYS)
        heads = [f"{indent}{key}{draw(COLONS)}", f"{indent}-", f"{indent}? {key}\n{indent}:"]
        head = draw(st.sampled_from(heads))
        shape = draw(st.sampled_from(["same", "next", "nested", "flow", "comment"]))
        if shape == "nested" and depth < 2:
            lines.append(head + "\n" + draw(documents(depth + 1)))
        elif shape == "next":
            lines.append(f"{head}\n{indent}  {draw(SCALARS)}")
        elif shape == "flow":
            lines.append(f"{head} [{draw(SCALARS)}, {draw(SCALARS)}]")
        elif shape == "comment":
            lines.append(f"{head} # note\n{indent}  {draw(SCALARS)}")
        else:
            lines.append(f"{head} {draw(SCALARS)}")
    return "\n".join(lines)


PROFILES = {
    # CI and a plain run: the same documents every time, so a run is never red by chance
    "ci": settings(max_examples=400, deadline=None, derandomize=True, database=None),
    # by hand (module docstring): a random search, printing what it finds
    "long": settings(
        max_examples=int(os.environ.get("LLMVCR_HYPOTHESIS_EXAMPLES", "20000")),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
        print_blob=True,
    ),
}
PROFILE = PROFILES[os.environ.get("LLMVCR_HYPOTHESIS", "ci")]


@pytest.mark.parametrize("text", FOUND)
def test_what_the_property_test_found_reads_as_pyyaml_does(text: bytes) -> None:
    _assert_reads_as_pyyaml(text)


@pytest.mark.slow
@PROFILE
@given(documents(), st.sampled_from(["\n", "\r\n"]))
def test_the_fast_path_reads_every_document_as_pyyaml_does(text: str, newline: str) -> None:
    data = (text + "\n").replace("\n", newline).encode()
    try:
        expected = repr(parse_yaml_pyyaml(data))
    except (yaml.YAMLError, parse_cache.YamlAliasError) as error:
        with pytest.raises(type(error)):  # storage reports PyYAML's error, whichever path parsed first
            parse_yaml(data)
    else:
        assert repr(parse_yaml(data)) == expected


def test_errors_are_pyyamls() -> None:
    with pytest.raises(yaml.YAMLError):
        parse_yaml(b"a: [unclosed\n")
    with pytest.raises(yaml.constructor.ConstructorError):
        parse_yaml(b"a: !!python/object/apply:os.system ['true']\n")


# -- the cache ----------------------------------------------------------------------------------
class Counting:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, data: bytes) -> object:
        self.calls += 1
        return parse_yaml(data)


def test_the_second_load_of_the_same_bytes_is_served_from_the_cache(tmp_path: object) -> None:
    cache, parse = ParseCache(str(tmp_path)), Counting()
    with open(CASSETTES[0], "rb") as f:
        data = f.read()
    first = cache.load(data, parse)
    second = cache.load(data, parse)
    assert parse.calls == 1
    assert first == second == parse_yaml_pyyaml(data)
    assert os.path.exists(cache.entry_path(data))


def test_a_changed_file_is_always_parsed_again(tmp_path: object) -> None:
    cache, parse = ParseCache(str(tmp_path)), Counting()
    assert cache.load(b"version: 1\nentries: []\n", parse) == {"version": 1, "entries": []}
    assert cache.load(b"version: 2\nentries: []\n", parse) == {"version": 2, "entries": []}
    assert parse.calls == 2


def test_a_corrupt_entry_is_ignored_and_rewritten(tmp_path: object) -> None:
    cache, parse = ParseCache(str(tmp_path)), Counting()
    data = b"version: 1\nentries: [{a: 1}]\n"
    cache.load(data, parse)
    with open(cache.entry_path(data), "wb") as f:
        f.write(b'{"version": 1, "entr')  # a torn write
    assert cache.load(data, parse) == {"version": 1, "entries": [{"a": 1}]}
    assert parse.calls == 2
    assert cache.load(data, parse) == {"version": 1, "entries": [{"a": 1}]}
    assert parse.calls == 2  # rewritten whole


def test_documents_json_cannot_give_back_are_not_cached(tmp_path: object) -> None:
    cache, parse = ParseCache(str(tmp_path)), Counting()
    data = b"when: 2024-01-02\n1: int key\n"
    for _ in range(2):
        document = cache.load(data, parse)
        assert document == {"when": datetime.date(2024, 1, 2), 1: "int key"}
    assert parse.calls == 2
    assert not os.path.exists(cache.entry_path(data))


def test_on_ci_a_fresh_checkouts_cache_is_read_but_not_written(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a CI runner's fresh clone throws the cache away: storing an entry per cassette is pure cost
    monkeypatch.setenv("CI", "true")
    folder = os.path.join(str(tmp_path), ".pytest_cache", "d", "llmvcr", "parsed-2")
    cache, parse = ParseCache(folder), Counting()
    data = b"version: 1\nentries: []\n"
    assert cache.load(data, parse) == cache.load(data, parse) == {"version": 1, "entries": []}
    assert parse.calls == 2
    assert not os.path.exists(cache.entry_path(data))
    assert os.listdir(folder) == []  # made, for the end of the run to mark it
    assert parse_cache.prune(folder) == 0
    other = ParseCache(os.path.join(str(tmp_path), "other"))  # an entry already there is still read
    monkeypatch.delenv("CI")
    other.load(data, parse)
    monkeypatch.setenv("CI", "true")
    assert other.load(data, parse) == {"version": 1, "entries": []}
    assert parse.calls == 3


def test_on_ci_an_empty_cache_folder_is_not_looked_up(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a fresh checkout's folder holds nothing and this run writes nothing there: hashing every
    # cassette's bytes to look for an entry would only ever miss
    monkeypatch.setenv("CI", "true")
    looked: list[bytes] = []
    monkeypatch.setattr(ParseCache, "entry_path", lambda self, data: looked.append(data) or "")
    cache, parse = ParseCache(os.path.join(str(tmp_path), "fresh")), Counting()
    data = b"version: 1\nentries: []\n"
    assert cache.load(data, parse) == cache.load(data, parse) == {"version": 1, "entries": []}
    assert parse.calls == 2
    assert looked == []


def test_on_ci_an_entry_another_run_left_is_still_read(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = os.path.join(str(tmp_path), "left")
    data = b"version: 1\nentries: []\n"
    entry = ParseCache(folder).entry_path(data)
    os.makedirs(os.path.dirname(entry))
    with open(entry, "wb") as f:  # what a run without CI set wrote there before
        f.write(b'{"version": 1, "entries": []}')
    monkeypatch.setenv("CI", "true")
    cache, parse = ParseCache(folder), Counting()
    assert cache.load(data, parse) == {"version": 1, "entries": []}
    assert parse.calls == 0


def test_on_ci_a_cache_a_finished_run_left_is_written(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "1")
    folder = os.path.join(str(tmp_path), "kept")
    os.makedirs(folder)
    parse_cache.prune(folder)  # what the end of the run before did: a CI that keeps .pytest_cache
    cache, parse = ParseCache(folder), Counting()
    data = b"version: 1\nentries: []\n"
    cache.load(data, parse)
    cache.load(data, parse)
    assert parse.calls == 1
    assert os.path.exists(cache.entry_path(data))


def test_an_unwritable_cache_costs_speed_not_the_load(tmp_path: object) -> None:
    blocker = os.path.join(str(tmp_path), "file")
    with open(blocker, "w") as f:
        f.write("not a folder")
    cache, parse = ParseCache(os.path.join(blocker, "cache")), Counting()
    assert cache.load(b"a: 1\n", parse) == {"a": 1}
    assert cache.load(b"a: 1\n", parse) == {"a": 1}
    assert parse.calls == 2


def test_the_cache_lives_in_pytests_cache_of_the_project(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LLMVCR_STATE_DIR", raising=False)
    project = os.path.join(str(tmp_path), "project")
    os.makedirs(os.path.join(project, ".pytest_cache"))
    os.makedirs(os.path.join(project, "tests", "cassettes"))
    cassette = os.path.join(project, "tests", "cassettes", "a.yaml")
    assert cache_folder_for(cassette) == os.path.join(
        project, ".pytest_cache", "d", "llmvcr", parse_cache.CACHE_FOLDER
    )
    monkeypatch.setenv("LLMVCR_STATE_DIR", os.path.join(str(tmp_path), "state"))
    elsewhere = os.path.join(str(tmp_path), "elsewhere", "b.yaml")
    assert cache_folder_for(elsewhere) == os.path.join(str(tmp_path), "state", parse_cache.CACHE_FOLDER)


# -- pruning ------------------------------------------------------------------------------------
DAY = 86400.0


def _aged(path: str, days: float) -> None:
    when = os.stat(path).st_mtime - days * DAY
    os.utime(path, (when, when))


def test_prune_removes_entries_no_load_used_for_a_month_and_keeps_the_rest(tmp_path: object) -> None:
    cache, parse = ParseCache(str(tmp_path)), Counting()
    old, fresh = b"a: 1\n", b"a: 2\n"
    cache.load(old, parse)
    cache.load(fresh, parse)
    _aged(cache.entry_path(old), parse_cache.MAX_AGE_DAYS + 1)
    _aged(cache.entry_path(fresh), parse_cache.MAX_AGE_DAYS - 1)
    assert parse_cache.prune(str(tmp_path)) == 1
    assert not os.path.exists(cache.entry_path(old))
    assert os.path.exists(cache.entry_path(fresh))
    old_shard, fresh_shard = os.path.dirname(cache.entry_path(old)), os.path.dirname(cache.entry_path(fresh))
    assert old_shard != fresh_shard
    assert not os.path.exists(old_shard)  # an emptied shard folder goes too


def test_a_hit_marks_its_entry_used_so_prune_keeps_it(tmp_path: object) -> None:
    cache, parse = ParseCache(str(tmp_path)), Counting()
    data = b"a: 1\n"
    cache.load(data, parse)
    _aged(cache.entry_path(data), parse_cache.MAX_AGE_DAYS + 1)
    assert cache.load(data, parse) == {"a": 1}  # a hit: the entry's time is refreshed
    assert parse.calls == 1
    assert parse_cache.prune(str(tmp_path)) == 0
    assert cache.load(data, parse) == {"a": 1} and parse.calls == 1


def test_prune_walks_a_folder_at_most_once_a_day(tmp_path: object) -> None:
    cache, parse = ParseCache(str(tmp_path)), Counting()
    data = b"a: 1\n"
    cache.load(data, parse)
    assert parse_cache.prune(str(tmp_path)) == 0  # the first walk leaves its marker
    _aged(cache.entry_path(data), parse_cache.MAX_AGE_DAYS + 1)
    assert parse_cache.prune(str(tmp_path)) == 0  # walked less than a day ago
    assert os.path.exists(cache.entry_path(data))
    now = os.stat(os.path.join(str(tmp_path), ".pruned")).st_mtime + DAY + 1
    assert parse_cache.prune(str(tmp_path), now=now) == 1  # a day later it walks again
    assert not os.path.exists(cache.entry_path(data))


def test_prune_of_a_missing_or_unwritable_folder_is_a_no_op(tmp_path: object) -> None:
    assert parse_cache.prune(os.path.join(str(tmp_path), "never-made")) == 0
    blocker = os.path.join(str(tmp_path), "file")
    with open(blocker, "w") as f:
        f.write("not a folder")
    assert parse_cache.prune(blocker) == 0


@pytest.mark.slow
def test_a_pytest_run_prunes_the_cache_folders_it_used(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    cassettes = pytester.path / "cassettes" / "test_one"
    cassettes.mkdir(parents=True)
    (cassettes / "test_replay.yaml").write_text("version: 1\nentries: []\n")
    pytester.makepyfile(
        test_one="import pytest\n\n@pytest.mark.llmvcr\ndef test_replay():\n    pass\n",
    )
    stale = pytester.path / ".pytest_cache" / "d" / "llmvcr" / parse_cache.CACHE_FOLDER / "ab" / "cd.json"
    stale.parent.mkdir(parents=True)
    stale.write_text("{}")
    _aged(str(stale), parse_cache.MAX_AGE_DAYS + 1)
    pytester.runpytest_subprocess("--llmvcr-record-mode=none", timeout=120).assert_outcomes(passed=1)
    assert not stale.exists()
    assert list((stale.parent.parent).glob("*/*.json"))  # the cassette the run parsed stays cached


def test_the_parser_in_use_is_named_by_version_and_never_silently_slow(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def version() -> str:
        with pytest.raises(SystemExit):
            main(["--version"])
        return capsys.readouterr().out

    monkeypatch.delenv("LLMVCR_YAML", raising=False)
    assert parse_cache.fast_parser() is not None
    assert "(YAML: rapidyaml 0." in version()
    monkeypatch.setenv("LLMVCR_YAML", "pyyaml")  # CI runs the YAML tests once this way
    assert parse_cache.fast_parser() is None
    assert "(YAML: PyYAML (LLMVCR_YAML=pyyaml))" in version()
    monkeypatch.delenv("LLMVCR_YAML")
    monkeypatch.setattr(parse_cache, "rapidyaml_reader", lambda: None)  # a platform with no wheel
    assert parse_cache.fast_parser() is None
    assert "PyYAML: rapidyaml has no wheel here" in version() and "pip install rapidyaml" in version()
