"""The xgboost plugin requires the XGBoost that the test extra installs: after the README's
test command, ``pip check`` reports nothing for opboost-xgboost (issue 49 item 8; on a6d95a2 it
reported "opboost-xgboost 0.1.0 requires xgboost, which is not installed" beside xgboost-cpu)."""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]


def _xgboost(requirements: list[str]) -> list[str]:
    return sorted(r for r in requirements if Requirement(r).name.startswith("xgboost"))


def test_the_plugin_requires_the_xgboost_of_the_test_extra() -> None:
    """Same names, versions and platform markers in both pyproject.toml files."""
    opboost = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    plugin = tomllib.loads(
        (ROOT / "plugins/opboost-xgboost/pyproject.toml").read_text(encoding="utf-8")
    )
    test_extra = _xgboost(opboost["project"]["optional-dependencies"]["test"])
    assert len(test_extra) == 2
    assert _xgboost(plugin["project"]["dependencies"]) == test_extra


def test_the_installed_plugins_requirements_are_met() -> None:
    """What ``pip check`` checks for the installed plugin: each requirement that applies to
    this platform is installed in a version it accepts."""
    try:
        requirements = metadata.requires("opboost-xgboost") or []
    except metadata.PackageNotFoundError:
        pytest.skip("opboost-xgboost is not installed (the README's test command installs it)")
    unmet = []
    for text in requirements:
        requirement = Requirement(text)
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        try:
            version = metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            unmet.append(f"{requirement} (not installed)")
            continue
        if not requirement.specifier.contains(version, prereleases=True):
            unmet.append(f"{requirement} ({version} installed)")
    assert unmet == []
