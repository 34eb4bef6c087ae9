"""Moved modules keep their old import paths (opboost.moved.MOVED), and opboost itself imports
only the new ones."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from opboost.api.lazy import MovedModules
from opboost.moved import MOVED

ROOT = Path(__file__).parents[2]


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_an_old_import_path_gives_the_moved_module(old, new):
    """The very module object (same classes, loaded once), keeping its own name."""
    moved = importlib.import_module(old)
    assert moved is importlib.import_module(new)
    assert moved.__name__ == moved.__spec__.name == new


def test_an_old_path_imported_first_loads_the_new_module_once():
    """In a fresh process, importing by the old path first: one module, under its new name."""
    old, new = sorted(MOVED.items())[0]
    code = (
        f"import sys, importlib; old = importlib.import_module({old!r}); "
        f"new = importlib.import_module({new!r}); "
        f"print(old is new, old.__spec__.name, sorted(k for k, m in sys.modules.items() "
        f"if m is new))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split(" ", 2) == ["True", new, f"{sorted([old, new])!r}\n"]


def test_a_module_under_a_moved_package_moves_with_it():
    finder = MovedModules({"opboost.a": "opboost.x.a", "opboost.a.b": "opboost.y.b"})
    assert finder.target("opboost.a.c.d") == "opboost.x.a.c.d"
    assert finder.target("opboost.a.b") == "opboost.y.b"  # the longest old path wins
    assert finder.target("opboost.ab") is None
    assert finder.target("opboost.x.a") is None


def test_opboost_imports_no_old_path():
    finder = MovedModules(MOVED)
    offences = []
    for path in sorted((ROOT / "opboost").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            offences += [f"{path.relative_to(ROOT)}: {n}" for n in names if finder.target(n)]
    assert offences == []
