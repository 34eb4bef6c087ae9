"""The opboost pytest plugin: its fixture and re-export work in a real pytest run."""

from __future__ import annotations

import importlib.metadata

import pytest

import opboost.testing.pytest_plugin as plugin_module
from opboost.core.registry import Registry
from opboost.testing import checks

pytest_plugins = ["pytester"]

PLUGIN = "opboost.testing.pytest_plugin"

INNER_TESTS = """
from typing import ClassVar

from opboost.api.estimator import Estimator
from opboost.testing.pytest_plugin import parametrize_with_checks


class HalfIPS(Estimator):
    name: ClassVar[str] = "half_ips"

    def round_values(self, data, action_probs):
        return 0.5 * data.rewards


def test_registry_is_fresh(opboost_registry):
    assert "ips" in opboost_registry.names("estimator")
    assert opboost_registry.provider("estimator", "ips").builtin


def test_registry_is_the_process_registry(opboost_registry):
    import opboost

    assert opboost.get_registry() is opboost_registry


@parametrize_with_checks([HalfIPS])
def test_component(component_class, check):
    check(component_class)
"""


def _plugin_args() -> list[str]:
    """``-p`` the plugin unless pytest already autoloads it through the pytest11 entry point."""
    installed = any(ep.value == PLUGIN for ep in importlib.metadata.entry_points(group="pytest11"))
    return [] if installed else ["-p", PLUGIN]


def test_fixture_and_checks_in_a_pytest_run(pytester: pytest.Pytester, monkeypatch):
    """A plugin author's test file using the fixture and parametrize_with_checks passes."""
    monkeypatch.delenv("OPBOOST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    monkeypatch.delenv("OPBOOST_DISABLED_PLUGINS", raising=False)
    pytester.makepyfile(test_author=INNER_TESTS)
    result = pytester.runpytest_inprocess(*_plugin_args(), "-q")
    n_checks = len(checks.all_checks(_half_ips()))
    result.assert_outcomes(passed=2 + n_checks)


def test_blocked_builtin_is_missing_from_fixture_registry(pytester: pytest.Pytester, monkeypatch):
    """The fixture registry honours OPBOOST_DISABLED_PLUGINS at the time the test runs."""
    pytester.makepyfile(
        test_block="""
def test_no_objectives(opboost_registry):
    assert opboost_registry.names("objective") == []
"""
    )
    monkeypatch.setenv("OPBOOST_DISABLED_PLUGINS", "opboost.algorithms.objectives.plugin")
    result = pytester.runpytest_inprocess(*_plugin_args(), "-q")
    result.assert_outcomes(passed=1)


def test_reexported_parametrize_with_checks_is_the_checks_one():
    """The plugin module re-exports opboost.testing's parametrize_with_checks."""
    assert plugin_module.parametrize_with_checks is checks.parametrize_with_checks
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        plugin_module.nope  # noqa: B018


def test_registry_fixture_direct(monkeypatch):
    """Driven by hand, the fixture yields a fresh Registry and forgets it afterwards."""
    import opboost.core.registry as registry

    monkeypatch.setenv("OPBOOST_DISABLE_PLUGIN_AUTOLOAD", "1")
    stale = registry.get_registry()
    gen = plugin_module.opboost_registry.__wrapped__()
    fresh = next(gen)
    assert isinstance(fresh, Registry) and fresh is not stale
    assert all(info.builtin for info in fresh.plugins)
    with pytest.raises(StopIteration):
        next(gen)
    assert registry._REGISTRY is None


def _half_ips() -> type:
    from opboost.api.estimator import Estimator

    class HalfIPS(Estimator):
        name = "half_ips"

    return HalfIPS


def test_estimator_checks_catch_an_estimator_that_reads_only_probabilities():
    """docs/plugins.md's SwitchIPS as it was (indexing action_probs as (n, K)) crashed on
    the (n,) actions predict returns; the estimator checks now call round_values with both
    forms and name the fix."""
    from typing import ClassVar

    import numpy as np

    from opboost.api.estimator import Estimator

    class OldSwitchIPS(Estimator):
        name: ClassVar[str] = "old_switch_ips"
        _parameter_constraints: ClassVar[dict] = {"tau": []}

        def __init__(self, *, tau: float = 20.0):
            self.tau = tau

        def round_values(self, data, action_probs):
            w = action_probs[np.arange(len(data)), data.actions] / data.propensities
            return np.where(w <= self.tau, w * data.rewards, 0.0)

    with pytest.raises(
        AssertionError,
        match=r"OldSwitchIPS\.round_values failed on the policy given as \(n,\) actions "
        r"\(IndexError: .*\); read action_probs with opboost\.api\.estimator\."
        r"check_action_probs",
    ):
        checks.check_estimator_policy_forms(OldSwitchIPS)
    assert checks.check_estimator_policy_forms in checks.all_checks(OldSwitchIPS)
