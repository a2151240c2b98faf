"""Bad input: a crafted, cut, hand-broken or misplaced cassette is a CassetteFormatError naming the
file, the entry and the field, in bounded time and memory; numbers replay exactly as recorded."""

from __future__ import annotations

import copy
import json
import math
import os
import re
import subprocess
import sys
import textwrap
import threading
import warnings
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

import llmvcr
from llmvcr.cassette.schema import entry_to_mapping
from llmvcr.cli import main as cli_main
from llmvcr.errors import EditedCassetteWarning
from llmvcr.storage import parse_cache
from llmvcr.storage.files import cassette_from_document, parse_checked, validate
from llmvcr.storage.parse_cache import ParseCache, YamlAliasError, parse_yaml, parse_yaml_pyyaml

ROOT = Path(__file__).resolve().parent.parent
END = b"entries_end: true\n"  # the last line of every cassette llmvcr writes


def ask(client: Any, text: str, **extra: Any) -> Any:
    return client.messages.create(
        model="claude-test", max_tokens=8, messages=[{"role": "user", "content": text}], **extra
    )


def load(path: Path) -> llmvcr.Cassette:
    cassette = llmvcr.load_cassette(path)
    validate(cassette)
    return cassette


@pytest.fixture
def recorded(tmp_path: Path, anthropic_client: Any) -> Path:
    """A real cassette: one JSON answer, then one stream."""
    path = tmp_path / "real.yaml"
    with llmvcr.recording(path):
        ask(anthropic_client, "plain")
        with anthropic_client.messages.stream(
            model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "streamed"}]
        ) as stream:
            stream.until_done()
    return path


# -- 1. alias bombs -------------------------------------------------------------------------------
LAUGHS = "".join(
    f"  - &a{i} [{', '.join([f'*a{i - 1}' if i else 'lol'] * 9)}]\n" for i in range(10)
)  # *a9 is 9**10 (3.5 billion) strings once expanded


def bomb(place: str) -> str:
    if place == "flow":  # JSON-style keys need no space before an anchor or an alias
        laughs = ", ".join(
            f'"a{i}":&a{i} [{", ".join([f"*a{i - 1}" if i else "lol"] * 9)}]' for i in range(10)
        )
        return f'{{"version": 1, "lols": {{{laughs}}}, "seed":*a9, "entries": []}}\n'
    entry = {
        "seed": "seed: *a9\n",
        "recorded_with": "recorded_with: {llmvcr: *a9}\n",
        "metadata": "metadata: {x: *a9}\n",
        "body": "",
    }[place]
    body = "*a9" if place == "body" else "{}"
    return (
        f"version: 1\nlols:\n{LAUGHS}{entry}entries:\n"
        f"- provider: anthropic\n  request: {{method: POST, path: /v1/messages, body: {body}}}\n"
        f"  request_hash: sha256:0\n  response: {{status: 200, body: {{}}}}\n"
    )


BOMB_RUNNER = textwrap.dedent("""
    import sys
    if sys.platform != "win32":
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))  # 1 GB: a bomb cannot hide in swap
    import llmvcr
    from llmvcr.storage import parse_cache
    parse_cache.fast_parser = (lambda: None) if sys.argv[2] == "pyyaml" else parse_cache.rapidyaml_reader
    from llmvcr.storage.files import validate
    for attempt in range(2):  # the second load is the one a parse cache would answer
        try:
            if sys.argv[3] == "record":
                with llmvcr.recording(sys.argv[1], record_mode="new_episodes"):
                    pass
            else:
                validate(llmvcr.load_cassette(sys.argv[1]))
            print("LOADED")
        except llmvcr.CassetteFormatError as err:
            print("REFUSED", err)
""")


@pytest.mark.parametrize("how", ["load", "record"])
@pytest.mark.parametrize("parser", ["rapidyaml", "pyyaml"])
@pytest.mark.parametrize("place", ["seed", "recorded_with", "metadata", "body", "flow"])
def test_an_alias_bomb_is_refused_in_bounded_time_and_memory(
    tmp_path: Path, place: str, parser: str, how: str
) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(bomb(place))
    script = tmp_path / "run.py"
    script.write_text(BOMB_RUNNER)
    env = {**os.environ, "LLMVCR_STATE_DIR": str(tmp_path / "state"), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(script), str(path), parser, how],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.stdout.count("REFUSED") == 2, done.stdout + done.stderr
    assert "bomb.yaml" in done.stdout and "alias" in done.stdout and "version control" in done.stdout
    assert path.read_text() == bomb(place)  # never written over


@pytest.mark.parametrize(
    "text",
    ["a: &x [1, 2]\nb: *x\n", "base: &b {x: 1}\nc:\n  <<: *b\n", "&r [*r]\n", '{"a":&x [1], "b":*x}\n'],
)
def test_every_yaml_path_refuses_aliases_and_caches_nothing(tmp_path: Path, text: str) -> None:
    data = text.encode()
    with pytest.raises(YamlAliasError):
        parse_yaml_pyyaml(data)
    with pytest.raises(YamlAliasError):
        parse_yaml(data)  # rapidyaml would read an alias as text: it never sees one
    cache = ParseCache(str(tmp_path / "cache"))
    with pytest.raises(YamlAliasError):
        cache.load(data, parse_yaml)
    assert not os.path.exists(cache.entry_path(data))
    assert parse_yaml(b"a: &x [1, 2]\nb: [1, 2]\n") == {"a": [1, 2], "b": [1, 2]}  # an unused anchor reads


def test_rapidyaml_alone_would_read_an_alias_as_text() -> None:
    # why the guard: rapidyaml's JSON writes an alias as the text "*x", a different document, silently
    read = parse_cache.rapidyaml_reader()
    assert read is not None
    assert read(b"a: &x [1]\nb: *x\n") == {"a": [1], "b": "*x"}


# -- 2. truncation at an entry boundary -----------------------------------------------------------
@pytest.fixture
def ten(tmp_path: Path, anthropic_client: Any) -> Path:
    path = tmp_path / "ten.yaml"
    with llmvcr.recording(path):
        for i in range(10):
            ask(anthropic_client, f"call {i}")
    return path


def boundaries(data: bytes) -> list[int]:
    """Offsets where the text may be cut between two entries: after 'entries:' and before each item."""
    start = data.index(b"\nentries:\n") + len(b"\nentries:\n")
    return [start] + [i + 1 for i in range(start, len(data)) if data[i : i + 3] == b"\n- "]


def test_every_cut_between_entries_is_a_truncation_error(ten: Path) -> None:
    data = ten.read_bytes()
    assert data.startswith(b"version: 1\nentry_count: 10\n")
    cuts = boundaries(data)
    assert len(cuts) == 10  # before entry 0 .. before entry 9
    cuts += [data.index(b"\nentries:") + 1, len(b"version: 1\nentry_count: 10\n")]  # header only
    refused = 0
    for n, cut in enumerate(cuts):
        ten.write_bytes(data[:cut])
        with pytest.raises(llmvcr.CassetteFormatError) as info:
            load(ten)
        message = str(info.value)
        assert "ten.yaml" in message and "version control" in message, message
        if n < 10:
            assert f"holds {n} of the 10 entries" in message and "truncated" in message
        refused += 1
    assert refused == 12


def test_a_cut_linear_cassette_is_refused_too(tmp_path: Path, anthropic_client: Any) -> None:
    path = tmp_path / "agent.yaml"
    messages: list[dict[str, str]] = []
    with llmvcr.recording(path):
        for turn in range(4):  # a growing conversation: written in the linear layout (version 2)
            messages.append({"role": "user", "content": f"turn {turn}"})
            reply = anthropic_client.messages.create(model="claude-test", max_tokens=8, messages=messages)
            messages.append({"role": "assistant", "content": reply.content[0].text})
    data = path.read_bytes()
    assert data.startswith(b"version: 2\nentry_count: 4\n")
    for n, cut in enumerate(boundaries(data)):
        path.write_bytes(data[:cut])
        with pytest.raises(llmvcr.CassetteFormatError, match=f"holds {n} of the 4 entries"):
            load(path)


@pytest.mark.parametrize("where", ["between entries", "inside the last answer"])
def test_a_cut_file_is_never_extended_by_a_recording(ten: Path, anthropic_client: Any, where: str) -> None:
    data = ten.read_bytes()
    # inside: the last answer without its usage, which parses as a whole (shorter) answer
    cut = data[: boundaries(data)[5] if where == "between entries" else data.rindex(b"usage:")]
    ten.write_bytes(cut)
    with pytest.raises(llmvcr.CassetteFormatError, match="truncated"):
        with llmvcr.recording(ten, record_mode="new_episodes"):
            ask(anthropic_client, "one more")
    assert ten.read_bytes() == cut


def test_an_entry_appended_by_hand_loads(ten: Path) -> None:
    data = ten.read_bytes()
    first = data[boundaries(data)[1] : boundaries(data)[2]]
    body = data.removesuffix(END)
    ten.write_bytes(body + first.replace(b"call 1", b"call 1 again") + END)  # above the end marker
    with pytest.warns(llmvcr.errors.EditedCassetteWarning, match="entry 10 was edited by hand"):
        assert len(load(ten)) == 11  # a copy with a new prompt answers that prompt
    ten.write_bytes(data + first)  # below it: told where it goes
    with pytest.raises(llmvcr.CassetteFormatError, match="goes above the line 'entries_end: true'"):
        load(ten)


def test_rehash_counts_again_after_entries_are_removed_by_hand(ten: Path, capsys: Any) -> None:
    data = ten.read_bytes()
    cuts = boundaries(data)
    edited = data[: cuts[3]] + b"# a comment the edit keeps\n" + data[cuts[5] :]  # entries 3 and 4 gone
    ten.write_bytes(edited)
    with pytest.raises(llmvcr.CassetteFormatError, match=r"llmvcr rehash"):
        load(ten)
    assert cli_main(["rehash", str(ten)]) == 0
    assert "8 entries" in capsys.readouterr().out
    assert ten.read_bytes() == edited.replace(b"entry_count: 10\n", b"entry_count: 8\n")
    assert len(load(ten)) == 8


@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
def test_a_copied_entry_with_a_new_prompt_answers_that_prompt_only(
    ten: Path, anthropic_client: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's way to add an entry: copy one, change its prompt, keep its old request_hash."""
    data = ten.read_bytes()
    cuts = boundaries(data)
    copy = data[cuts[0] : cuts[1]].replace(b"call 0", b"call 0 by hand")
    assert copy.count(b"call 0 by hand") >= 1
    edited = data.removesuffix(END) + copy + END
    ten.write_bytes(edited)
    with pytest.warns(
        EditedCassetteWarning, match=rf"{ten}: entry 10 was edited by hand.*llmvcr rehash {ten}"
    ):
        cassette = llmvcr.load_cassette(ten)  # when the file loads, not on a miss
    stored = cassette.entries[0].request_hash
    assert cassette.positions(stored) == [0] and cassette.entries[10].request_hash != stored
    with pytest.warns(EditedCassetteWarning), llmvcr.recording(ten, record_mode="none"):
        assert "by hand" not in ask(anthropic_client, "call 0").content[0].text
        with pytest.raises(llmvcr.ReplayDivergence):
            ask(anthropic_client, "call 0")  # never the copy's answer, as a second answer to its source
        assert "by hand" in ask(anthropic_client, "call 0 by hand").content[0].text
    assert cli_main(["rehash", str(ten)]) == 0
    assert "request_hash of entry 10 stored anew" in capsys.readouterr().out
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # stored: no warning any more
        assert len(llmvcr.load_cassette(ten)) == 11


def test_rehash_adds_the_end_marker_to_an_older_file_and_refuses_a_cut_one(
    ten: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = ten.read_bytes()
    older = b"# kept\n" + data.replace(b"end_marker: true\n", b"").removesuffix(END)  # before the marker
    ten.write_bytes(older)
    assert len(load(ten)) == 10  # loads as it is
    assert cli_main(["rehash", str(ten)]) == 0
    assert "end marker added (entries_end: true)" in capsys.readouterr().out
    assert ten.read_bytes() == b"# kept\n" + data  # the two lines added, every other byte kept
    ten.write_bytes(data[: data.rindex(b"text:")])  # cut inside the last answer
    assert cli_main(["rehash", str(ten)]) == 2
    assert "truncated" in capsys.readouterr().err


def test_rehash_refuses_a_broken_entry_and_counts_json(tmp_path: Path, ten: Path, capsys: Any) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_bytes(ten.read_bytes().replace(b"status: 200", b"status: two hundred", 1))
    assert cli_main(["rehash", str(broken)]) == 2
    assert "entry 0, field 'response.status'" in capsys.readouterr().err
    as_json = tmp_path / "ten.json"
    llmvcr.save_cassette(as_json, load(ten))
    document = json.loads(as_json.read_text())
    assert list(document)[:2] == ["version", "entry_count"] and document["entry_count"] == 10
    document["entries"] = document["entries"][:4]
    as_json.write_text(json.dumps(document))
    with pytest.raises(llmvcr.CassetteFormatError, match="holds 4 of the 10 entries"):
        load(as_json)
    assert cli_main(["rehash", str(as_json)]) == 0
    assert len(load(as_json)) == 4


def test_a_file_written_before_the_count_still_loads(ten: Path) -> None:
    data = ten.read_bytes().replace(b"entry_count: 10\nend_marker: true\n", b"")
    ten.write_bytes(data[: boundaries(data)[6]])
    assert len(load(ten)) == 6


# -- 2b. a cut at any byte offset -----------------------------------------------------------------
@pytest.fixture
def three(tmp_path: Path, anthropic_client: Any, openai_client: Any) -> Path:
    """A real cassette of three entries through the real SDKs: a multi-line answer and two streams."""
    path = tmp_path / "three.yaml"
    with llmvcr.recording(path):
        ask(anthropic_client, "first line\nsecond line")  # a block scalar in the request
        with anthropic_client.messages.stream(
            model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "streamed"}]
        ) as stream:
            stream.until_done()
        for _ in openai_client.chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "streamed too"}], stream=True
        ):
            pass
    return path


def cut_everywhere(path: Path, data: bytes) -> tuple[int, int]:
    """Cut ``data`` at every byte offset and parse each cut as a load does (no replay): every cut is
    refused with a CassetteFormatError naming the file, or gives only whole entries, each the same
    as in the uncut file. Returns (cuts tried, cuts loaded)."""
    whole = [entry_to_mapping(e) for e in load_cut(path, data)]
    loaded = 0
    for offset in range(len(data)):
        try:
            entries = load_cut(path, data[:offset])
        except llmvcr.CassetteFormatError as err:
            assert str(path) in str(err), str(err)
            continue
        loaded += 1
        assert [entry_to_mapping(e) for e in entries] == whole[: len(entries)], offset
        assert len(entries) == len(whole), offset  # the end marker vouches for every entry
    return len(data), loaded


def load_cut(path: Path, data: bytes) -> list[llmvcr.Entry]:
    document, stale = parse_checked(data, str(path), cached=False)
    return cassette_from_document(document, str(path), stale).entries


def test_a_cassette_dumped_again_with_sorted_keys_keeps_its_end_marker(recorded: Path) -> None:
    document = yaml.safe_load(recorded.read_bytes())
    recorded.write_text(yaml.safe_dump(document))  # sorted keys: entries_end right after entries
    assert len(load(recorded)) == 2
    moved = {"entries_end": True, **{k: v for k, v in document.items() if k != "entries_end"}}
    recorded.write_text(yaml.safe_dump(moved, sort_keys=False))
    with pytest.raises(llmvcr.CassetteFormatError, match="must come after the entries"):
        load(recorded)


@pytest.mark.parametrize("suffix", [pytest.param(".yaml", marks=pytest.mark.slow), ".json"])
def test_a_cut_at_any_byte_offset_is_refused_or_loads_whole(
    three: Path, suffix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = three.with_suffix(suffix)
    if suffix == ".json":
        llmvcr.save_cassette(path, llmvcr.load_cassette(three))
    data = path.read_bytes()
    assert b"end_marker" in data[:200] and b"entries_end" in data[-40:]
    assert len(load_cut(path, data)) == 3 and load_cut(path, data)[1].response.stream
    tried, loaded = cut_everywhere(path, data)
    with capsys.disabled():
        print(f"\n{suffix[1:]}: {loaded} of {tried} cuts loaded (each whole and unchanged)")
    assert loaded <= 2  # only cuts of the blank end: the marker's line is whole


# -- 3. wrong types -------------------------------------------------------------------------------
WRONG_TOP: list[tuple[str, Any]] = [
    ("entries", {}),
    ("entries", 0),
    ("entries", "none"),
    ("metadata", []),
    ("metadata", "x"),
    ("metadata", 3),
    ("recorded_with", []),
    ("recorded_with", "llmvcr 0.1"),
    ("recorded_with", {"llmvcr": 1}),
    ("recorded_with", {"python": 3.11}),
    ("recorded_with", {"llmvcr": None}),
    ("seed", 427),
    ("seed", ["a"]),
    ("seed", {"a": 1}),
    ("seed", True),
    ("entry_count", "2"),
    ("entry_count", -1),
    ("entry_count", True),
    ("entry_count", 1.5),
    ("version", "1"),
    ("version", True),
    ("version", 1.5),
]

# (entry, field, wrong value); field "a.b" sets raw[a][b], a value of DELETE removes the key
DELETE = object()
_EVENTS = "response.stream"
WRONG_IN_ENTRY: list[tuple[int, str, Any]] = [
    *((0, "", v) for v in ([], "x", 7, None)),
    *((0, "provider", v) for v in (1, [], None, True)),
    *((0, "request", v) for v in ([], "x", None)),
    *((0, "request.method", v) for v in (1, None, [])),
    *((0, "request.path", v) for v in (1, None, {})),
    *((0, "request.query", v) for v in ({}, "a=b", [["a"]], [[1, 2]], [["a", 1]], None)),
    *((0, "request.headers", v) for v in ([], "x", {"anthropic-version": 1}, {"a": None}, None)),
    *((0, "request_hash", v) for v in (1, None, [], DELETE)),
    *((0, "response", v) for v in ([], None, "x", DELETE)),
    *((0, "response.status", v) for v in ("200", 200.0, True, None, 99, 1000, DELETE)),
    *((0, "response.headers", v) for v in ([], {"request-id": 1}, None)),
    (0, "response.body", DELETE),
    *((0, "response.truncated", v) for v in ("no", 1, None, [])),
    *((0, "response.failure", v) for v in ([1], 1, {}, True)),
    *((1, _EVENTS, v) for v in ({}, "x", [1], [{}], [{"data": 1, "event": 1}])),
    *(
        (1, _EVENTS, v)
        for v in ([{"data": 1, "id": 1}], [{"data": 1, "retry": "x"}], [{"data": 1, "t": "x"}])
    ),
    *((1, _EVENTS, v) for v in ([{"data": 1, "retry": True}], [{"event": "ping"}])),
    *((0, f, DELETE) for f in ("request.method", "request.path")),
    *((1, "response.timing", v) for v in ("x", [1], {}, "LENGTH-STRINGS")),
    *((1, "response.truncated", v) for v in ("yes", 0)),
    *((1, "response.failure", v) for v in ([1], False)),
    *((0, "response.body", v) for v in (b"\x00bytes", {1, 2}, {1: "int key"})),
    *((0, "request.body", v) for v in (b"\x00bytes", {"a": {3, 4}})),
]


def _mutated(path: Path, entry: int | None, field: str, value: Any) -> dict[str, Any]:
    document = copy.deepcopy(yaml.safe_load(path.read_bytes()))
    if entry is None:
        document[field] = value
        return document
    if not field:
        document["entries"][entry] = value
        return document
    *parents, key = field.split(".")
    target = document["entries"][entry]
    for parent in parents:
        target = target[parent]
    if value is DELETE:
        del target[key]
    elif value == "LENGTH-STRINGS":
        target[key] = ["t"] * len(target["stream"])
    else:
        target[key] = value
        if key == "stream":
            target.pop("timing", None)  # else the timing's length is what is wrong
    return document


def _write(path: Path, document: dict[str, Any]) -> bool:
    """Write ``document`` in ``path``'s format; False when that format cannot hold it."""
    if path.suffix == ".json":
        try:
            path.write_bytes(orjson.dumps(document))
        except TypeError:
            return False
        return True
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return True


def _json_holds(value: Any) -> bool:
    try:
        orjson.dumps(value)
    except TypeError:
        return False
    return True


MUTATIONS = [
    (suffix, entry, field, value)
    for entry, field, value in [(None, f, v) for f, v in WRONG_TOP] + WRONG_IN_ENTRY
    for suffix in (".yaml", ".json")
    if suffix == ".yaml" or value is DELETE or _json_holds(value)
]


@pytest.mark.parametrize(
    ("suffix", "entry", "field", "value"),
    MUTATIONS,
    ids=[f"{s[1:]}-{e}-{f}-{'DELETE' if v is DELETE else repr(v)}" for s, e, f, v in MUTATIONS],
)
def test_a_wrong_type_names_file_entry_and_field(
    recorded: Path, suffix: str, entry: int | None, field: str, value: Any
) -> None:
    path = recorded.with_name("mutated" + suffix)
    assert _write(path, _mutated(recorded, entry, field, value))
    with pytest.raises(llmvcr.CassetteFormatError) as info:
        load(path)
    error = info.value
    assert error.path == str(path) and str(path) in str(error)
    assert error.entry == entry, str(error)
    if field:
        assert error.field is not None and error.field.startswith(field.split(".")[0]), str(error)
        assert error.field.startswith(field) or field.startswith(error.field), str(error)


def test_the_unmutated_cassette_loads(recorded: Path) -> None:
    assert _write(recorded.with_name("same.json"), yaml.safe_load(recorded.read_bytes()))
    for name in ("real.yaml", "same.json"):
        cassette = load(recorded.with_name(name))
        assert len(cassette) == 2 and cassette.entries[1].response.stream


@pytest.mark.parametrize("bad", ['"abc"', "[1]"])
@pytest.mark.parametrize("where", ["timing", "event"])
def test_a_wrong_typed_timing_is_refused_at_load_and_never_rewritten(
    recorded: Path, anthropic_client: Any, bad: str, where: str
) -> None:
    data = recorded.read_bytes()
    if where == "timing":  # the timing line llmvcr writes: [0.4, 12.1, ...]
        start = data.index(b"timing: [") + len(b"timing: [")
        edited = data[:start] + bad.encode() + data[data.index(b",", start) :]
        field = "response.timing[0]"
    else:  # an older cassette's t: on each event
        document = yaml.safe_load(data)
        response = document["entries"][1]["response"]
        timing = response.pop("timing")
        response["stream"] = [{**event, "t": t} for event, t in zip(response["stream"], timing, strict=True)]
        response["stream"][2]["t"] = yaml.safe_load(bad)
        edited = yaml.safe_dump(document, sort_keys=False).encode()
        field = "response.stream[2].t"
    recorded.write_bytes(edited)
    with pytest.raises(llmvcr.CassetteFormatError) as info:
        llmvcr.load_cassette(recorded)  # at load, not when entry 1 is first served
    assert (info.value.entry, info.value.field) == (1, field) and str(recorded) in str(info.value)
    with pytest.raises(llmvcr.CassetteFormatError, match=re.escape(field)):
        with llmvcr.recording(recorded, record_mode="new_episodes"):
            ask(anthropic_client, "a new call")
    assert recorded.read_bytes() == edited  # never rewritten, no entry dropped


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
@pytest.mark.parametrize("bad", ["abc", [1]], ids=["text", "list"])
@pytest.mark.parametrize("where", ["timing", "event", "event-beside-timing"])
def test_a_wrong_typed_t_is_refused_in_yaml_and_json_and_new_episodes_never_rewrites(
    recorded: Path, anthropic_client: Any, suffix: str, bad: Any, where: str
) -> None:
    document = yaml.safe_load(recorded.read_bytes())
    response = document["entries"][1]["response"]
    if where == "timing":
        response["timing"][0] = bad
        field = "response.timing[0]"
    else:
        if where == "event":  # an older cassette's t on each event, no timing line
            timing = response.pop("timing")
            response["stream"] = [{**e, "t": t} for e, t in zip(response["stream"], timing, strict=True)]
        response["stream"][2]["t"] = bad  # beside the line, the line's offset must not hide it
        field = "response.stream[2].t"
    path = recorded.with_name("edited" + suffix)
    assert _write(path, document)
    edited = path.read_bytes()
    with pytest.raises(llmvcr.CassetteFormatError) as info:
        llmvcr.load_cassette(path)
    assert (info.value.entry, info.value.field) == (1, field) and str(path) in str(info.value)
    with pytest.raises(llmvcr.CassetteFormatError, match=re.escape(field)):
        with llmvcr.recording(path, record_mode="new_episodes"):
            ask(anthropic_client, "a new call")
    assert path.read_bytes() == edited  # never rewritten, no entry dropped


# -- 4. a missing response body -------------------------------------------------------------------
def test_a_missing_body_is_a_format_error_not_a_json_error(recorded: Path, anthropic_client: Any) -> None:
    document = yaml.safe_load(recorded.read_bytes())
    del document["entries"][0]["response"]["body"]
    recorded.write_text(yaml.safe_dump(document, sort_keys=False))
    with pytest.raises(llmvcr.CassetteFormatError) as info:
        with llmvcr.use_cassette(recorded, record_mode="none"):
            ask(anthropic_client, "plain")
    assert info.value.entry == 0 and info.value.field == "response.body"
    assert "re-record" in str(info.value)


# -- 5. nesting -----------------------------------------------------------------------------------
def nested(depth: int) -> str:
    """A body nested ``depth`` mappings deep, as JSON text (also YAML flow text)."""
    return '{"x": ' * depth + '"bottom"' + "}" * depth


def with_deep_body(recorded: Path, suffix: str, depth: int) -> Path:
    document = yaml.safe_load(recorded.read_bytes())
    document["entries"][0]["response"]["body"]["deep"] = "DEEP"
    path = recorded.with_name("deep" + suffix)
    text = json.dumps(document) if suffix == ".json" else yaml.safe_dump(document, sort_keys=False)
    path.write_text(text.replace('"DEEP"' if suffix == ".json" else "DEEP", nested(depth), 1))
    return path


@pytest.mark.parametrize(("suffix", "depth"), [(".yaml", 600), (".json", 1000)])  # libyaml stops at 1000
def test_a_deep_body_is_refused_on_load(
    recorded: Path, suffix: str, depth: int, anthropic_client: Any
) -> None:
    path = with_deep_body(recorded, suffix, depth)
    with pytest.raises(llmvcr.CassetteFormatError) as info:
        llmvcr.load_cassette(path)  # at load, before any entry is used
    assert info.value.entry == 0 and info.value.field == "response.body"
    assert "levels deep" in str(info.value)
    with pytest.raises(llmvcr.CassetteFormatError, match="levels deep"):
        with llmvcr.use_cassette(path, record_mode="none"):
            ask(anthropic_client, "plain")


def test_yaml_deeper_than_libyaml_reads_says_so(recorded: Path) -> None:
    with pytest.raises(llmvcr.CassetteFormatError, match="nesting depth"):
        llmvcr.load_cassette(with_deep_body(recorded, ".yaml", 1000))


@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
def test_a_body_as_deep_as_replay_allows_still_replays(recorded: Path, anthropic_client: Any) -> None:
    path = with_deep_body(recorded, ".yaml", 240)
    with llmvcr.use_cassette(path, record_mode="none"):
        message = ask(anthropic_client, "plain")
    assert message.content[0].text == "Echo: plain"


# -- 6. not a file ---------------------------------------------------------------------------------
@pytest.fixture
def loop(tmp_path: Path) -> Path:
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.symlink_to(b)
    b.symlink_to(a)
    return a


def test_a_folder_or_a_symlink_loop_is_named(tmp_path: Path, loop: Path, anthropic_client: Any) -> None:
    folder = tmp_path / "folder.yaml"
    folder.mkdir()
    for path, why in ((folder, "is a folder"), (loop, "loops back on itself")):
        with pytest.raises(llmvcr.CassetteFormatError, match=why) as info:
            llmvcr.load_cassette(path)
        assert info.value.path == str(path)
        for mode in ("none", "once", "new_episodes", "all"):
            with pytest.raises(llmvcr.CassetteFormatError, match=why):
                with llmvcr.use_cassette(path, record_mode=mode):
                    ask(anthropic_client, "hi")
    assert folder.is_dir() and loop.is_symlink() and not list(folder.iterdir())


def test_a_path_through_a_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(llmvcr.CassetteFormatError, match="part of its path is a file"):
        llmvcr.load_cassette(tmp_path / "file" / "c.yaml")


# -- 7. numbers ------------------------------------------------------------------------------------
BIG = 123456789012345678901234567890
ANSWER = (
    b'{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",'
    b' "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn", "stop_sequence": null,'
    b' "usage": {"input_tokens": 123456789012345678901234567890, "output_tokens": 18446744073709551616},'
    b' "score": NaN, "ceiling": Infinity, "floor": -9223372036854775809, "ratio": 0.1}'
)


STREAM = b"".join(
    b"event: " + name + b"\ndata: " + data + b"\n\n"
    for name, data in [
        (
            b"message_start",
            b'{"type": "message_start", "message": {"id": "msg_2", "type": "message", "role": "assistant",'
            b' "model": "claude-test", "content": [], "stop_reason": null, "stop_sequence": null,'
            b' "usage": {"input_tokens": 123456789012345678901234567890, "output_tokens": 1}}}',
        ),
        (
            b"content_block_start",
            b'{"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}',
        ),
        (
            b"content_block_delta",
            b'{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}}',
        ),
        (b"content_block_stop", b'{"type": "content_block_stop", "index": 0}'),
        (
            b"message_delta",
            b'{"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null},'
            b' "usage": {"output_tokens": 18446744073709551616}}',
        ),
        (b"message_stop", b'{"type": "message_stop"}'),
    ]
)


class _Numbers(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        answer = STREAM if request.get("stream") else ANSWER
        self.send_response(200)
        self.send_header("content-type", "text/event-stream" if request.get("stream") else "application/json")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def numbers_url() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Numbers)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _check_numbers(message: Any) -> None:
    assert type(message).__name__ == "Message"
    assert message.usage.input_tokens == BIG and type(message.usage.input_tokens) is int
    assert message.usage.output_tokens == 2**64
    extra = message.model_extra
    assert math.isnan(extra["score"]) and extra["ceiling"] == math.inf
    assert extra["floor"] == -(2**63) - 1 and type(extra["floor"]) is int and extra["ratio"] == 0.1


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_numbers_replay_exactly_as_sent(tmp_path: Path, numbers_url: str, suffix: str) -> None:
    import anthropic

    client = anthropic.Anthropic(api_key="sk-ant-test-numbers", base_url=numbers_url, max_retries=0)
    path = tmp_path / f"numbers{suffix}"
    with llmvcr.recording(path):
        _check_numbers(ask(client, "numbers"))  # the SDK itself reads them so
    offline = anthropic.Anthropic(api_key="sk-ant-test-numbers", base_url="http://127.0.0.1:9", max_retries=0)
    with llmvcr.use_cassette(path, record_mode="none"):
        _check_numbers(ask(offline, "numbers"))
    body = load(path).entries[0].response.body
    assert body["usage"]["input_tokens"] == BIG and math.isnan(body["score"])


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_stream_numbers_replay_exactly_as_sent(tmp_path: Path, numbers_url: str, suffix: str) -> None:
    import anthropic

    def final(client: Any) -> Any:
        with client.messages.stream(
            model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "numbers"}]
        ) as stream:
            return stream.get_final_message()

    client = anthropic.Anthropic(api_key="sk-ant-test-numbers", base_url=numbers_url, max_retries=0)
    path = tmp_path / f"stream{suffix}"
    with llmvcr.recording(path):
        live = final(client)
    offline = anthropic.Anthropic(api_key="sk-ant-test-numbers", base_url="http://127.0.0.1:9", max_retries=0)
    with llmvcr.use_cassette(path, record_mode="none"):
        replayed = final(offline)
    for message in (live, replayed):
        assert message.usage.input_tokens == BIG and message.usage.output_tokens == 2**64
        assert message.content[0].text == "hi"
