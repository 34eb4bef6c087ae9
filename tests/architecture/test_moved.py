"""Moved modules keep their old import paths (opboost.moved.MOVED), and opboost itself imports
only the new ones: every module of the tree at cf3ad7d still imports, with the public names it
had (public_names_cf3ad7d.json: each module's ``__all__`` then), but the ones removed on
purpose."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from opboost.api.lazy import MovedModules
from opboost.moved import MOVED

ROOT = Path(__file__).parents[2]
OLD_NAMES = json.loads((Path(__file__).parent / "public_names_cf3ad7d.json").read_text())
#: Public names of cf3ad7d removed on purpose (issue 38), and what replaces each.
REMOVED = {
    "opboost.dask.boosting": {
        "SUPPORTED_OBJECTIVES",  # Objective.row_local: any per-row objective runs on Dask
        "SUPPORTED_ESTIMATORS",  # Estimator.row_local
    },
    "opboost.selection": {"HoldoutScorer"},  # Estimator.on_logs; opboost.core.selection.logs_scorer
}


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_an_old_import_path_gives_the_moved_module(old, new):
    """The very module object (same classes, loaded once), keeping its own name."""
    moved = importlib.import_module(old)
    assert moved is importlib.import_module(new)
    assert moved.__name__ == moved.__spec__.name == new


@pytest.mark.parametrize("old", sorted(OLD_NAMES))
def test_every_old_module_imports_with_its_public_names(old):
    module = importlib.import_module(old)
    gone = [n for n in OLD_NAMES[old] if not hasattr(module, n)]
    assert sorted(gone) == sorted(REMOVED.get(old, ()))


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
