"""A failing plugin is skipped with a warning; built-ins and saved policies keep working
(issue 20). Before, a plugin raising at import disabled every command (PluginError), and one
calling sys.exit made opboost exit 0 with no output."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import opboost
from opboost.api.data.logged import LoggedBandit
from opboost.api.exceptions import OpboostWarning
from opboost.api.hookspecs import hookimpl
from opboost.core.registry import get_registry, reset_registry

BUILTIN_BASE_LEARNERS = {"lightgbm_tree", "sklearn_tree"}

FAILING_MODULES = {
    "raises_import_error": "raise ImportError('no module named opboost_missing_dependency')\n",
    "calls_sys_exit": "import sys\nsys.exit(0)\n",
    "raises_runtime_error": "raise RuntimeError('plugin bug at import')\n",
}


def _install(tmp_path: Path, monkeypatch, entry: str, module_name: str) -> None:
    """A distribution ``opboost-<entry>`` 1.0 whose ``opboost`` entry point ``entry`` names
    ``module_name``, on sys.path as pip would install it (see tests/unit/action_only_data)."""
    info = tmp_path / f"opboost_{entry}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: opboost-{entry.replace('_', '-')}\nVersion: 1.0\n"
    )
    (info / "entry_points.txt").write_text(f"[opboost]\n{entry} = {module_name}\n")


@pytest.fixture
def plugin_env(tmp_path, monkeypatch):
    """Plugin autoloading on, a site directory on sys.path, a fresh registry before/after."""
    for var in ("OPBOOST_DISABLE_PLUGIN_AUTOLOAD", "OPBOOST_DISABLED_PLUGINS"):
        monkeypatch.delenv(var, raising=False)
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    reset_registry()
    yield site
    for name in [m for m in sys.modules if m.startswith("opboost_failing_")]:
        del sys.modules[name]
    reset_registry()


def _failing(site: Path, monkeypatch, kind: str) -> tuple[str, str]:
    module_name = f"opboost_failing_{kind}"
    (site / f"{module_name}.py").write_text(FAILING_MODULES[kind])
    _install(site, monkeypatch, kind, module_name)
    return kind, module_name


@pytest.fixture(scope="module")
def saved_policy(tmp_path_factory):
    """A built-in (lightgbm_tree) policy saved as a directory."""
    rng = np.random.default_rng(0)
    n, k = 120, 3
    data = LoggedBandit(
        rng.normal(size=(n, 2)), rng.integers(0, k, n), np.full(n, 1 / k), rng.uniform(size=n), k
    )
    booster = opboost.Booster(n_rounds=2, base_learner_params={"num_threads": 1}).fit(data)
    return booster.policy_.save(tmp_path_factory.mktemp("saved") / "policy"), booster


@pytest.mark.parametrize("kind", sorted(FAILING_MODULES))
def test_plugin_failing_at_import_is_skipped_with_warning_builtins_still_load(
    plugin_env, monkeypatch, saved_policy, kind
):
    """A plugin raising ImportError/RuntimeError or calling sys.exit(0) at import: the
    registry warns (naming the entry point, the distribution and the switch that disables
    it) and lists the built-ins; a saved built-in policy loads."""
    entry, module_name = _failing(plugin_env, monkeypatch, kind)
    with pytest.warns(OpboostWarning) as record:
        registry = get_registry()
    message = str(record[0].message)
    assert f"entry point {entry!r} = {module_name!r}" in message
    assert f"opboost-{entry.replace('_', '-')} 1.0" in message
    assert f"OPBOOST_DISABLED_PLUGINS={entry}" in message
    assert set(registry.names("base_learner")) >= BUILTIN_BASE_LEARNERS
    assert {"ips", "truncated_ips"} <= set(registry.names("estimator"))
    assert entry not in [info.name for info in registry.plugins]
    path, booster = saved_policy
    X = np.random.default_rng(1).normal(size=(5, 2))
    loaded = opboost.load_policy(path)
    np.testing.assert_array_equal(loaded.decision_function(X), booster.decision_function(X))


def test_failing_plugin_does_not_hide_the_healthy_ones(plugin_env, monkeypatch):
    """Next to a broken plugin, a healthy plugin's components are still registered."""
    _failing(plugin_env, monkeypatch, "raises_import_error")
    from opboost.api.estimator import Estimator

    class Healthy(Estimator):
        name = "healthy_ips"

        def round_values(self, data, action_probs):
            return data.rewards

    module = types.ModuleType("opboost_healthy_isolation_plugin")
    module.opboost_register_estimators = hookimpl(lambda: [Healthy])
    module.opboost_register_estimators.__name__ = "opboost_register_estimators"
    monkeypatch.setitem(sys.modules, module.__name__, module)
    _install(plugin_env, monkeypatch, "healthy", module.__name__)
    with pytest.warns(OpboostWarning, match="raises_import_error"):
        names = opboost.available("estimator")
    assert "healthy_ips" in names and "ips" in names


def test_plugin_hook_raising_is_skipped_with_warning(plugin_env, monkeypatch):
    """A plugin whose hook raises (here SystemExit) loses that hook's components only."""
    module = types.ModuleType("opboost_failing_hook_plugin")

    def opboost_register_estimators():
        raise SystemExit(0)

    module.opboost_register_estimators = hookimpl(opboost_register_estimators)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    _install(plugin_env, monkeypatch, "failing_hook", module.__name__)
    with pytest.warns(OpboostWarning, match=r"opboost_register_estimators .*'failing_hook'"):
        names = opboost.available("estimator")
    assert "ips" in names


def test_disabled_failing_plugin_loads_silently(plugin_env, monkeypatch):
    """The switch the warning names does disable the plugin: no warning at all."""
    entry, _ = _failing(plugin_env, monkeypatch, "calls_sys_exit")
    monkeypatch.setenv("OPBOOST_DISABLED_PLUGINS", entry)
    assert set(opboost.available("base_learner")) >= BUILTIN_BASE_LEARNERS


def test_sys_exit_plugin_does_not_end_the_cli(plugin_env, monkeypatch, tmp_path):
    """`opboost plugins` with a plugin calling sys.exit(0) at import lists the built-ins and
    warns on stderr (it used to exit 0 with no output)."""
    entry, _ = _failing(plugin_env, monkeypatch, "calls_sys_exit")
    env = {**__import__("os").environ, "PYTHONPATH": str(plugin_env)}
    env.pop("OPBOOST_DISABLE_PLUGIN_AUTOLOAD", None)
    env.pop("OPBOOST_DISABLED_PLUGINS", None)
    out = subprocess.run(
        [sys.executable, "-m", "opboost", "plugins"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr[-500:]
    assert "lightgbm_tree" in out.stdout
    assert "PluginLoadWarning" in out.stderr and f"OPBOOST_DISABLED_PLUGINS={entry}" in out.stderr
