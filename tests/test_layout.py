"""The layout DESIGN.md draws: no import cycle, no module over 400 lines, no function-level import
to dodge one, no private name used across modules, no module importing its own package's
``__init__``."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "llmvcr"
MAX_LINES = 400


def _module_name(path: Path, package: Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(package: Path = PACKAGE) -> dict[str, tuple[Path, ast.Module]]:
    return {
        _module_name(p, package): (p, ast.parse(p.read_text(), str(p)))
        for p in sorted(package.rglob("*.py"))
        if "cassettes" not in p.parts
    }


def _resolve(module: str, path: Path, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(module: str, path: Path, tree: ast.Module, known: set[str]) -> list[tuple[str, int, str]]:
    """(imported llmvcr module, line, imported name or '') for each module-level import."""
    found: list[tuple[str, int, str]] = []

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if _type_checking(node):
                continue
            if isinstance(node, ast.Import):
                found.extend((a.name, node.lineno, "") for a in node.names if a.name.startswith("llmvcr"))
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(module, path, node)
                if not target.startswith("llmvcr"):
                    continue
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    found.append(
                        (sub, node.lineno, "") if sub in known else (target, node.lineno, alias.name)
                    )
            elif isinstance(node, (ast.If, ast.Try)):
                visit(node.body)
                visit(getattr(node, "orelse", []))
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)

    visit(tree.body)
    return found


def find_cycles(package: Path = PACKAGE) -> list[list[str]]:
    modules = _modules(package)
    known = set(modules)
    graph = {
        m: {t for t, _, _ in _imports(m, p, tree, known) if t in known and t != m}
        for m, (p, tree) in modules.items()
    }
    # importing a package runs its __init__: a submodule's import of its package is not an edge back
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def walk(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if nxt == "llmvcr" or (node.startswith(nxt + ".")):
                continue
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                walk(nxt, [*stack, nxt])
        state[node] = 2

    for m in sorted(graph):
        if m not in state:
            walk(m, [m])
    return cycles


def test_no_import_cycle() -> None:
    cycles = find_cycles()
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


@pytest.mark.slow
def test_no_module_over_400_lines() -> None:
    long = {m: len(p.read_text().splitlines()) for m, (p, _) in _modules().items()}
    over = {m: n for m, n in long.items() if n > MAX_LINES}
    assert not over, f"modules over {MAX_LINES} lines: {over}"


def test_no_function_level_import_of_llmvcr() -> None:
    bad = []
    for module, (path, tree) in _modules().items():
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or fn.name == "__getattr__":
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.ImportFrom) and _resolve(module, path, node).startswith("llmvcr"):
                    bad.append(f"{path.name}:{node.lineno} in {fn.name}()")
                if isinstance(node, ast.Import) and any(a.name.startswith("llmvcr") for a in node.names):
                    bad.append(f"{path.name}:{node.lineno} in {fn.name}()")
    assert not bad, "function-level imports of llmvcr modules: " + ", ".join(bad)


def find_private_uses(package: Path = PACKAGE) -> list[str]:
    modules = _modules(package)
    known = set(modules)
    bad = []
    for module, (path, tree) in modules.items():
        for target, line, name in _imports(module, path, tree, known):
            if name.startswith("_") and not name.startswith("__"):
                bad.append(f"{module}:{line} imports {name} from {target}")
        aliases = {
            a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and f"{_resolve(module, path, ast.ImportFrom(module=None, names=[], level=1))}.{node.value.id}"
                in known
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                bad.append(f"{module}:{node.lineno} uses {node.value.id}.{node.attr}")
    return bad


@pytest.mark.slow
def test_no_private_name_used_across_modules() -> None:
    bad = find_private_uses()
    assert not bad, "private names used across modules:\n" + "\n".join(bad)


def find_own_package_imports(package: Path = PACKAGE) -> list[str]:
    """A name (not a submodule) a module imports from the ``__init__`` of a package it is inside: the
    ``__init__`` imports its submodules, so such an import is a cycle the graph above cannot see."""
    modules = _modules(package)
    known = set(modules)
    bad = []
    for module, (path, tree) in modules.items():
        for target, line, name in _imports(module, path, tree, known):
            if name and module.startswith(target + "."):
                bad.append(f"{module}:{line} imports {name} from its package {target}")
    return bad


def test_no_module_imports_its_own_package_init() -> None:
    bad = find_own_package_imports()
    assert not bad, "imports from a module's own package __init__:\n" + "\n".join(bad)


def test_the_checks_catch_what_they_look_for(tmp_path: Path) -> None:
    package = tmp_path / "llmvcr"
    package.mkdir()
    (package / "__init__.py").write_text("from .c import shared\n")
    (package / "a.py").write_text("from .b import thing\n_hidden = 1\n")
    (package / "c.py").write_text("shared = 1\n")
    (package / "d.py").write_text("from . import a, shared\nfrom llmvcr import c\n")
    (package / "b.py").write_text("from . import a\nfrom .a import _hidden\nthing = a._hidden\n")
    assert find_cycles(package) == [["llmvcr.a", "llmvcr.b", "llmvcr.a"]]
    assert find_private_uses(package) == [
        "llmvcr.b:2 imports _hidden from llmvcr.a",
        "llmvcr.b:3 uses a._hidden",
    ]
    assert find_own_package_imports(package) == ["llmvcr.d:1 imports shared from its package llmvcr"]


# The folders as DESIGN draws them, ground floor first: a room imports only rooms on a lower floor.
FLOORS: list[set[str]] = [
    {"errors", "wording"},
    {"cassette"},
    {"matching", "wire"},
    {"storage", "redaction", "faults"},
    {"options"},
    {"session"},
    {"_active"},
    {"providers", "freshness"},
    {"lifecycle"},
    {"mcp"},
    {"proxy", "api", "clients", "convert", "playlog"},
    {"view"},
    {"pytest_plugin", "cli", "adapters", "__init__"},
    {"__main__", "demo"},
]
FOLDERS = {
    "cassette",
    "matching",
    "wire",
    "storage",
    "redaction",
    "freshness",
    "providers",
    "convert",
    "cli",
    "pytest_plugin",
    "proxy",
    "view",
    "mcp",
}


def _room(module: str) -> str:
    parts = module.split(".")
    return "__init__" if len(parts) == 1 else parts[1]


PROVIDER_NAMES = {"anthropic", "openai", "google", "gemini"}


def _names_a_provider(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in PROVIDER_NAMES
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_names_a_provider(e) for e in node.elts)
    return isinstance(node, ast.Attribute) and node.attr == "NAME"  # wire.google.NAME


def test_only_a_providers_own_modules_branch_on_its_name() -> None:
    """A provider is described once (``wire/<provider>.py``, its SDK adapter ``providers/<provider>.py``;
    the converters read each API's shape): everything else asks ``llmvcr.wire``, never compares a name."""
    own = {
        f"{room}.{name}"
        for room in ("wire", "providers")
        for name in ("anthropic", "openai", "google", "openai_ws")
    }
    branches = []
    for module, (_path, tree) in _modules().items():
        parts = module.split(".")
        if parts[1:2] in (["convert"], ["mcp"]) or ".".join(parts[1:]) in own | {"wire.mcp"}:
            continue
        for node in ast.walk(tree):
            sides = [node.left, *node.comparators] if isinstance(node, ast.Compare) else []
            keys = [k for k in node.keys if k is not None] if isinstance(node, ast.Dict) else []
            if any(_names_a_provider(side) for side in sides) or sum(map(_names_a_provider, keys)) >= 2:
                branches.append(f"{module}:{node.lineno}")
    assert not branches, "ask llmvcr.wire's description instead of naming a provider: " + ", ".join(branches)


def test_the_folders_are_as_drawn() -> None:
    floor_of = {room: n for n, rooms in enumerate(FLOORS) for room in rooms}
    rooms = {_room(m) for m in _modules()}
    unplaced = rooms - floor_of.keys()
    assert not unplaced, (
        f"place these top-level modules or folders in FLOORS (and DESIGN's table): {unplaced}"
    )
    folders = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert folders == FOLDERS, f"folders differ from the drawing: {folders ^ FOLDERS}"
    modules = _modules()
    known = set(modules)
    up = []
    for module, (path, tree) in modules.items():
        for target, line, _ in _imports(module, path, tree, known):
            if target not in known or _room(target) == _room(module):
                continue
            if floor_of[_room(target)] >= floor_of[_room(module)]:
                up.append(f"{module}:{line} imports {target}, on floor {floor_of[_room(target)] + 1}")
    assert not up, "imports that do not go down a floor:\n" + "\n".join(up)


def test_the_paths_users_write_still_import() -> None:
    """The regrouping kept every import path the README and the entry points name."""
    for path, name in [
        ("llmvcr", "use_cassette"),
        ("llmvcr.cassette", "Request"),
        ("llmvcr.cassette", "Response"),
        ("llmvcr.matching", "register_matcher"),
        ("llmvcr.matching", "placeholder"),
        ("llmvcr.playlog", "PlayLog"),
        ("llmvcr.errors", "LLMVCRError"),
        ("llmvcr.providers", "register_provider"),
        ("llmvcr.pytest_plugin", "pytest_addoption"),
        ("llmvcr.adapters", "create_replay_adapter"),
        ("llmvcr.demo", "__doc__"),
    ]:
        assert hasattr(importlib.import_module(path), name), f"{path}.{name}"
