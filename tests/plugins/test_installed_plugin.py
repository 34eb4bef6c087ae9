"""A real third-party plugin, built and installed with pip, is found without code changes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PYPROJECT = """\
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "opboost-tinyplug"
version = "0.0.7"

[project.entry-points.opboost]
tinyplug = "opboost_tinyplug.plugin"
"""

PLUGIN = '''\
"""A tiny opboost plugin: one estimator."""
from opboost import hookimpl
from opboost.api.estimator import Estimator


class HalfIPS(Estimator):
    name = "half_ips"

    def __init__(self):
        pass

    def round_values(self, data, action_probs):
        return 0.5 * data.rewards


@hookimpl
def opboost_register_estimators():
    return [HalfIPS]
'''


@pytest.fixture(scope="module")
def installed_plugin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build the tiny plugin and pip-install it into a target directory; return that dir."""
    root = tmp_path_factory.mktemp("tinyplug")
    src = root / "src"
    (src / "opboost_tinyplug").mkdir(parents=True)
    (src / "pyproject.toml").write_text(PYPROJECT)
    (src / "opboost_tinyplug" / "__init__.py").write_text("")
    (src / "opboost_tinyplug" / "plugin.py").write_text(textwrap.dedent(PLUGIN))
    target = root / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(src),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return target


def run_python(code: str, site: Path, **env: str) -> str:
    """Run ``code`` in a fresh interpreter that sees the installed plugin."""
    environ = {**os.environ, "PYTHONPATH": str(site), **env}
    for var in ("OPBOOST_DISABLE_PLUGIN_AUTOLOAD", "OPBOOST_DISABLED_PLUGINS"):
        if var not in env:
            environ.pop(var, None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environ)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_installed_plugin_in_available(installed_plugin: Path):
    """The pip-installed estimator shows up in opboost.available and can be made."""
    out = run_python(
        "import opboost; print('half_ips' in opboost.available('estimator'));"
        "print(type(opboost.make('estimator', 'half_ips')).__name__)",
        installed_plugin,
    )
    assert out.split() == ["True", "HalfIPS"]


def test_installed_plugin_in_cli_listing(installed_plugin: Path):
    """`opboost plugins` lists the plugin with its version, distribution and components."""
    out = run_python("from opboost.compose.cli import main; main(['plugins'])", installed_plugin)
    assert "tinyplug  (opboost-tinyplug 0.0.7, entry point)" in out
    assert "    estimator: half_ips" in out
    assert "    estimator: ips, truncated_ips" in out or "estimator: ips, truncated_ips," in out


def test_installed_plugin_hidden_when_autoload_disabled(installed_plugin: Path):
    """With OPBOOST_DISABLE_PLUGIN_AUTOLOAD=1 only built-ins remain."""
    out = run_python(
        "import opboost; print('half_ips' in opboost.available('estimator'))",
        installed_plugin,
        OPBOOST_DISABLE_PLUGIN_AUTOLOAD="1",
    )
    assert out.split() == ["False"]
