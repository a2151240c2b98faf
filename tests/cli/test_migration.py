"""Switching a pytest-recording suite to llmvcr changes no result (issue 25).

Cassettes here are written by pytest-recording itself (installed in the test environment), recording
the real SDK against the loopback server; then the suite is switched to llmvcr and run offline.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

HEADER = """
import os, anthropic, pytest
URL = os.environ["LLM_URL"]

def ask(text, max_tokens=16):
    client = anthropic.Anthropic(api_key="sk-ant-inner-test-key-000", base_url=URL, max_retries=0)
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=max_tokens,
                                  messages=[{"role": "user", "content": text}]).content[0].text
"""


@pytest.fixture
def inner(pytester: pytest.Pytester, server: Any, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("LLM_URL", server.url)
    monkeypatch.delenv("CI", raising=False)
    return pytester


def run(p: pytest.Pytester, *args: str) -> pytest.RunResult:
    return p.runpytest_subprocess("-p", "no:cacheprovider", *args, timeout=120)


def record_with_pytest_recording(p: pytest.Pytester, body: str) -> Path:
    """The test module as a pytest-recording suite has it, recorded once by pytest-recording."""
    p.makepyfile(test_chat=HEADER + body)
    run(p, "-p", "no:llmvcr", "--record-mode=once").assert_outcomes(passed=1)
    cassette = p.path / "cassettes" / "test_chat" / "test_one.yaml"
    assert cassette.read_text().startswith("interactions:")  # vcrpy's file, not llmvcr's
    return cassette


STALE = """
@pytest.mark.{marker}
def test_one():
    assert ask("hello", max_tokens={max_tokens}) == "Echo: hello"
"""


@pytest.mark.slow
def test_a_stale_pytest_recording_cassette_still_passes_and_the_drift_is_reported(
    inner: pytest.Pytester, server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    cassette = record_with_pytest_recording(inner, STALE.format(marker="vcr", max_tokens=16))
    # the project's code moved on: pytest-recording still replays it (method + URI)
    inner.makepyfile(test_chat=HEADER + STALE.format(marker="vcr", max_tokens=64))
    before = server.request_count
    run(inner, "-p", "no:llmvcr", "--record-mode=none").assert_outcomes(passed=1)
    # switched to llmvcr, offline on CI: the same result, and the drift is shown
    inner.makepyfile(test_chat=HEADER + STALE.format(marker="llmvcr", max_tokens=64))
    monkeypatch.setenv("CI", "true")
    result = run(inner, "-p", "no:recording")
    result.assert_outcomes(passed=1)
    assert server.request_count == before
    result.stdout.fnmatch_lines(
        [
            "llmvcr: 1 LLM call replayed*",
            "  1 call replayed as recorded although the request differs from the recording, in 1 cassette "
            "(--llmvcr-fail-on-stale makes each a failure):",
            "    cassettes/test_chat/test_one.yaml: 1 call (method + URI), "
            "request.body.max_tokens: recorded 16 != live 64",
            "      see each difference: pytest test_chat.py::test_one --llmvcr-fail-on-stale",
            "      re-record: llmvcr convert cassettes/test_chat/test_one.yaml --to llmvcr-yaml "
            "-o cassettes/test_chat/test_one.yaml && pytest test_chat.py::test_one --llmvcr-record-mode=all",
        ]
    )
    # the strict option turns it into a failure that shows the difference
    strict = run(inner, "-p", "no:recording", "--llmvcr-fail-on-stale")
    strict.assert_outcomes(failed=1)
    strict.stdout.fnmatch_lines(["*on_stale='fail'*", "*request.body.max_tokens: recorded 16 != live 64*"])
    assert server.request_count == before
    assert cassette.read_text().startswith("interactions:")  # never written over


@pytest.mark.slow
def test_a_converted_cassette_keeps_its_recorded_matching_until_re_recorded(
    inner: pytest.Pytester, server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from llmvcr.cli import main

    cassette = record_with_pytest_recording(inner, STALE.format(marker="vcr", max_tokens=16))
    inner.makepyfile(test_chat=HEADER + STALE.format(marker="llmvcr", max_tokens=64))
    folder = str(inner.path / "cassettes")
    assert main(["convert", folder, "--from", "vcrpy", "--to", "llmvcr-yaml", "-o", folder]) == 0
    assert "entries:" in cassette.read_text()
    monkeypatch.setenv("CI", "true")
    converted = run(inner, "-p", "no:recording")
    converted.assert_outcomes(passed=1)
    converted.stdout.fnmatch_lines(
        [
            "*1 call replayed as recorded although the request differs*",
            "      re-record: pytest test_chat.py::test_one --llmvcr-record-mode=all",
        ]
    )
    # re-recorded, the cassette holds today's request and is matched strictly from then on
    monkeypatch.delenv("CI")
    run(inner, "-p", "no:recording", "--llmvcr-record-mode=all").assert_outcomes(passed=1)
    assert "max_tokens: 64" in cassette.read_text()
    inner.makepyfile(test_chat=HEADER + STALE.format(marker="llmvcr", max_tokens=65))
    monkeypatch.setenv("CI", "true")
    strict = run(inner, "-p", "no:recording")
    strict.assert_outcomes(failed=1)
    strict.stdout.fnmatch_lines(["*ReplayDivergence*", "*max_tokens: recorded 64 != live 65*"])


@pytest.mark.slow
def test_the_match_on_of_the_projects_vcr_config_is_how_its_cassettes_are_matched(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = """
@pytest.fixture(scope="module")
def vcr_config():
    return {"match_on": ["method", "uri", "body"]}
"""
    record_with_pytest_recording(inner, config + STALE.format(marker="vcr", max_tokens=16))
    monkeypatch.setenv("CI", "true")
    # pytest-recording compared bodies for this project: a drifted body fails there and here alike
    inner.makepyfile(test_chat=HEADER + config + STALE.format(marker="vcr", max_tokens=64))
    run(inner, "-p", "no:llmvcr", "--record-mode=none").assert_outcomes(failed=1)
    inner.makepyfile(test_chat=HEADER + config + STALE.format(marker="llmvcr", max_tokens=64))
    run(inner).assert_outcomes(failed=1)
    # and the same config renamed llmvcr_config by the migration means the same
    renamed = config.replace("def vcr_config", "def llmvcr_config")
    inner.makepyfile(test_chat=HEADER + renamed + STALE.format(marker="llmvcr", max_tokens=16))
    run(inner, "-p", "no:recording").assert_outcomes(passed=1)
    inner.makepyfile(test_chat=HEADER + renamed + STALE.format(marker="llmvcr", max_tokens=64))
    run(inner, "-p", "no:recording").assert_outcomes(failed=1)


IDS = """
@pytest.mark.{marker}
@pytest.mark.parametrize("text", ["a b", "ünï cödé", "x/y: z?", "q'uote"])
def test_param(text):
    assert ask(text) == "Echo: " + text

class TestOuter:
    @pytest.mark.{marker}
    def test_in_class(self):
        assert ask("in class") == "Echo: in class"

    class TestInner:
        @pytest.mark.{marker}
        def test_nested(self):
            assert ask("nested") == "Echo: nested"

@pytest.mark.{marker}
@pytest.mark.default_cassette("shared_name")
def test_named_by_marker():
    assert ask("named") == "Echo: named"
"""

OWN_DIR = """
@pytest.fixture(scope="module")
def vcr_cassette_dir(request):
    return os.path.join(os.path.dirname(str(request.node.path)), "recorded", "elsewhere")

@pytest.fixture
def default_cassette_name(request):
    return "custom-" + request.node.name.replace(" ", "_")

@pytest.mark.{marker}
@pytest.mark.parametrize("text", ["p q"])
def test_custom(text):
    assert ask(text) == "Echo: " + text
"""


@pytest.mark.slow
def test_pytest_recordings_file_is_found_for_every_test_id(
    inner: pytest.Pytester, server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    sub = inner.mkpydir("sub")
    (sub / "deeper").mkdir()
    (sub / "deeper" / "__init__.py").write_text("")
    files = {"test_ids.py": IDS, "sub/deeper/test_own_dir.py": OWN_DIR}
    for name, body in files.items():
        (inner.path / name).write_text(HEADER + body.replace("{marker}", "vcr"))
    run(inner, "-p", "no:llmvcr", "--record-mode=once").assert_outcomes(passed=8)
    recorded = sorted(str(p.relative_to(inner.path)) for p in inner.path.rglob("*.yaml"))
    assert "sub/deeper/recorded/elsewhere/custom-test_custom[p_q].yaml" in recorded
    assert "cassettes/test_ids/TestInner.test_nested.yaml" in recorded  # the innermost class only
    before = server.request_count
    for name, body in files.items():
        (inner.path / name).write_text(HEADER + body.replace("{marker}", "llmvcr"))
    monkeypatch.setenv("CI", "true")
    # with pytest-recording's fixtures loaded, and with the plugin gone (llmvcr mirrors its naming)
    for plugins in ([], ["-p", "no:recording"]):
        result = run(inner, *plugins, "-W", "error::FutureWarning")
        result.assert_outcomes(passed=8)
        result.stdout.fnmatch_lines(["llmvcr: 8 LLM calls replayed, 0 recorded, 0 cassettes written*"])
    assert server.request_count == before
    assert sorted(str(p.relative_to(inner.path)) for p in inner.path.rglob("*.yaml")) == recorded


@pytest.mark.slow
def test_what_tests_read_from_vcr_is_on_the_llmvcr_cassette(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = """
@pytest.mark.{marker}
def test_one({fixture}):
    assert ask("hello") == "Echo: hello"
    assert {fixture}.requests[0].{body}["messages"][0]["content"] == "hello"
    assert {played} and {fixture}.all_played
"""
    sent = "body and json.loads(vcr.requests[0].body)"
    recording = body.format(marker="vcr", fixture="vcr", body=sent, played="True")
    inner.makepyfile(test_chat=HEADER + "import json\n" + recording.replace(" and vcr.all_played", ""))
    run(inner, "-p", "no:llmvcr", "--record-mode=once").assert_outcomes(passed=1)
    replaying = body.format(marker="vcr", fixture="vcr", body=sent, played="vcr.play_count == 1")
    inner.makepyfile(test_chat=HEADER + "import json\n" + replaying)
    run(inner, "-p", "no:llmvcr", "--record-mode=none").assert_outcomes(passed=1)
    monkeypatch.setenv("CI", "true")
    for fixture in ("llmvcr_cassette", "vcr"):
        if fixture == "vcr":  # the optional fixture name, for a suite that no longer loads pytest-recording
            inner.makeini("[pytest]\nllmvcr_vcr_fixture = true\n")
        played = f"sum({fixture}.play_counts) == 1"
        sent = f"json and json.loads({fixture}.requests[0].body)"  # parsed, and the bytes vcrpy gives
        migrated = body.format(marker="llmvcr", fixture=fixture, body=sent, played=played)
        inner.makepyfile(test_chat=HEADER + "import json\n" + migrated)
        run(inner, "-p", "no:recording").assert_outcomes(passed=1)


SUITE = """
import os, anthropic, pytest
URL = os.environ["LLM_URL"]

def ask(text):
    client = anthropic.Anthropic(api_key="sk-ant-inner-test-key-000", base_url=URL, max_retries=0)
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=16,
                                  messages=[{"role": "user", "content": text}]).content[0].text


@pytest.fixture(scope="module")
def vcr_config():
    return {"match_on": ["method", "uri"], "filter_headers": [("x-api-key", "DUMMY")],
            "decode_compressed_response": True}


@pytest.fixture
def settings(vcr_config):
    return dict(vcr_config)


@pytest.mark.vcr
def test_plain(settings):
    assert ask("plain") == "Echo: plain"
    assert settings["match_on"] == ["method", "uri"]


@pytest.mark.vcr()
def test_reads_vcr(vcr):
    assert ask("read") == "Echo: read"
    assert vcr.play_count <= 1 and "read" in str(vcr.requests[0].body)  # 0 while recording


@pytest.mark.vcr
class TestChat:
    def test_in_class(self):
        assert ask("in class") == "Echo: in class"


@pytest.mark.vcr
def test_with_a_health_check():
    assert ask("mixed") == "Echo: mixed"


@pytest.mark.vcr("shared.yaml")
def test_with_extra_cassettes():
    assert ask("extra") == "Echo: extra"
"""

# after recording: the tool the test drives also checks an image URL (its answer is in the cassette)
CHECK = """
    import httpx
    assert httpx.head("https://images.example.com/a.png").status_code == 200
"""


@pytest.mark.slow
def test_llmvcr_migrate_shows_a_diff_then_rewrites_and_every_test_still_passes(
    inner: pytest.Pytester, server: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import yaml

    from llmvcr.cli import main

    module = inner.path / "tests" / "test_suite.py"
    module.parent.mkdir()
    module.write_text(SUITE)
    run(inner, "-p", "no:llmvcr", "--record-mode=once").assert_outcomes(passed=5)
    module.write_text(
        SUITE.replace(
            '    assert ask("mixed") == "Echo: mixed"\n', '    assert ask("mixed") == "Echo: mixed"' + CHECK
        )
    )
    # the tool this test drives also checks a URL: that interaction is in its cassette too
    mixed = inner.path / "tests" / "cassettes" / "test_suite" / "test_with_a_health_check.yaml"
    document = yaml.safe_load(mixed.read_text())
    document["interactions"].append(
        {
            "request": {
                "method": "HEAD",
                "uri": "https://images.example.com/a.png",
                "body": None,
                "headers": {},
            },
            "response": {"status": {"code": 200, "message": "OK"}, "headers": {}, "body": {"string": ""}},
        }
    )
    mixed.write_text(yaml.safe_dump(document))
    (inner.path / "pytest.ini").write_text("[pytest]\naddopts = --record-mode=none\n")
    before = server.request_count
    monkeypatch.setenv("CI", "true")
    run(inner, "-p", "no:llmvcr").assert_outcomes(passed=5)  # as-is under pytest-recording, offline
    original = module.read_text()

    monkeypatch.chdir(inner.path)
    assert main(["migrate", "tests"]) == 0
    shown = capsys.readouterr().out
    assert module.read_text() == original  # a dry run writes nothing
    assert "-@pytest.mark.vcr\n+@pytest.mark.llmvcr\n" in shown
    assert "-def vcr_config():\n+def llmvcr_config():\n" in shown
    assert "nothing written; apply it with: llmvcr migrate tests --write" in shown
    assert (
        "tests/test_suite.py:47: test_with_extra_cassettes stays on pytest-recording: "
        "its marker names extra cassette files, which llmvcr does not combine"
    ) in shown, shown[-1500:]
    assert (
        "test_with_a_health_check: @pytest.mark.vcr -> @pytest.mark.llmvcr" in shown
    )  # llmvcr answers its HEAD

    assert main(["migrate", ".", "--write"]) == 0
    capsys.readouterr()
    migrated = module.read_text()
    assert migrated.count("@pytest.mark.llmvcr") == 4 and migrated.count("@pytest.mark.vcr") == 1
    assert "def llmvcr_config():" in migrated and "def settings(llmvcr_config):" in migrated
    assert "def test_reads_vcr(llmvcr_cassette):" in migrated
    assert (
        'sum(llmvcr_cassette.play_counts) <= 1 and "read" in str(llmvcr_cassette.requests[0].body)'
        in migrated
    )
    assert (inner.path / "pytest.ini").read_text() == (
        "[pytest]\naddopts = --record-mode=none --llmvcr-record-mode=none\n"  # one test stays on vcr
    )
    result = run(inner)  # both plugins, offline, on CI: in place
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines(["llmvcr: 4 LLM calls replayed*"])
    assert main(["migrate", ".", "--write", "--convert"]) == 0
    assert (
        "converted 4 cassettes in place; kept 1 cassette of tests left on pytest-recording"
        in capsys.readouterr().out
    )
    extra = inner.path / "tests" / "cassettes" / "test_suite" / "test_with_extra_cassettes.yaml"
    assert extra.read_text().startswith("interactions:")  # still pytest-recording's
    assert "entries:" in mixed.read_text()  # its HEAD comes along, answered from the file
    run(inner).assert_outcomes(passed=5)  # converted
    assert server.request_count == before


@pytest.mark.filterwarnings("ignore::llmvcr.errors.UnplayedEntriesWarning")
def test_a_foreign_cassettes_non_llm_calls_are_answered_from_it_in_place_and_converted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import httpx
    import httpx2
    import yaml

    import llmvcr
    from llmvcr.cli import main
    from llmvcr.errors import UnrecognizedRequestError

    real = Path(__file__).parent.parent / "data" / "vcrpy_real" / "llm-anthropic" / "test_prompt.yaml"
    document = yaml.safe_load(real.read_text())
    head = {"method": "HEAD", "uri": "https://images.example.com/a.png", "body": None, "headers": {}}
    image = {
        "status": {"code": 200, "message": "OK"},
        "headers": {"Content-Type": ["image/png"]},
        "body": {"string": ""},
    }
    get = {"method": "GET", "uri": "https://api.example.com/v1/info?b=2&a=1", "body": None, "headers": {}}
    info = {
        "status": {"code": 200, "message": "OK"},
        "headers": {"Content-Type": ["application/json"]},
        "body": {"string": '{"ok": true}'},
    }
    document["interactions"] += [{"request": head, "response": image}, {"request": get, "response": info}]
    source = tmp_path / "mixed.yaml"
    source.write_text(yaml.safe_dump(document))
    converted = tmp_path / "converted.yaml"
    assert main(["convert", str(source), "--to", "llmvcr-yaml", "-o", str(converted)]) == 0
    capsys.readouterr()
    for path in (source, converted):  # in place (vcrpy's file), and converted
        for module in (httpx, httpx2):
            with llmvcr.use_cassette(path, record_mode="none"):
                answer = module.head("https://images.example.com/a.png")
                assert answer.status_code == 200 and answer.headers["content-type"] == "image/png"
                assert module.get("https://api.example.com/v1/info?a=1&b=2").json() == {"ok": True}
                with pytest.raises(UnrecognizedRequestError) as refused:  # recorded host, other URL
                    module.head("https://images.example.com/b.png")
            message = str(refused.value)
            assert "not recorded in the file, which holds other calls to images.example.com" in message
            assert "allow_unrecognized" not in message  # no advice sends a recorded call to the network


def test_a_suite_with_nothing_to_migrate_is_told_so_in_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from llmvcr.cli import main

    (tmp_path / "test_done.py").write_text("import pytest\n\n@pytest.mark.llmvcr\ndef test_x():\n    pass\n")
    monkeypatch.chdir(tmp_path)
    assert main(["migrate", ".", "--write", "--convert"]) == 0
    out = capsys.readouterr().out
    assert "llmvcr migrate: nothing to change" in out and "file(s)" not in out
    assert "converted 0 cassettes in place\n" in out and "of tests left" not in out
