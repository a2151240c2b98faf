"""Every private SDK name llmvcr uses survives a release that renames it, with the declared outcome.

For each name in ``providers._internals.INTERNALS`` a fresh process renames it across its package
before anything is imported (``sdk_release.py``: the SDK still works, only llmvcr's reference
dangles), then opens cassettes, records plain, streamed and async calls against the loopback
server, replays them and a cassette recorded here before the rename, and does the same with
another SDK. The outcome must be the one the registry declares: a fallback that records and
replays as before (and says so once), or one clear ``SDKChangedError`` at the first call through
that SDK. Never a broken open, never a cassette of the other SDK harmed, never a call gone live.

The names of google-genai, aiohttp and DSPy's lm15 are renamed the same way in the frameworks
suite (``tests/frameworks/test_internals_frameworks.py``), which installs those packages.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest
from llm_server import LLMServer
from sdk_release import (
    FRAMEWORKS,
    INSTANCE_KINDS,
    INSTANCE_RENAMES,
    OWN_SUITES,
    RENAMES,
    check_release,
    record_before,
)

from llmvcr.providers import _internals

CASES = [
    (family, key) for family, keys in RENAMES.items() if family not in FRAMEWORKS + OWN_SUITES for key in keys
]
INSTANCE_CASES = [
    (family, key) for family, keys in INSTANCE_RENAMES.items() if family not in FRAMEWORKS for key in keys
]


@pytest.fixture(scope="module")
def ws_server() -> Any:
    from llm_server import ResponsesWebSocketServer

    srv = ResponsesWebSocketServer().start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def before(server: LLMServer, ws_server: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    urls = {"http": server.url, "ws": ws_server.url}
    return record_before(urls, ("anthropic", "openai", "openai_ws"), tmp_path_factory.mktemp("before"))


def test_every_registered_name_has_a_simulated_release() -> None:
    assert {key for keys in RENAMES.values() for key in keys} == {i.key for i in _internals.INTERNALS}
    for family in FRAMEWORKS:  # each family is renamed here or in the frameworks suite, not in both
        assert not any(f == family for f, _ in CASES)


@pytest.mark.parametrize(("family", "key"), CASES, ids=[f"{f}:{k}" for f, k in CASES])
@pytest.mark.slow
def test_a_release_renaming_the_name_gives_the_declared_outcome(
    family: str, key: str, before: dict[str, Any], tmp_path: Path
) -> None:
    check_release(family, key, before, tmp_path)


def test_every_registered_instance_attribute_has_a_release_renaming_it_on_the_objects() -> None:
    instance = {i.key for i in _internals.INTERNALS if i.kind in INSTANCE_KINDS}
    assert {key for keys in INSTANCE_RENAMES.values() for key in keys} == instance
    assert "stainless.http_client" in instance


@pytest.mark.parametrize(("family", "key"), INSTANCE_CASES, ids=[f"{f}:{k}" for f, k in INSTANCE_CASES])
@pytest.mark.slow
def test_a_release_renaming_an_instance_attribute_but_not_its_annotation_gives_the_declared_outcome(
    family: str, key: str, before: dict[str, Any], tmp_path: Path
) -> None:
    # the class still declares the old name: only the objects llmvcr reads can tell it is gone
    check_release(family, key, before, tmp_path, instance=True)


# -- nothing reaches a private name of another package except through the registry ------------------
PACKAGE = Path(__file__).resolve().parent.parent.parent / "llmvcr"
# private names of the standard library that are public in all but spelling (documented there)
STDLIB_PRIVATE = {"_replace", "_SubParsersAction", "_asdict", "_fields"}
_DOTTED_PRIVATE = re.compile(r"^[A-Za-z]\w*(?:\.\w+)*[.:]_[A-Za-z]\w*")  # "pkg._mod", "Class._name"


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_reaches(package: Path = PACKAGE) -> list[str]:
    """Every place under ``package`` that reaches a private name llmvcr does not define itself, other
    than through the registry: ``x._name``, ``getattr(x, "_name")``, ``"pkg._module"`` or
    ``"Class._name"`` as text, and ``import pkg._module``. ``_internals.py`` alone spells them."""
    trees = {p: ast.parse(p.read_text(), str(p)) for p in sorted(package.rglob("*.py"))}
    declared = {_internals.attribute(i.key) for i in _internals.INTERNALS}
    own: set[str] = set()  # private names llmvcr defines (its functions, classes, attributes, globals)
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                own.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                own.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                own.add(node.attr)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                own.add(node.target.id)
    own -= declared  # a registry name is never llmvcr's own, even if llmvcr used the spelling too

    def allowed(name: str) -> bool:
        return not _is_private(name) or name in own or name in STDLIB_PRIVATE

    bad = []
    for path, tree in trees.items():
        where = path.relative_to(package.parent)
        if path.name == "_internals.py" and path.parent.name == "providers":
            continue
        constants = {  # module-level NAME = "text"
            t.id: n.value.value
            for n in tree.body
            if isinstance(n, ast.Assign)
            and isinstance(n.value, ast.Constant)
            and isinstance(n.value.value, str)
            for t in n.targets
            if isinstance(t, ast.Name)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _is_private(node.attr):
                base = node.value.id if isinstance(node.value, ast.Name) else ""
                if base in ("self", "cls") and node.attr not in declared:
                    continue
                if not allowed(node.attr) or (node.attr in declared and base not in ("self", "cls")):
                    bad.append(f"{where}:{node.lineno} reads {ast.unparse(node)}")
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr", "setattr", "delattr")
                and len(node.args) > 1
            ):
                name = node.args[1]
                text = (
                    name.value if isinstance(name, ast.Constant) else constants.get(getattr(name, "id", ""))
                )
                if isinstance(text, str) and not allowed(text):
                    bad.append(f"{where}:{node.lineno} reaches {text!r} by {node.func.id}")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                match = _DOTTED_PRIVATE.match(node.value)
                if match and not node.value.startswith("llmvcr.") and " " not in node.value:
                    last = re.split(r"[.:]", match.group(0))[-1]
                    if not allowed(last) or last in declared:
                        bad.append(f"{where}:{node.lineno} names {node.value!r}")
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and node.level == 0:
                    names += [f"{node.module}.{a.name}" for a in node.names]
                for name in names:
                    if isinstance(node, ast.ImportFrom) and node.level:
                        continue
                    parts = name.split(".")
                    if parts[0] not in ("llmvcr", "__future__") and any(_is_private(p) for p in parts):
                        bad.append(f"{where}:{node.lineno} imports {name}")
    return bad


@pytest.mark.slow
def test_nothing_reaches_a_private_name_of_another_package_except_through_the_registry() -> None:
    bad = private_reaches()
    assert not bad, "private names of other packages reached outside providers/_internals.py:\n" + "\n".join(
        bad
    )


def test_the_scan_sees_each_way_of_reaching_a_private_name(tmp_path: Path) -> None:
    package = tmp_path / "llmvcr"
    (package / "providers").mkdir(parents=True)
    (package / "mine.py").write_text(
        "class Own:\n    def __init__(self):\n        self._kept = 1\n\n"
        "def ok(other, parts):\n    return other._kept, parts._replace(a=1)\n"
    )
    (package / "providers" / "_internals.py").write_text(
        "WHERE = 'anthropic._base_client:BaseClient._client'\n"
    )
    (package / "providers" / "seam.py").write_text(
        "import importlib\nfrom anthropic._models import FinalRequestOptions\n"
        "_NAME = '_build_headers'\n\n"
        "def reach(client):\n"
        "    http = client._client\n"
        "    getattr(client, _NAME)\n"
        "    hasattr(client, '_retry')\n"
        "    return importlib.import_module('openai._base_client'), http\n"
    )
    assert private_reaches(package) == [
        "llmvcr/providers/seam.py:2 imports anthropic._models",
        "llmvcr/providers/seam.py:2 imports anthropic._models.FinalRequestOptions",
        "llmvcr/providers/seam.py:6 reads client._client",
        "llmvcr/providers/seam.py:7 reaches '_build_headers' by getattr",
        "llmvcr/providers/seam.py:8 reaches '_retry' by hasattr",
        "llmvcr/providers/seam.py:9 names 'openai._base_client'",
    ]
