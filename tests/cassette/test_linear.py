"""The linear layout: an agent loop's cassette grows with the session, not with its square, and
everything that reads a cassette sees the same full requests as before."""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from weather_agent import SYSTEM, TOOLS, agent

import llmvcr
from llmvcr.cassette import Cassette, Entry, schema
from llmvcr.cassette.linear import MIN_BYTES, Unpacker, pack, unpack, without
from llmvcr.cli import main as cli
from llmvcr.errors import EditedCassetteWarning
from llmvcr.matching import other_calls
from llmvcr.storage import files as storage
from llmvcr.storage.files import document_of, dump_document
from llmvcr.storage.writer import CassetteWriter

ROOT = Path(__file__).resolve().parent.parent.parent


def record(client: Any, path: Path, questions: int, word: str = "like", **options: Any) -> list[str]:
    with llmvcr.use_cassette(path, record_mode="all", **options):
        return agent(client, questions, word)


def test_an_agent_loop_is_stored_once_and_replays_the_same(
    tmp_path: Path, anthropic_client: Any, server: Any
) -> None:
    path = tmp_path / "loop.yaml"
    server.reset()
    answers = record(anthropic_client, path, 4)
    sent = [r.json() for r in server.requests]
    document = yaml.safe_load(path.read_text())
    assert document["version"] == 2
    bodies = [e["request"]["body"] for e in document["entries"]]
    assert isinstance(bodies[0]["messages"], list) and bodies[0]["system"] == SYSTEM
    for position, body in enumerate(bodies[1:], 1):
        assert body["system"] == {"same_as": 0} and body["tools"] == {"same_as": 0}
        assert body["messages"]["extends"] == position - 1 and len(body["messages"]["append"]) == 2
    # the tool result once, then the answer quoting it, in its response and in the next request
    assert path.read_text().count("Trip 2\n") == 3
    loaded = llmvcr.load_cassette(path)
    assert [e.request.body for e in loaded.entries] == sent  # the full requests, rebuilt
    for e in loaded.entries:
        assert e.request_hash == llmvcr.matching.rules.default_request_hash(e.request.normalised())
    with llmvcr.use_cassette(path, record_mode="none"):
        assert agent(anthropic_client, 4) == answers
    assert server.request_count == len(sent)  # replayed without a call


@pytest.mark.slow
def test_it_grows_linearly_and_is_smaller_than_the_full_layout(tmp_path: Path, anthropic_client: Any) -> None:
    sizes = {}
    for layout in ("linear", "full"):
        for questions in (5, 10, 20):
            path = tmp_path / f"{layout}-{questions}.yaml"
            record(anthropic_client, path, questions, layout=layout)
            sizes[layout, questions] = path.stat().st_size
    step = [sizes["linear", 10] - sizes["linear", 5], (sizes["linear", 20] - sizes["linear", 10]) / 2]
    assert step[1] < step[0] * 1.1  # each question costs the same, however long the session
    assert sizes["full", 20] > 8 * sizes["linear", 20]
    assert yaml.safe_load((tmp_path / "full-5.yaml").read_text())["version"] == 1


@pytest.mark.slow
def test_a_change_to_turn_3_changes_only_the_lines_that_changed(
    tmp_path: Path, anthropic_client: Any
) -> None:
    changed = {}
    for layout in ("linear", "full"):
        before, after = tmp_path / f"{layout}-a.yaml", tmp_path / f"{layout}-b.yaml"
        record(anthropic_client, before, 6, layout=layout)
        record(anthropic_client, after, 6, layout=layout, word="looking")  # turn 3 (question 1)
        diff = difflib.unified_diff(before.read_text().splitlines(), after.read_text().splitlines(), n=0)
        changed[layout] = [line for line in diff if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    with_word = [line for line in changed["linear"] if "looking" in line]
    assert with_word == ["+          content: What is the weather looking for trip 1?"]
    assert sum("looking" in line for line in changed["full"]) == 10  # every later request repeats it
    # The rest is what really changed: the hashes of the requests from turn 3 on, and the ids and
    # token counts of the answers (the loopback server derives them from the whole request), and
    # the recording date (recorded_with.at) when the two recordings fell in different seconds.
    real = re.compile(r"^[+-] *(request_hash|id|tool_use_id|request-id|input_tokens|body|at):")
    assert [line for line in changed["linear"] if not real.match(line)] == [
        "-          content: What is the weather like for trip 1?",
        "+          content: What is the weather looking for trip 1?",
    ]


def test_new_episodes_extends_a_linear_file_and_keeps_its_text(tmp_path: Path, anthropic_client: Any) -> None:
    path = tmp_path / "grow.yaml"
    record(anthropic_client, path, 2)
    before = path.read_text()
    with llmvcr.use_cassette(path, record_mode="new_episodes"):
        agent(anthropic_client, 3)  # replays the first four calls, records two more
    after = path.read_text()
    # the header's entry count is the one line that changes; the rest is appended
    assert "\nentry_count: 4\n" in before and "\nentry_count: 6\n" in after
    before = before.removesuffix("entries_end: true\n")  # the end marker follows the new entries
    assert after.replace("\nentry_count: 6\n", "\nentry_count: 4\n", 1).startswith(before)
    document = yaml.safe_load(after)
    assert [e["request"]["body"]["messages"]["extends"] for e in document["entries"][4:]] == [3, 4]
    assert len(llmvcr.load_cassette(path).entries[5].request.body["messages"]) == 11


def test_a_divergence_still_names_the_full_message_path(tmp_path: Path, anthropic_client: Any) -> None:
    path = tmp_path / "d.yaml"
    record(anthropic_client, path, 2)
    with pytest.raises(llmvcr.ReplayDivergence, match=r"request\.body\.messages\[0\]\.content"):
        with llmvcr.use_cassette(path, record_mode="none"):
            anthropic_client.messages.create(
                model="claude-test",
                max_tokens=256,
                system=SYSTEM,
                tools=TOOLS,
                messages=[{"role": "user", "content": "What is the weather like for trip 7?"}],
            )


@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
def test_openai_chat_and_responses_conversations_are_linear(tmp_path: Path, openai_client: Any) -> None:
    path = tmp_path / "o.yaml"
    prompt = "You answer in one short sentence, and you always name the source you used. " * 3
    with llmvcr.use_cassette(path):
        chat = [{"role": "system", "content": prompt}]
        items: list[Any] = []
        for q in range(3):
            chat.append({"role": "user", "content": f"Echo question {q}"})
            reply = openai_client.chat.completions.create(model="gpt-test", messages=chat)
            chat.append({"role": "assistant", "content": reply.choices[0].message.content})
            items.append({"role": "user", "content": f"Echo question {q}"})
            response = openai_client.responses.create(model="gpt-test", instructions=prompt, input=items)
            items.append({"role": "assistant", "content": response.output_text})
    bodies = [e["request"]["body"] for e in yaml.safe_load(path.read_text())["entries"]]
    assert bodies[2]["messages"] == {"extends": 0, "append": chat[2:4]}
    assert bodies[5]["input"]["extends"] == 3 and bodies[5]["instructions"] == {"same_as": 1}
    with llmvcr.use_cassette(path, record_mode="none"):
        assert openai_client.chat.completions.create(model="gpt-test", messages=chat[:4]).choices


def test_an_old_cassette_loads_and_saves_unchanged(tmp_path: Path) -> None:
    original = (ROOT / "cassettes" / "demo-anthropic.yaml").read_bytes()
    path = tmp_path / "old.yaml"
    path.write_bytes(original)
    cassette = llmvcr.load_cassette(path)
    assert cassette.layout == "full"
    llmvcr.save_cassette(path, cassette)
    # what a save adds: the count and the end marker's promise at the top, the marker at the end
    counted = f"version: 1\nentry_count: {len(cassette)}\nend_marker: true\n".encode()
    assert path.read_bytes() == original.replace(b"version: 1\n", counted, 1) + b"entries_end: true\n"


def test_a_cassette_without_repeats_is_written_as_before(anthropic_client: Any, cassette_dir: Path) -> None:
    """Only a file that refers back is version 2: the rest stay readable by every llmvcr release."""
    for layout in ("linear", "full"):
        with llmvcr.use_cassette(f"one-{layout}", layout=layout):
            for text in ("first question", "second question"):
                anthropic_client.messages.create(
                    model="claude-test",
                    max_tokens=8,
                    system=SYSTEM,
                    messages=[{"role": "user", "content": text}],
                )
    linear, full = (cassette_dir / f"one-{layout}.yaml" for layout in ("linear", "full"))
    assert yaml.safe_load(full.read_text())["version"] == 1
    assert "system: {same_as: 0}" in linear.read_text()  # a long system prompt is still shared
    with llmvcr.use_cassette("single"):
        anthropic_client.messages.create(
            model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
        )
    assert yaml.safe_load((cassette_dir / "single.yaml").read_text())["version"] == 1


def test_an_older_llmvcr_says_to_upgrade(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "new.yaml"
    path.write_text("version: 2\nentries: []\n")
    monkeypatch.setattr(schema, "FORMAT_VERSION", 1)  # what a release that reads version 1 does
    with pytest.raises(
        llmvcr.CassetteFormatError, match=r"version 2 is newer .*upgrade llmvcr \(pip install -U"
    ):
        llmvcr.load_cassette(path)


def _entry(body: Any) -> dict[str, Any]:
    return {
        "request": {"method": "POST", "path": "/v1/messages", "body": body},
        "request_hash": "h",
        "response": {"status": 200, "body": {}},
    }


@pytest.mark.parametrize(
    ("second", "says"),
    [
        (
            {"extends": 1, "append": []},
            r"entry 1, field 'request.body.messages.extends'.*refers to entry 1.*\(0 to 0\)",
        ),
        ({"extends": "0", "append": []}, r"entry 1.*refers to entry '0'"),
        ({"same_as": -1}, r"entry 1, field 'request.body.messages.same_as'.*refers to entry -1"),
        ({"extends": 0, "append": "x"}, r"entry 1.*'append' is not a list"),
    ],
)
def test_a_broken_reference_names_the_entry_and_field(tmp_path: Path, second: Any, says: str) -> None:
    path = tmp_path / "bad.yaml"
    first = {"model": "m", "messages": [{"role": "user", "content": "hi " * 40}]}
    path.write_bytes(
        dump_document({"version": 2, "entries": [_entry(first), _entry({"messages": second})]}, "yaml")
    )
    with pytest.raises(llmvcr.CassetteFormatError, match=says):
        llmvcr.load_cassette(path)
    entries = yaml.safe_load(path.read_text())["entries"]
    assert Unpacker(entries, str(path)).entry(0) == entries[0]
    with pytest.raises(llmvcr.CassetteFormatError, match=says):  # entry by entry: the same error
        Unpacker(entries, str(path)).entry(1)


def test_a_reference_to_a_missing_field_is_an_error(tmp_path: Path) -> None:
    entries = [_entry({"model": "m"}), _entry({"system": {"same_as": 0}})]
    says = "entry 1, .*entry 0 has no 'system' to refer to"
    with pytest.raises(llmvcr.CassetteFormatError, match=says):
        unpack(entries, "x.yaml")
    with pytest.raises(llmvcr.CassetteFormatError, match=says):
        Unpacker(entries, "x.yaml").entry(1)


def test_entry_by_entry_unpacking_gives_what_unpacking_the_whole_file_gives(
    tmp_path: Path, anthropic_client: Any
) -> None:
    path = tmp_path / "loop.yaml"
    record(anthropic_client, path, 4)
    entries = yaml.safe_load(path.read_text())["entries"]
    whole = unpack(entries, str(path))
    assert any("extends" in str(e["request"]["body"]) for e in entries)  # the file does refer back
    for order in (range(len(entries)), reversed(range(len(entries)))):
        unpacker = Unpacker(entries, str(path))
        assert {i: unpacker.entry(i) for i in order} == dict(enumerate(whole))


def test_a_long_chain_of_references_unpacks_without_recursion() -> None:
    turns = 5_000  # deeper than Python's recursion limit
    entries = [_entry({"messages": [{"role": "user", "content": "x" * MIN_BYTES}]})]
    entries += [_entry({"messages": {"extends": i, "append": [i]}}) for i in range(turns)]
    assert len(Unpacker(entries, "x.yaml").entry(turns)["request"]["body"]["messages"]) == turns + 1


def test_a_cached_linear_file_unpacks_each_entry_when_it_is_first_read(
    tmp_path: Path, anthropic_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A parse-cache hit was checked whole when stored: its entries are unpacked one by one as they
    are read (a test that plays 3 of 1,000 pays for 3), and read exactly as a first load reads them."""
    path = tmp_path / "loop.yaml"
    record(anthropic_client, path, 3)
    text = path.read_text()
    edited = text.replace("model: claude-test", "model: claude-edited", 3)  # entries 0 to 2, by hand
    path.write_text(edited)
    with pytest.warns(EditedCassetteWarning):
        first = llmvcr.load_cassette(path)  # checks and stores the file
    monkeypatch.setattr(storage, "unpack", None)  # a second load that unpacked the whole file would fail
    with pytest.warns(EditedCassetteWarning):
        second = llmvcr.load_cassette(path)
    assert dict(second.index) == dict(first.index)  # the edited entries under the hash they read as now
    assert [second.entry(i) for i in reversed(range(len(second)))] == first.entries[::-1]
    assert first.entries[0].request.body["model"] == "claude-edited"
    with pytest.warns(EditedCassetteWarning):
        kept = llmvcr.load_cassette(path)
    kept.claim([len(kept) - 1], allow_repeats=False)
    kept.drop_unplayed()  # the last entry only: read before its position changes
    assert kept.entries == [first.entries[-1]]


def test_pack_refers_only_to_equal_values_and_small_ones_stay_inline() -> None:
    long = [{"role": "user", "content": "x" * MIN_BYTES}]
    entries = [
        _entry({"messages": long, "system": "short"}),
        _entry({"messages": [*long, {"role": "user", "content": float("nan")}], "system": "short"}),
        _entry(
            {"messages": [*long, {"role": "user", "content": float("nan")}, {"role": "user", "content": "y"}]}
        ),
        _entry({"messages": [{"role": "user", "content": "x" * MIN_BYTES, "extra": 1}]}),
        _entry({"messages": [{1: "a non-string key"}]}),
    ]
    packed, version = pack(entries)
    assert version == 2
    bodies = [e["request"]["body"] for e in packed]
    assert bodies[1]["messages"]["extends"] == 0 and len(bodies[1]["messages"]["append"]) == 1
    assert bodies[1]["system"] == "short"  # shorter than a reference would be
    assert bodies[2]["messages"]["extends"] == 0  # NaN != NaN: entry 1's list is never "equal"
    assert bodies[3]["messages"] == entries[3]["request"]["body"]["messages"]
    assert bodies[4] is entries[4]["request"]["body"]
    assert pack([entries[0], entries[3]]) == ([entries[0], entries[3]], 1)  # nothing shared: version 1
    assert [e["request"]["body"] for e in unpack(packed, "x")][:2] == [e["request"]["body"] for e in entries][
        :2
    ]


def test_the_writer_packs_as_a_whole_save_does_and_merges_other_writers(
    tmp_path: Path, anthropic_client: Any
) -> None:
    source = tmp_path / "src.yaml"
    record(anthropic_client, source, 3)
    entries = llmvcr.load_cassette(source).entries
    for suffix in ("yaml", "json"):
        solo = llmvcr.Cassette(str(tmp_path / f"solo.{suffix}"))
        writer = CassetteWriter(solo.path)
        for entry in entries:
            solo.append(entry)
            writer.append(solo, [entry])
        assert Path(solo.path).read_bytes() == dump_document(document_of(solo), suffix)
        path = str(tmp_path / f"two.{suffix}")
        mine, theirs = llmvcr.Cassette(path), llmvcr.Cassette(path, layout="full")
        a, b = CassetteWriter(path), CassetteWriter(path)
        for i, entry in enumerate(entries):
            cassette, w = (mine, a) if i % 2 else (theirs, b)
            cassette.append(entry)
            w.append(cassette, [entry])
        merged = llmvcr.load_cassette(path)
        assert merged.layout == "linear"
        assert [e.request.body for e in merged.entries] == [e.request.body for e in entries]


def test_convert_rewrites_between_layouts(tmp_path: Path, anthropic_client: Any) -> None:
    full = tmp_path / "full.yaml"
    record(anthropic_client, full, 3, layout="full")
    linear, back = tmp_path / "linear.yaml", tmp_path / "back.yaml"
    assert cli(["convert", str(full), "--to", "llmvcr-yaml", "--layout", "linear", "-o", str(linear)]) == 0
    assert cli(["convert", str(linear), "--to", "llmvcr-yaml", "--layout", "full", "-o", str(back)]) == 0
    assert back.read_bytes() == full.read_bytes()
    assert linear.stat().st_size * 2 < full.stat().st_size
    json_out = tmp_path / "linear.json"
    assert cli(["convert", str(linear), "--to", "llmvcr-json", "-o", str(json_out)]) == 0
    assert llmvcr.load_cassette(json_out).layout == "linear"  # a file keeps its layout unless told
    assert [e.request.body for e in llmvcr.load_cassette(json_out).entries] == [
        e.request.body for e in llmvcr.load_cassette(full).entries
    ]


def test_prune_keeps_the_later_entries_whole(tmp_path: Path, anthropic_client: Any) -> None:
    path = tmp_path / "p.yaml"
    record(anthropic_client, path, 2)
    bodies = [e.request.body for e in llmvcr.load_cassette(path).entries]
    cassette = llmvcr.load_cassette(path)
    for position in (0, 2, 3):
        cassette.claim([position], allow_repeats=False)
    cassette.drop_unplayed()  # entry 1, which entry 2 extends
    llmvcr.save_cassette(path, cassette)
    assert [e.request.body for e in llmvcr.load_cassette(path).entries] == [bodies[0], *bodies[2:]]


def test_dropping_entries_from_a_stored_document_keeps_references_whole(
    tmp_path: Path, anthropic_client: Any
) -> None:
    """What ``llmvcr prune`` writes: the kept entries refer to kept entries only."""
    path = tmp_path / "p.yaml"
    record(anthropic_client, path, 2)
    bodies = [e.request.body for e in llmvcr.load_cassette(path).entries]
    document = yaml.safe_load(path.read_text())
    document["entries"] = without(document, {0, 1}, str(path))
    path.write_bytes(dump_document(document, "yaml"))
    assert [e.request.body for e in llmvcr.load_cassette(path).entries] == bodies[2:]
    assert yaml.safe_load(path.read_text())["entries"][1]["request"]["body"]["messages"]["extends"] == 0


def test_the_layout_option_is_checked() -> None:
    with pytest.raises(ValueError, match="unknown layout 'flat'; valid: linear, full"):
        llmvcr.use_cassette("x", layout="flat")  # type: ignore[typeddict-item]


def _from_the_parse_cache(
    client: Any, path: Path, questions: int, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[Entry], Cassette]:
    """A recorded linear file's entries as a first load checks them, and a second load of it (a
    parse-cache hit) whose entries fail if unpacked."""
    record(client, path, questions)
    entries = llmvcr.load_cassette(path).entries  # checks and stores the file
    cassette = llmvcr.load_cassette(path)
    monkeypatch.setattr(Unpacker, "entry", None)  # reading an entry now would fail
    return entries, cassette


def test_the_play_log_reads_a_cached_linear_files_hashes_without_unpacking_it(
    tmp_path: Path, anthropic_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    entries, cassette = _from_the_parse_cache(anthropic_client, tmp_path / "loop.yaml", 2, monkeypatch)
    assert [cassette.stored_hash(i) for i in range(len(cassette))] == [e.request_hash for e in entries]
    with pytest.raises(TypeError):  # the entries were not read: this load came from the parse cache
        cassette.entry(1)


def test_a_call_no_provider_claims_is_looked_up_without_unpacking_a_cached_linear_file(
    tmp_path: Path, anthropic_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding a recorded non-LLM call reads each entry's stored provider, not the entry."""
    entries, cassette = _from_the_parse_cache(anthropic_client, tmp_path / "loop.yaml", 3, monkeypatch)
    providers = [e.provider for e in entries]
    assert providers and set(providers) == {"anthropic"}
    assert [cassette.stored_provider(i) for i in range(len(cassette))] == providers
    assert other_calls.positions(cassette, "GET", "http://127.0.0.1:1/health") == []
    assert other_calls.hosts(cassette) == set()
    with pytest.raises(TypeError):  # and none was read
        cassette.entry(0)
