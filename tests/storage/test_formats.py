"""The format table (``llmvcr.storage.formats``) is the one place a format is declared: the command line's
choices and "did you mean", its detection, the known formats an error lists and llmvcr's lazy
``from_*`` / ``to_*`` names all come from it, and each sniff claims its own format's files only."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import llmvcr
from llmvcr.cli import build_parser, main
from llmvcr.cli.files import write_as
from llmvcr.cli.reading import load_any
from llmvcr.storage.formats import (
    FORMATS,
    OWN,
    Format,
    by_name,
    converters,
    known,
    readable,
    resolve,
    writable,
)
from llmvcr.storage.sniff import Head, claims, detect, foreign_format

TESTS = Path(__file__).resolve().parent.parent
DATA = TESTS / "data"
LLMVCR = TESTS / "cassettes" / "sdk-oldest.yaml"  # an llmvcr cassette of 20 anthropic calls

# one real file of each format llmvcr reads: another tool's, or what llmvcr's own writer made
RECORDED = {
    OWN: LLMVCR,
    "vcrpy": DATA / "vcrpy_real" / "llm-anthropic" / "test_prompt.yaml",
    "cassetter": DATA / "vcrpy_real" / "pydantic-ai" / "test_openai_instructions.yaml",
    "langchain-gz": DATA / "vcrpy_real" / "langchain-layout" / "test_anthropic_message_create_legacy.yaml.gz",
    "otel": DATA / "otel" / "anthropic-agent.jsonl",
}
WRITTEN = {"regista": "trace.jsonl", "agentskit": "cassette.json"}


@pytest.fixture
def fixture_of(tmp_path: Path) -> dict[str, Path]:
    """Every readable format's file: the real ones above, and the ones llmvcr writes from LLMVCR."""
    found = dict(RECORDED)
    cassette = llmvcr.load_cassette(LLMVCR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # what a trace leaves out is warned; not the point here
        for name, file in WRITTEN.items():
            found[name] = Path(write_as(cassette, str(tmp_path / file), name))
    return found


def test_every_format_llmvcr_reads_has_a_file_here(fixture_of: dict[str, Path]) -> None:
    assert set(fixture_of) == set(readable())  # a new format's row needs a file in this test


@pytest.mark.parametrize("name", readable())
def test_a_sniff_claims_its_own_format_file_and_no_other(name: str, fixture_of: dict[str, Path]) -> None:
    path = fixture_of[name]
    assert path.name.lower().endswith(by_name(name).suffixes)
    assert claims(Head.of(str(path))) == [name]
    assert detect(str(path)) == name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cassette = load_any(str(path))
    assert len(cassette) > 0  # and its reader reads it
    assert foreign_format(path.read_bytes()[:65536]) == (name if by_name(name).in_place else None)


def test_no_file_under_tests_data_is_claimed_by_two_formats() -> None:
    files = [
        p
        for p in DATA.rglob("*")
        if p.is_file() and p.name.lower().endswith((".yaml", ".json", ".jsonl", ".gz"))
    ]
    assert len(files) > 50
    for path in files:
        assert len(claims(Head.of(str(path)))) <= 1, path


@pytest.mark.parametrize("name", writable())
def test_what_llmvcr_writes_in_a_format_is_detected_as_it_and_reads_back(name: str, tmp_path: Path) -> None:
    cassette = llmvcr.load_cassette(LLMVCR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        written = write_as(cassette, str(tmp_path / ("out" + by_name(name).suffixes[0])), name)
        fmt = detect(written)
        assert fmt == (name if by_name(name).read else OWN)  # llmvcr-json and -yaml are llmvcr's own
        read_back = len(load_any(written))
    assert 0 < read_back <= len(cassette)  # a trace keeps what it can express, with a warning for the rest
    assert read_back == len(cassette) or not by_name(name).named_by_suffix


def test_the_command_offers_every_format_of_the_table() -> None:
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices  # argparse's own record
    assert commands is not None
    for command in ("show", "diff", "convert"):
        (source,) = [a for a in commands[command]._actions if a.dest == "from_format"]
        assert tuple(source.choices or ()) == readable()
    (target,) = [a for a in commands["convert"]._actions if a.dest == "to"]
    assert tuple(target.choices or ()) == writable()
    assert readable() == ("llmvcr", "vcrpy", "cassetter", "langchain-gz", "regista", "agentskit", "otel")
    assert writable() == ("regista", "agentskit", "llmvcr-json", "llmvcr-yaml")


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
def test_a_mistyped_format_gets_a_did_you_mean(fmt: Format, capsys: pytest.CaptureFixture[str]) -> None:
    typo = fmt.name[:-1]  # "vcrp", "agentski"
    tried = []
    if fmt.read is not None:
        tried.append(["convert", "x.yaml", "--from", typo, "--to", "regista", "-o", "y"])
    if fmt.write is not None:
        tried.append(["convert", "x.yaml", "--to", typo, "-o", "y"])
    assert tried
    for argv in tried:
        with pytest.raises(SystemExit) as info:
            main(argv)
        err = capsys.readouterr().err
        assert info.value.code == 2 and f"invalid choice: '{typo}'" in err
        assert f"did you mean '{fmt.name}'?" in err, err


def test_every_converter_the_table_names_is_a_lazy_public_name() -> None:
    assert set(converters()) == {
        "from_vcrpy",
        "from_regista_trace",
        "to_regista_trace",
        "from_agentskit",
        "to_agentskit",
        "from_otel",
    }
    for name, spec in converters().items():
        assert name in llmvcr.__all__
        assert getattr(llmvcr, name) is resolve(spec)
    # the imports type checkers read name each converter where the table does
    tree = ast.parse((Path(llmvcr.__file__)).read_text())
    typed = {
        alias.asname: f"llmvcr.{node.module}:{alias.name}"
        for block in tree.body
        if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"
        for node in block.body
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("convert.")
        for alias in node.names
    }
    assert typed == converters()


def test_sniffing_every_format_imports_no_converter() -> None:
    code = (
        "import sys, llmvcr\n"
        "from llmvcr.storage.sniff import detect\n"
        "print([detect(p) for p in sys.argv[1:]])\n"
        "print(sorted(m for m in sys.modules if m.startswith('llmvcr.convert')))\n"
    )
    root = str(TESTS.parent)
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run(
        [sys.executable, "-c", code, *map(str, RECORDED.values())],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [repr(list(RECORDED)), "[]"]


def test_a_file_no_format_claims_is_a_clear_error_naming_it_and_the_known_formats(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, text in (
        ("notes.json", '{"title": "not a cassette"}'),
        ("notes.yaml", "title: not a cassette\n"),
    ):
        path = tmp_path / name
        path.write_text(text)
        assert claims(Head.of(str(path))) == []
        assert main(["show", str(path)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"llmvcr: error: {path}") and err.count("\n") == 1
        assert known() in " ".join(err.split())
        for fmt in FORMATS:
            if fmt.read is not None:
                assert fmt.title in known()
