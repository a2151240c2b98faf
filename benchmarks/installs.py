"""The suite's llmvcr rows as users install the package: each install in a fresh virtual environment.

``python -m benchmarks suite --installs`` builds (once, under ``--keep``) one environment per row
from this tree, as ``pip install`` builds it (a wheel, bytecode compiled at install): the bare
package, ``[all]``, and the bare package without rapidyaml (what a platform with no rapidyaml wheel
gets: PyYAML). Each row replays the suite's YAML cassettes as a fresh checkout on CI does, and
the rows come first in the table, the default install at the top.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable

# row -> (what follows the tree in `pip install`, whether rapidyaml is removed after)
INSTALLS: dict[str, tuple[str, bool]] = {
    "llmvcr YAML cold, `pip install pyllmvcr` (default)": ("", False),
    "llmvcr YAML cold, `pip install 'pyllmvcr[all]'`": ("[all]", False),
    "llmvcr YAML cold, no rapidyaml wheel (PyYAML)": ("", True),
}
# what the suite's project needs besides llmvcr (the bare package brings no SDK)
NEEDS = ("anthropic>=2.10,<3", "openai>=3.51,<4", "pytest>=8", "pytest-xdist>=3")


def environment(
    folder: str, name: str, extra: str, without_rapidyaml: bool, tree: str, progress: Callable[[str], None]
) -> str:
    """A virtual environment with this tree installed as ``pip install`` does; its python."""
    venv = os.path.join(folder, "venv-" + "".join(c if c.isalnum() else "_" for c in name)[:60])
    python = os.path.join(venv, "Scripts" if os.name == "nt" else "bin", "python")
    if os.path.exists(python):
        return python
    progress(f"installing {name}\n")
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    pip = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, tree + extra, *NEEDS], check=True)
    if without_rapidyaml:
        subprocess.run([python, "-m", "pip", "uninstall", "--quiet", "--yes", "rapidyaml"], check=True)
    return python


def environments(folder: str, progress: Callable[[str], None]) -> dict[str, str]:
    """Each install of ``INSTALLS`` in its environment under ``folder`` (built once): row -> its python."""
    tree = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return {
        name: environment(folder, name, extra, without, tree, progress)
        for name, (extra, without) in INSTALLS.items()
    }
