"""The modules moved before the first release have one path each: the old one is gone (no alias,
no import hook) and CHANGELOG.md lists it with the new one. Every public name a module of the
tree at cf3ad7d had (public_names_cf3ad7d.json: each module's ``__all__`` then) is found at the
module's new path, but the ones removed on purpose and those CHANGELOG.md lists where they are
defined (a re-export from an old home is gone too)."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
OLD_NAMES = json.loads((Path(__file__).parent / "public_names_cf3ad7d.json").read_text())
CHANGES = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8").split("\n### ")
#: CHANGELOG.md's lists: old module -> new module, and old name -> where it is defined.
RENAMED, MOVED_NAMES = (
    dict(re.findall(r"^- `(opboost[\w.]*)` → `(opboost[\w.]*)`", section, re.M))
    for section in (
        next(c for c in CHANGES if c.startswith("Removed: the old import paths")),
        next(c for c in CHANGES if c.startswith("Removed: names re-exported")),
    )
)
#: The names ``opboost.api`` no longer exports (issue 50), each module's listed once:
#: ``- `module`: `NAME`, `NAME`, ...`` (continuation lines indented).
CONTRACT_SECTION = next(c for c in CHANGES if c.startswith("Changed: `opboost.api` exports"))
for _module, _names in re.findall(
    r"^- `(opboost[\w.]*)`: ((?:`\w+`,?\s*)+)", CONTRACT_SECTION, re.M
):
    MOVED_NAMES.update(
        {f"opboost.api.{n}": f"{_module}.{n}" for n in re.findall(r"`(\w+)`", _names)}
    )
#: Public names of cf3ad7d removed on purpose (issues 38 and 50), and what replaces each.
REMOVED = {
    "opboost.dask.boosting": {
        "SUPPORTED_OBJECTIVES",  # Objective.row_local: any per-row objective runs on Dask
        "SUPPORTED_ESTIMATORS",  # Estimator.row_local
    },
    "opboost.selection": {"HoldoutScorer"},  # Estimator.on_logs; opboost.core.selection.logs_scorer
    # issue 50: config validation no longer probes components; Component.validate() instead
    "opboost.compose.config_checks": {"run_component_checks"},
    # issue 50: a worker runs the trial the study resolved (workers.run_resolved_trial)
    "opboost.compose.study_workers": {"run_trial_key"},
    # issue 50: checkpoint.restored returns what InMemoryFit.restore assigns
    "opboost.fit.checkpoint": {"restore"},
}


def new_path(name: str) -> str:
    """Where the module once imported as ``name`` lives now (the longest renamed prefix wins)."""
    for old in sorted(RENAMED, key=len, reverse=True):
        if name == old or name.startswith(old + "."):
            return RENAMED[old] + name[len(old) :]
    return name


def test_the_changelog_lists_the_renames():
    assert len(RENAMED) == 65
    assert RENAMED["opboost.api.lgbm"] == "opboost.lgbm"
    assert RENAMED["opboost.booster"] == "opboost.core.booster"


def test_no_old_path_imports():
    """In a fresh process (so no test imported anything before), after ``import opboost``."""
    code = (
        "import importlib, opboost\n"
        f"for old in {sorted(RENAMED)!r}:\n"
        "    try:\n        importlib.import_module(old)\n"
        "    except ModuleNotFoundError:\n        pass\n"
        "    else:\n        print(old)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == []


@pytest.mark.parametrize("new", sorted(set(RENAMED.values())))
def test_each_new_path_imports(new):
    assert importlib.import_module(new).__name__ == new


@pytest.mark.parametrize("old", sorted(OLD_NAMES))
def test_every_old_public_name_is_at_the_new_path(old):
    module = importlib.import_module(new_path(old))
    gone = [n for n in OLD_NAMES[old] if not hasattr(module, n)]
    unlisted = [n for n in gone if f"{module.__name__}.{n}" not in MOVED_NAMES]
    assert sorted(unlisted) == sorted(REMOVED.get(old, ())), f"{old} -> {module.__name__}"


@pytest.mark.parametrize(("old", "new"), sorted(MOVED_NAMES.items()))
def test_a_name_gone_from_its_old_home_is_where_the_changelog_says(old, new):
    """And no longer public at its old home."""
    old_module, old_name = old.rsplit(".", 1)
    module, name = new.rsplit(".", 1)
    assert hasattr(importlib.import_module(module), name)
    assert old_name not in importlib.import_module(old_module).__all__


def test_the_changelog_lists_each_name_the_sdk_no_longer_exports():
    """Issue 50: every name ``opboost.api`` exported at cf3ad7d and no longer does is listed
    with the module that defines it (the test above imports each from there)."""
    import opboost.api

    dropped = sorted(set(OLD_NAMES["opboost.api"]) - set(opboost.api.__all__))
    assert [n for n in dropped if f"opboost.api.{n}" not in MOVED_NAMES] == []
    assert MOVED_NAMES["opboost.api.lightgbm_threads"] == "opboost.lgbm.threads.lightgbm_threads"
    assert MOVED_NAMES["opboost.api.one_hot"] == "opboost.api.numerics.arrays.one_hot"


def test_a_module_under_a_renamed_package_moves_with_it():
    assert new_path("opboost.learners.lightgbm_tree") == "opboost.algorithms.learners.lightgbm_tree"
    assert new_path("opboost.fit.metadata") == "opboost.api.fit_metadata"  # the longest wins
    assert new_path("opboost.fitx") == "opboost.fitx"
