"""Nothing recorded is lost, duplicated or silently dropped when writing meets an unlucky world:
a read-only folder or a full disk, parallel re-recorders, a killed writer, a hand-edited file,
a symlinked cassette."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

import llmvcr
from llmvcr.errors import CassetteWriteWarning

ROOT = Path(__file__).resolve().parent.parent.parent


def ask(client: Any, text: str) -> None:
    client.messages.create(model="claude-test", max_tokens=8, messages=[{"role": "user", "content": text}])


def contents(path: Path | str) -> list[str]:
    return [e.request.body["messages"][0]["content"] for e in llmvcr.load_cassette(path).entries]


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_XDIST_TESTRUNUID", "LLMVCR_RUN_ID")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return {**env, **extra}


# -- a read-only folder, a full disk -------------------------------------------------------------
UNWRITABLE_CHILD = textwrap.dedent("""
    import ctypes, os, resource, signal, sys, warnings
    import anthropic, llmvcr
    path, how, url, warning_filter = sys.argv[1:5]
    if how == "read-only" and os.geteuid() == 0:  # root ignores folder permissions: drop that power
        header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
        caps = (ctypes.c_uint32 * 6)()
        libc = ctypes.CDLL(None, use_errno=True)
        assert libc.capget(header, caps) == 0
        caps[0] = caps[3] = 0  # no effective capability: the folder's mode applies to root too
        assert libc.capset(header, caps) == 0, os.strerror(ctypes.get_errno())
    if how == "disk-full":  # a file-size limit: the kernel refuses the write as a full disk would
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (os.path.getsize(path) + 64, resource.RLIM_INFINITY))
    warnings.simplefilter(warning_filter)
    client = anthropic.Anthropic(api_key="sk-ant-test-0000", base_url=url)  # the SDK's own retries
    try:
        with llmvcr.recording(path, record_mode="new_episodes"):
            for i in range(3):
                try:
                    client.messages.create(
                        model="claude-test", max_tokens=8, messages=[{"role": "user", "content": f"new {i}"}]
                    )
                    print("call ok", flush=True)
                except Exception as err:
                    print("call failed:", type(err).__name__, err, flush=True)
    except Exception as err:
        print("exit:", type(err).__module__ + "." + type(err).__name__, err, flush=True)
""")


@pytest.mark.slow
@pytest.mark.parametrize("warning_filter", ["default", "error"])
@pytest.mark.parametrize("how", ["read-only", "disk-full"])
def test_an_unwritable_cassette_sends_each_call_once_and_fails_at_exit_naming_the_file(
    tmp_path: Path, server: Any, anthropic_client: Any, how: str, warning_filter: str
) -> None:
    folder = tmp_path / "cassettes"
    path = folder / "unwritable.yaml"
    with llmvcr.recording(path):
        ask(anthropic_client, "old")
    before = path.read_bytes()
    if how == "read-only":
        folder.chmod(0o555)
    server.requests.clear()
    try:
        done = subprocess.run(
            [sys.executable, "-c", UNWRITABLE_CHILD, str(path), how, server.url, warning_filter],
            env=child_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        folder.chmod(0o755)
    lines = done.stdout.splitlines()
    assert lines[:3] == ["call ok"] * 3, done.stdout + done.stderr  # the caller got every answer
    assert server.request_count == 3  # each call went out once: no SDK retry saw a write error
    # at exit, one error that names the file and how many entries it could not keep
    assert len(lines) == 4 and lines[3].startswith("exit: llmvcr.errors.CassetteWriteError"), done.stdout
    assert str(path) in lines[3] and "3 recorded entries" in lines[3], lines[3]
    if warning_filter == "default":  # and at once, a warning naming the file
        assert f"{path}: not written yet" in done.stderr, done.stderr
    assert path.read_bytes() == before  # the old file stays whole
    assert not list(folder.glob(".llmvcr-tmp-*"))


def test_a_failed_prune_names_the_file(
    tmp_path: Path, anthropic_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rewrite at exit (prune) fails the same way: the error names the file, never a bare OSError."""
    path = tmp_path / "prune.yaml"
    with llmvcr.recording(path):
        ask(anthropic_client, "a")
        ask(anthropic_client, "b")
    before = path.read_bytes()

    def refuse(src: Any, dst: Any) -> None:
        raise OSError(28, "No space left on device")

    with pytest.raises(llmvcr.LLMVCRError, match=f"{path}.*No space left"):
        with llmvcr.recording(path, prune=True):
            ask(anthropic_client, "a")
            monkeypatch.setattr(os, "replace", refuse)  # the disk fills up before the prune's rewrite
    monkeypatch.undo()
    assert path.read_bytes() == before


# -- record_mode="all" with parallel writers -------------------------------------------------------
ALL_CHILD = textwrap.dedent("""
    import sys, anthropic, llmvcr
    path, url, worker, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    client = anthropic.Anthropic(api_key="sk-ant-test-0000", base_url=url, max_retries=0)
    with llmvcr.recording(path, record_mode="all"):
        for i in range(n):
            client.messages.create(
                model="claude-test", max_tokens=8, messages=[{"role": "user", "content": f"{worker}-{i}"}]
            )
""")


def run_writers(path: Path, server: Any, workers: list[str], n: int, run_id: str) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", ALL_CHILD, str(path), server.url, worker, str(n)],
            env=child_env(LLMVCR_RUN_ID=run_id),
        )
        for worker in workers
    ]
    assert [p.wait(timeout=300) for p in procs] == [0] * len(workers)


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
@pytest.mark.slow
def test_record_mode_all_replaces_once_per_run_then_merges_parallel_writers(
    tmp_path: Path, server: Any, anthropic_client: Any, suffix: str
) -> None:
    path = tmp_path / f"shared{suffix}"
    with llmvcr.recording(path):
        for i in range(5):
            ask(anthropic_client, f"stale-{i}")
    workers = ["w0", "w1", "w2", "w3"]
    run_writers(path, server, workers, 12, "run-1")
    expected = sorted(f"{w}-{i}" for w in workers for i in range(12))
    assert sorted(contents(path)) == expected  # 48 entries: none lost, none twice, the old run's gone
    run_writers(path, server, ["again"], 3, "run-2")  # a new run replaces again
    assert contents(path) == ["again-0", "again-1", "again-2"]


def test_two_sessions_of_one_run_share_a_cassette_in_record_mode_all(
    tmp_path: Path, anthropic_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two tests of one run re-recording a shared cassette: the second adds, it does not replace."""
    path = tmp_path / "shared.yaml"
    monkeypatch.setenv("LLMVCR_RUN_ID", "run-a")
    with llmvcr.recording(path, record_mode="all"):
        ask(anthropic_client, "first test")
    with llmvcr.recording(path, record_mode="all"):
        ask(anthropic_client, "second test")
    assert contents(path) == ["first test", "second test"]
    monkeypatch.setenv("LLMVCR_RUN_ID", "run-b")
    with llmvcr.recording(path, record_mode="all"):
        ask(anthropic_client, "next run")
    assert contents(path) == ["next run"]


def test_each_pytest_run_is_one_recording_run(pytester: pytest.Pytester, server: Any) -> None:
    """Under pytest a run is the test session (pytest-xdist workers share the controller's)."""
    pytester.makepyfile(
        test_shared=f"""
        import anthropic, pytest

        @pytest.mark.llmvcr("shared")
        @pytest.mark.parametrize("n", [1, 2])
        def test_one(n):
            client = anthropic.Anthropic(api_key="sk-ant-test-0000", base_url={server.url!r}, max_retries=0)
            client.messages.create(
                model="claude-test", max_tokens=8, messages=[{{"role": "user", "content": f"t{{n}}"}}]
            )
        """
    )
    for _ in range(2):
        pytester.runpytest("-p", "no:cacheprovider", "--llmvcr-record-mode=all").assert_outcomes(passed=2)
        assert contents(pytester.path / "cassettes" / "shared.yaml") == ["t1", "t2"]


# -- temporary files of a killed writer ----------------------------------------------------------
HANGING_WRITER = textwrap.dedent("""
    import os, sys, time, llmvcr
    cassette = llmvcr.Cassette(sys.argv[1])
    def hang(fd):
        print("writing", flush=True)
        time.sleep(600)
    os.fsync = hang  # stop half-way through the write, the temporary file on disk
    llmvcr.save_cassette(sys.argv[1], cassette)
""")


def writer_stuck_mid_write(path: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HANGING_WRITER, str(path)], stdout=subprocess.PIPE, text=True, env=child_env()
    )
    assert proc.stdout is not None and proc.stdout.readline() == "writing\n"
    return proc


def test_temporary_files_of_a_killed_writer_are_removed_by_the_next_write(
    tmp_path: Path, anthropic_client: Any
) -> None:
    path = tmp_path / "killed.yaml"
    killed = writer_stuck_mid_write(path)
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=20)
    left = list(tmp_path.glob(".llmvcr-tmp-*"))
    assert len(left) == 1
    alive = writer_stuck_mid_write(tmp_path / "other.yaml")  # another writer, still at work
    try:
        working = set(tmp_path.glob(".llmvcr-tmp-*")) - set(left)
        old = tmp_path / ".llmvcr-tmp-abandoned"  # no owner to ask, and a day old
        old.write_bytes(b"half")
        day_ago = time.time() - 86400
        os.utime(old, (day_ago, day_ago))
        with llmvcr.recording(path):
            ask(anthropic_client, "next")
        assert set(tmp_path.glob(".llmvcr-tmp-*")) == working  # the live writer's file is kept
    finally:
        alive.kill()
        alive.wait(timeout=20)
    assert contents(path) == ["next"]


# -- a hand-edited cassette ----------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_new_episodes_keeps_unknown_top_level_keys(
    tmp_path: Path, anthropic_client: Any, suffix: str
) -> None:
    path = tmp_path / f"edited{suffix}"
    with llmvcr.recording(path):
        ask(anthropic_client, "one")
    document = yaml.safe_load(path.read_text())
    document = {"notes": {"owner": "team-a", "why": ["hand", "added"]}, **document}
    path.write_text(yaml.safe_dump(document, sort_keys=False) if suffix == ".yaml" else json.dumps(document))
    with llmvcr.recording(path, record_mode="new_episodes"):
        ask(anthropic_client, "two")
    after = yaml.safe_load(path.read_text())
    assert after["notes"] == {"owner": "team-a", "why": ["hand", "added"]}
    assert next(iter(after)) == "notes"  # where the user put it
    assert contents(path) == ["one", "two"]


@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
def test_new_episodes_keeps_comments_where_the_file_allows(tmp_path: Path, anthropic_client: Any) -> None:
    path = tmp_path / "commented.yaml"
    with llmvcr.recording(path):
        ask(anthropic_client, "one")
    text = path.read_text()
    edited = "# recorded against the staging model\n" + text.replace(
        "\nentries:\n", "\nentries:  # keep them in call order\n# the first call\n", 1
    )
    path.write_text(edited)
    with llmvcr.recording(path, record_mode="new_episodes"):
        ask(anthropic_client, "two")
    # every byte the user wrote, comments included; only the entry count follows the new entry
    assert "entry_count: 1\n" in edited
    kept = edited.replace("entry_count: 1\n", "entry_count: 2\n").removesuffix("entries_end: true\n")
    assert path.read_text().startswith(kept) and path.read_text().endswith("\nentries_end: true\n")
    assert contents(path) == ["one", "two"]


def move_entries_up(text: str) -> str:
    head, entries = text.split("\nentries:\n", 1)
    entries = entries.removesuffix("entries_end: true\n")  # the end marker stays the last line
    return "entries:\n" + entries + head + "\nentries_end: true\n"


@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
@pytest.mark.parametrize("edit", ["header changes", "entries not last"])
def test_new_episodes_warns_once_when_comments_cannot_be_kept(
    tmp_path: Path, anthropic_client: Any, openai_client: Any, edit: str
) -> None:
    path = tmp_path / "commented.yaml"
    with llmvcr.recording(path):
        ask(anthropic_client, "one")
    text = "# recorded against the staging model\n" + path.read_text()
    path.write_text(move_entries_up(text) if edit == "entries not last" else text)
    with pytest.warns(CassetteWriteWarning, match=f"{path}: .*comments") as caught:
        with llmvcr.recording(path, record_mode="new_episodes"):
            if edit == "header changes":  # a second SDK joins recorded_with
                openai_client.chat.completions.create(
                    model="gpt-test", messages=[{"role": "user", "content": "two"}]
                )
            else:
                ask(anthropic_client, "two")
            ask(anthropic_client, "three")
    assert len([w for w in caught if issubclass(w.category, CassetteWriteWarning)]) == 1
    assert len(llmvcr.load_cassette(path)) == 3


def test_a_cassette_without_comments_gives_no_warning(
    tmp_path: Path, anthropic_client: Any, recwarn: pytest.WarningsRecorder
) -> None:
    path = tmp_path / "plain.yaml"
    with llmvcr.recording(path):
        ask(anthropic_client, "a\n# heading\n  #tag and a #hash")
    with llmvcr.recording(path, record_mode="new_episodes"):
        ask(anthropic_client, "b")
    path.write_text(path.read_text().replace("version:", "'#key': 'value # not a comment'\nversion:", 1))
    with llmvcr.recording(path, record_mode="new_episodes"):
        ask(anthropic_client, "c")
    assert not [w for w in recwarn if issubclass(w.category, CassetteWriteWarning)]
    assert contents(path) == ["a\n# heading\n  #tag and a #hash", "b", "c"]


# -- a symlinked cassette -----------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
def test_a_symlinked_cassette_is_written_through_the_link(tmp_path: Path, anthropic_client: Any) -> None:
    shared = tmp_path / "shared"
    project = tmp_path / "project"
    shared.mkdir()
    project.mkdir()
    target = shared / "c.yaml"
    link = project / "c.yaml"
    with llmvcr.recording(target):
        ask(anthropic_client, "one")
    link.symlink_to(os.path.relpath(target, project))
    with llmvcr.recording(link, record_mode="new_episodes"):
        ask(anthropic_client, "two")
    assert link.is_symlink()  # still a link
    assert contents(target) == ["one", "two"]  # and the shared target has the new entry
    with llmvcr.recording(link, record_mode="all"):
        ask(anthropic_client, "three")
    llmvcr.save_cassette(link, llmvcr.load_cassette(link))
    assert link.is_symlink() and contents(target) == ["three"]
    assert not list(project.glob(".llmvcr-tmp-*")) and not list(shared.glob(".llmvcr-tmp-*"))


def test_a_link_and_its_target_share_one_lock(tmp_path: Path) -> None:
    from llmvcr.storage.writer import lock_path

    target = tmp_path / "c.yaml"
    link = tmp_path / "link.yaml"
    link.symlink_to(target)
    assert lock_path(str(link)) == lock_path(str(target))


@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
def test_adding_to_a_streamed_cassette_keeps_its_text(tmp_path: Path, openai_client: Any) -> None:
    """Entries already on disk keep their text (a stream's one-line timing too) when new ones join."""
    path = tmp_path / "stream.yaml"

    def stream(text: str) -> None:
        list(
            openai_client.chat.completions.create(
                model="gpt-test", messages=[{"role": "user", "content": text}], stream=True
            )
        )

    with llmvcr.recording(path):
        stream("one two three")
    before = path.read_text()
    assert "timing: [" in before
    with llmvcr.recording(path, record_mode="new_episodes"):
        stream("four five")
    kept = before.replace("entry_count: 1\n", "entry_count: 2\n").removesuffix("entries_end: true\n")
    assert path.read_text().startswith(kept)
