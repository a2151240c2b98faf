"""Loading is safe and strict; writing is atomic and loses nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import llmvcr
from llmvcr.storage.files import cassette_from_document, parse_document, validate

ROOT = Path(__file__).resolve().parent.parent.parent
GOOD = (ROOT / "cassettes" / "demo-anthropic.yaml").read_bytes()


def load_bytes(tmp_path: Path, data: bytes, name: str = "c.yaml") -> llmvcr.Cassette:
    path = tmp_path / name
    path.write_bytes(data)
    cassette = llmvcr.load_cassette(path)
    validate(cassette)
    return cassette


def test_python_tags_are_refused(tmp_path: Path) -> None:
    evil = b"version: 1\nentries: !!python/object/apply:os.system ['echo pwned']\n"
    with pytest.raises(llmvcr.CassetteFormatError, match="unsafe or unknown YAML tag"):
        load_bytes(tmp_path, evil)


def test_truncated_cassette_names_file_and_line(tmp_path: Path) -> None:
    cut = GOOD[: len(GOOD) // 2].rsplit(b"\n", 1)[0] + b"\n  - request: {method: [\n"
    with pytest.raises(llmvcr.CassetteFormatError) as info:
        load_bytes(tmp_path, cut)
    assert "c.yaml" in str(info.value) and "line" in str(info.value)


def test_hand_broken_entry_names_entry_and_field(tmp_path: Path) -> None:
    document = yaml.safe_load(GOOD)
    document["entries"][1]["response"]["status"] = "two hundred"
    with pytest.raises(llmvcr.CassetteFormatError) as info:
        load_bytes(tmp_path, yaml.safe_dump(document).encode())
    assert info.value.entry == 1 and info.value.field == "response.status"
    assert "entry 1, field 'response.status'" in str(info.value)


def test_newer_version_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(llmvcr.CassetteFormatError, match="newer than this llmvcr reads.*upgrade llmvcr"):
        load_bytes(tmp_path, b"version: 7\nentries: []\n")
    empty = load_bytes(tmp_path, b"interactions: []\n")  # an empty vcrpy cassette, read in place
    assert len(empty) == 0 and empty.metadata["converted_from"]["format"] == "vcrpy"


def test_corrupt_cassette_is_an_error_never_overwritten(tmp_path: Path, anthropic_client: Any) -> None:
    path = tmp_path / "broken.json"
    path.write_bytes(b'{"version": 1, "entries": [')
    with pytest.raises(llmvcr.CassetteFormatError, match="not valid JSON"), llmvcr.recording(path):
        anthropic_client.messages.create(
            model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
        )
    assert path.read_bytes() == b'{"version": 1, "entries": ['


def test_json_and_yaml_hold_the_same_tree(tmp_path: Path) -> None:
    cassette = load_bytes(tmp_path, GOOD)
    llmvcr.save_cassette(tmp_path / "same.json", cassette)
    again = llmvcr.load_cassette(tmp_path / "same.json")
    assert [e for e in again.entries] == [e for e in cassette.entries]
    assert again.seed == cassette.seed


@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
def test_new_episodes_keeps_existing_text_byte_for_byte(tmp_path: Path, anthropic_client: Any) -> None:
    path = tmp_path / "stable.yaml"
    with llmvcr.recording(path):
        anthropic_client.messages.create(
            model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "a\nb"}]
        )
    before = path.read_bytes()
    with llmvcr.recording(path, record_mode="new_episodes"):
        anthropic_client.messages.create(
            model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "c"}]
        )
    after = path.read_bytes()
    # the header's entry count is the one line that changes; the rest is appended
    assert b"\nentry_count: 1\n" in before and b"\nentry_count: 2\n" in after
    after_uncounted = after.replace(b"\nentry_count: 2\n", b"\nentry_count: 1\n", 1)
    # ... and the end marker, still the last line, follows the new entry
    assert before.endswith(b"\nentries_end: true\n") and after.endswith(b"\nentries_end: true\n")
    assert after_uncounted.startswith(before.removesuffix(b"entries_end: true\n"))
    assert len(after) > len(before)
    assert b"|-\n" in before or b"|\n" in before  # multi-line text as a block scalar


CRASHER = textwrap.dedent("""
    import os, sys, time, anthropic, llmvcr
    from llmvcr._active import current_session
    client = anthropic.Anthropic(api_key="sk-ant-crash-test-0000", base_url=os.environ["LLM_URL"], max_retries=0)
    with llmvcr.recording(sys.argv[1]):
        for i in range(1000):
            client.messages.create(model="claude-test", max_tokens=8, messages=[{"role": "user", "content": f"n{i}"}])
            # the call is done; how many of the recorded entries still wait in memory (coalesced writes)
            print(i, len(current_session().file.queue.pending), flush=True)
            if i >= 4:
                time.sleep(0.2)  # a real call's latency: writes are seldom coalesced at this pace
""")


@pytest.mark.parametrize("how", ["sigterm", "sigkill", "keyboardinterrupt"])
@pytest.mark.slow
def test_killed_recording_keeps_every_entry(tmp_path: Path, server: Any, how: str) -> None:
    script = tmp_path / "crash.py"
    script.write_text(CRASHER)
    path = tmp_path / "crash.yaml"
    env = {**os.environ, "LLM_URL": server.url}
    proc = subprocess.Popen(
        [sys.executable, str(script), str(path)], stdout=subprocess.PIPE, env=env, text=True
    )
    assert proc.stdout is not None
    done, waiting = -1, 0
    while done < 6:
        line = proc.stdout.readline()
        assert line, "recorder died early"
        done, waiting = map(int, line.split())
    proc.send_signal(
        {"sigterm": signal.SIGTERM, "sigkill": signal.SIGKILL, "keyboardinterrupt": signal.SIGINT}[how]
    )
    proc.wait(timeout=30)
    cassette = llmvcr.load_cassette(path)
    validate(cassette)
    texts = [e.request.body["messages"][0]["content"] for e in cassette.entries]
    assert texts == [f"n{i}" for i in range(len(texts))]  # in order, none twice
    # SIGTERM and Ctrl-C write what waits in memory: nothing printed as done is lost. SIGKILL cannot be
    # caught: it keeps every entry already written (never a corrupt file), and loses at most the entries
    # that were waiting for a coalesced write when it came (on a slow or loaded disk; usually none).
    assert waiting <= done  # the first entry is always written at once
    kept = done + 1 if how != "sigkill" else done + 1 - waiting
    assert len(texts) >= kept and len(texts) <= done + 2
    assert not list(tmp_path.glob(".llmvcr-tmp-*"))


def test_writer_output_is_a_full_dump_and_merges_other_writers(tmp_path: Path) -> None:
    from llmvcr.storage.files import document_of, dump_document
    from llmvcr.storage.writer import CassetteWriter

    entries = load_bytes(tmp_path, GOOD).entries
    for suffix in ("yaml", "json"):
        path = str(tmp_path / f"w.{suffix}")
        mine, theirs = llmvcr.Cassette(path, seed="s"), llmvcr.Cassette(path, seed="s")
        a, b = CassetteWriter(path), CassetteWriter(path)  # two workers on one cassette
        for i, entry in enumerate(entries * 3):
            cassette, writer = (mine, a) if i % 3 else (theirs, b)
            cassette.append(entry)
            writer.append(cassette, [entry])
        on_disk = llmvcr.load_cassette(path)
        assert len(on_disk) == len(entries) * 3  # nothing lost, nothing twice
        assert sorted(e.request_hash for e in on_disk.entries) == sorted(e.request_hash for e in entries * 3)
        # a writer alone produces exactly what a whole-cassette save would
        solo = llmvcr.Cassette(str(tmp_path / f"solo.{suffix}"))
        writer = CassetteWriter(solo.path)
        for entry in entries:
            solo.append(entry)
            writer.append(solo, [entry])
        assert Path(solo.path).read_bytes() == dump_document(document_of(solo), suffix)


def test_an_answer_ending_in_blank_lines_is_followed_by_more_entries(tmp_path: Path) -> None:
    """A body whose text keeps trailing newlines (YAML ``|+``) once made PyYAML end the document
    with "...", after which the next entry (or the end marker) could not be read."""
    from llmvcr.cassette.entries import Entry, Request, Response
    from llmvcr.storage.writer import CassetteWriter

    kept = Entry(
        "google",
        Request("POST", "/v1beta/m:streamGenerateContent"),
        Response(200, body="data: {}\n\n"),
        "sha256:a",
    )
    after = Entry("google", Request("GET", "/v1beta/models"), Response(200, body={"ok": True}), "sha256:b")
    for suffix in ("yaml", "json"):
        path = str(tmp_path / f"blank.{suffix}")
        cassette, writer = llmvcr.Cassette(path), CassetteWriter(path)
        for entry in (kept, after):  # one write each, as a recording appends them
            cassette.append(entry)
            writer.append(cassette, [entry])
        with pytest.warns(llmvcr.errors.EditedCassetteWarning, match="entry 0, 1 was edited by hand"):
            loaded = llmvcr.load_cassette(path)  # the made-up hashes read as edited: matched anew
        assert [e.response.body for e in loaded.entries] == ["data: {}\n\n", {"ok": True}]


def test_deferred_entries_reach_disk_without_another_call(tmp_path: Path, anthropic_client: Any) -> None:
    from llmvcr._active import current_session

    path = tmp_path / "deferred.yaml"
    with llmvcr.recording(path):
        session = current_session()
        assert session is not None
        anthropic_client.messages.create(
            model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "a"}]
        )
        session.file.queue.next_flush = time.monotonic() + 0.3  # as if the last write had been slow
        anthropic_client.messages.create(
            model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "b"}]
        )
        assert len(llmvcr.load_cassette(path)) == 1  # coalesced: not written yet
        deadline = time.monotonic() + 10
        while len(llmvcr.load_cassette(path)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(llmvcr.load_cassette(path)) == 2  # the timer wrote it while the cassette is still open


# -- fuzzing: the loader either loads or raises CassetteFormatError, never anything else ------
def _check(data: bytes, name: str) -> None:
    try:
        cassette = cassette_from_document(parse_document(data, name), name)
        validate(cassette)
    except llmvcr.CassetteFormatError:
        pass


json_trees = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "version",
                    "entries",
                    "request",
                    "response",
                    "request_hash",
                    "method",
                    "path",
                    "status",
                    "body",
                    "stream",
                    "data",
                    "headers",
                    "query",
                    "seed",
                    "x",
                ]
            ),
            children,
            max_size=5,
        )
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300))
def test_fuzz_random_bytes(data: bytes) -> None:
    _check(data, "fuzz.yaml")
    _check(data, "fuzz.json")


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(json_trees)
def test_fuzz_random_trees(tree: Any) -> None:
    document = {"version": 1, "entries": tree} if not isinstance(tree, dict) else tree
    _check(orjson.dumps(document), "fuzz.json")
    _check(yaml.safe_dump(document).encode(), "fuzz.yaml")


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.data())
def test_fuzz_mutated_real_cassette(data: st.DataObject) -> None:
    raw = bytearray(GOOD)
    for _ in range(data.draw(st.integers(1, 6))):
        op = data.draw(st.sampled_from(["flip", "cut", "dup"]))
        i = data.draw(st.integers(0, len(raw) - 1))
        if op == "flip":
            raw[i] = data.draw(st.integers(0, 255))
        elif op == "cut":
            del raw[i : i + data.draw(st.integers(1, 40))]
        else:
            raw[i:i] = raw[i : i + data.draw(st.integers(1, 40))]
        if not raw:
            raw = bytearray(b"x")
    _check(bytes(raw), "fuzz.yaml")


def test_an_exception_inside_the_cassette_keeps_every_entry(tmp_path: Path, anthropic_client: Any) -> None:
    from llmvcr._active import current_session

    path = tmp_path / "exception.yaml"
    with pytest.raises(RuntimeError, match="the test failed"), llmvcr.recording(path):
        session = current_session()
        assert session is not None
        for text in ("a", "b", "c"):
            anthropic_client.messages.create(
                model="claude-test", max_tokens=8, messages=[{"role": "user", "content": text}]
            )
            session.file.queue.next_flush = (
                time.monotonic() + 3600
            )  # as if writes were slow: "b", "c" wait in memory
        assert len(llmvcr.load_cassette(path)) == 1
        raise RuntimeError("the test failed")
    assert [e.request.body["messages"][0]["content"] for e in llmvcr.load_cassette(path).entries] == [
        "a",
        "b",
        "c",
    ]


def test_a_failed_write_leaves_the_previous_file_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from llmvcr.storage import files as storage

    cassette = load_bytes(tmp_path, GOOD)
    path = tmp_path / "atomic.yaml"
    llmvcr.save_cassette(path, cassette)
    before = path.read_bytes()
    cassette.append(cassette.entry(0))

    def crash(fd: int) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(
        storage.os, "fsync", crash
    )  # dies after the temporary file is written, before the rename
    with pytest.raises(OSError, match="disk full"):
        llmvcr.save_cassette(path, cassette)
    monkeypatch.undo()
    assert path.read_bytes() == before  # never half-written
    assert not list(tmp_path.glob(".llmvcr-tmp-*"))  # and the temporary file is cleaned up
    llmvcr.save_cassette(path, cassette)
    assert len(llmvcr.load_cassette(path)) == len(load_bytes(tmp_path, GOOD)) + 1


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_a_failed_write_then_a_good_one_writes_each_entry_once(
    tmp_path: Path, anthropic_client: Any, monkeypatch: pytest.MonkeyPatch, suffix: str
) -> None:
    """A full disk fails one write; the next write has every entry exactly once."""
    from llmvcr._active import current_session
    from llmvcr.storage import writer

    path = tmp_path / f"disk{suffix}"
    real = writer.atomic_write
    failures = iter([True])

    def flaky(target: str, data: bytes) -> None:
        if next(failures, False):
            raise OSError(28, "No space left on device")
        real(target, data)

    def ask(text: str) -> None:
        session = current_session()
        assert session is not None
        session.file.queue.next_flush = 0.0  # written at once, however slow the last write was
        anthropic_client.messages.create(
            model="claude-test", max_tokens=8, messages=[{"role": "user", "content": text}]
        )

    with llmvcr.recording(path):
        ask("one")
        monkeypatch.setattr(writer, "atomic_write", flaky)
        with pytest.warns(UserWarning, match="not written yet .*No space left"):
            ask("two")  # the call succeeds; its write fails and the entry stays pending, said aloud
        monkeypatch.setattr(writer, "atomic_write", real)
        ask("three")
    contents = [e.request.body["messages"][0]["content"] for e in llmvcr.load_cassette(path).entries]
    assert contents == ["one", "two", "three"]


@pytest.mark.filterwarnings("ignore::llmvcr.errors.ConversionWarning")
@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
def test_a_vcrpy_cassette_is_never_read_as_empty_nor_written_over(tmp_path: Path) -> None:
    from llmvcr.errors import ForeignCassetteError

    path = tmp_path / "legacy.yaml"
    path.write_text(
        "interactions:\n"
        "- request: {method: POST, uri: 'https://api.anthropic.com/v1/messages', body: {string: '{}'}, headers: {}}\n"
        "  response: {status: {code: 200, message: OK}, headers: {}, body: {string: '{}'}}\n"
        "version: 1\n"
    )
    before = path.read_bytes()
    assert len(llmvcr.load_cassette(path)) == 1  # read in place, never as empty
    for mode in ("once", "new_episodes", "none"):
        with llmvcr.use_cassette(path, record_mode=mode) as cassette:
            assert len(cassette) == 1
    with pytest.raises(ForeignCassetteError, match=r"a vcrpy cassette.*llmvcr convert"):
        with llmvcr.use_cassette(path, record_mode="all"):
            pass
    assert path.read_bytes() == before  # the user's recordings are untouched


@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
def test_the_convert_command_a_foreign_cassette_gives_ends_the_refusal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Followed as printed, the command converts the file the test reads: recording it again works,
    rather than the same refusal coming back (the command converted to a file nobody read)."""
    import shlex

    from llmvcr.cli import main
    from llmvcr.errors import ForeignCassetteError

    path = tmp_path / "test_summary.yaml"
    path.write_text(
        "interactions:\n"
        "- request: {method: POST, uri: 'https://api.anthropic.com/v1/messages', body: {string: '{}'}, headers: {}}\n"
        "  response: {status: {code: 200, message: OK}, headers: {}, body: {string: '{}'}}\n"
        "version: 1\n"
    )
    with pytest.raises(ForeignCassetteError) as info, llmvcr.use_cassette(path, record_mode="all"):
        pass
    command = str(info.value).split("convert it first: ", 1)[1]
    assert command == f"llmvcr convert {path} --to llmvcr-yaml -o {path}"
    assert main(shlex.split(command)[1:]) == 0
    capsys.readouterr()
    assert llmvcr.load_cassette(path).read_only is None  # llmvcr's own now, where the test reads it
    with llmvcr.use_cassette(path, record_mode="all"):  # no refusal: the loop is gone
        pass


def test_a_first_load_serves_the_entries_its_check_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every entry is built to check the file when its bytes are new; those entries serve, none is built twice."""
    monkeypatch.setenv("LLMVCR_STATE_DIR", str(tmp_path / "state"))  # new bytes: parsed and checked now
    path = tmp_path / "c.yaml"
    path.write_bytes(GOOD)
    built: list[llmvcr.Entry] = []
    check = llmvcr.storage.files.entry_from_mapping

    def counted(raw: Any, where: str, position: int) -> llmvcr.Entry:
        built.append(check(raw, where, position))
        return built[-1]

    monkeypatch.setattr(llmvcr.storage.files, "entry_from_mapping", counted)
    cassette = llmvcr.load_cassette(path)
    assert len(built) == len(cassette) > 0

    assert all(cassette.entry(i) is built[i] for i in range(len(cassette)))
    assert len(built) == len(cassette), "an entry was built again"  # every build goes through counted
    monkeypatch.undo()
    monkeypatch.setenv("LLMVCR_STATE_DIR", str(tmp_path / "state"))
    again = llmvcr.load_cassette(path)  # from the parse cache: each entry built when first served
    assert again.entries == cassette.entries


def test_an_unserved_entry_of_a_first_load_is_written_as_its_file_holds_it(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_bytes(GOOD)
    cassette = llmvcr.load_cassette(path)
    llmvcr.save_cassette(path, cassette)
    assert llmvcr.load_cassette(path).entries == cassette.entries
    assert yaml.safe_load(path.read_bytes())["entries"] == yaml.safe_load(GOOD)["entries"]
