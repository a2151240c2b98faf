"""How far one replayed call walks through llmvcr: the modules, functions and calls a profiler sees.

``python -m benchmarks modules [--warm] [--trace]``

Two anthropic ``messages.create`` calls are recorded through the floor's transport into a cassette,
which is opened once (so the parse cache holds it, as on every run after the first), then again
with ``use_cassette(path, record_mode="none")``; the first call in that session (as a test makes
it) is traced with ``sys.setprofile``. Every Python function entered whose file is under
``llmvcr/`` counts: the number of distinct modules, of distinct functions and of calls, and the
module-to-module transitions. ``--warm`` traces the session's second call instead (the first has
noted its provider; its entry, another one, is still built at first use); ``--trace`` prints each
module in the order it is entered.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from types import FrameType
from typing import Any

from .contenders import Floor, record_llmvcr
from .workload import anthropic_call


def _module_of(filename: str, root: str) -> str | None:
    if not filename.startswith(root):
        return None
    name = filename[len(root) :].removesuffix(".py").replace(os.sep, "/")
    return "llmvcr/" + name.removesuffix("/__init__") if name != "__init__" else "llmvcr"


def trace_one(warm: bool = False) -> tuple[list[str], list[str], int]:
    """The modules entered in order (consecutive repeats merged), the distinct functions, the calls."""
    import llmvcr

    root = os.path.dirname(os.path.abspath(llmvcr.__file__)) + os.sep
    floor = Floor()
    clients = floor.clients()
    calls = [anthropic_call(0), anthropic_call(2)]
    floor.learn(clients, calls)
    path = os.path.join(tempfile.mkdtemp(prefix="llmvcr-modules-"), "one.yaml")
    record_llmvcr(floor, calls, path)
    with llmvcr.use_cassette(path, record_mode="none", on_unplayed="ignore"):
        pass  # the parse cache holds the file now, as on every run after the first
    order: list[str] = []
    functions: set[str] = set()
    count = 0

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal count
        if event != "call":
            return
        module = _module_of(frame.f_code.co_filename, root)
        if module is None:
            return
        count += 1
        functions.add(f"{module}:{frame.f_code.co_qualname}")
        if not order or order[-1] != module:
            order.append(module)

    with llmvcr.use_cassette(path, record_mode="none", on_unplayed="ignore"):
        if warm:
            clients.call(calls[0])
        sys.setprofile(profile)
        try:
            clients.call(calls[1])
        finally:
            sys.setprofile(None)
    clients.close()
    return order, sorted(functions), count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks modules", description=__doc__.split("\n")[0])
    parser.add_argument("--warm", action="store_true", help="trace the second call of the session")
    parser.add_argument("--trace", action="store_true", help="print the modules in the order entered")
    args = parser.parse_args(argv)
    order, functions, calls = trace_one(args.warm)
    modules = sorted(set(order))
    if args.trace:
        print(" -> ".join(order))
    print(f"modules entered: {len(modules)}")
    print(f"functions: {len(functions)}, calls: {calls}, module-to-module transitions: {len(order) - 1}")
    for module in modules:
        print(f"  {module}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
