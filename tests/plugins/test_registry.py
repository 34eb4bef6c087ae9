"""The plugin registry: built-ins, entry points, lookup errors, blocking and validation."""

from __future__ import annotations

import subprocess
import sys
import types

import pytest

import opboost
from opboost.api.estimator import Estimator
from opboost.api.exceptions import InvalidParameterError, PluginError
from opboost.api.hookspecs import hookimpl
from opboost.core.registry import UnknownComponentError, get_registry


def make_estimator_class(name: str) -> type[Estimator]:
    """A trivial estimator class registered under ``name``."""

    class Fake(Estimator):
        def __init__(self, *, scale: float = 1.0):
            self.scale = scale

        def round_values(self, data, action_probs):
            return data.rewards * self.scale

    Fake.name = name
    Fake.__name__ = f"Fake_{name}"
    return Fake


def plugin_module(module_name: str, classes: list, hook: str = "opboost_register_estimators"):
    """A module object with one hook implementation returning ``classes``."""
    module = types.ModuleType(module_name)

    def register():
        return classes

    register.__name__ = hook
    setattr(module, hook, hookimpl(register))
    return module


def test_registry_builtin_estimators_available(clean_registry):
    """The built-in estimators are listed without any entry point."""
    assert {"ips", "truncated_ips"} <= set(opboost.available("estimator"))


def test_registry_make_builds_instance_with_params(clean_registry):
    """make() returns an instance of the registered class with the given parameters."""
    est = opboost.make("estimator", "truncated_ips", max_weight=3.0)
    assert type(est).name == "truncated_ips"
    assert est.get_params() == {"max_weight": 3.0}


def test_registry_unknown_name_lists_known_and_suggests(clean_registry):
    """An unknown name lists the known names with their providers and a close match."""
    with pytest.raises(
        UnknownComponentError, match=r"Unknown estimator 'ipss'\. Known: .*\bips \(opboost"
    ) as info:
        opboost.make("estimator", "ipss")
    assert "truncated_ips (opboost" in str(info.value)
    assert "Did you mean 'ips'" in str(info.value)
    assert "ips" in info.value.known


def test_registry_nonexistent_estimator_message(clean_registry):
    """The acceptance case: make('estimator', 'nonexistent') lists the known names."""
    with pytest.raises(ValueError, match=r"Known: .*ips.*truncated_ips"):
        opboost.make("estimator", "nonexistent")


def test_registry_unknown_parameter_lists_valid(clean_registry):
    """A misspelt constructor parameter names it and lists the valid ones."""
    with pytest.raises(
        InvalidParameterError,
        match=r"The estimator 'truncated_ips' \(TruncatedIPS\) has no parameter 'max_wieght'\. "
        r"Valid parameters: max_weight\.",
    ):
        opboost.make("estimator", "truncated_ips", max_wieght=2.0)


def test_registry_unknown_kind(clean_registry):
    """An unknown kind lists the kinds."""
    with pytest.raises(
        InvalidParameterError,
        match=r"Unknown plugin kind 'estimators'\. Known kinds: objective, estimator",
    ):
        opboost.available("estimators")


def test_registry_external_component_hint(clean_registry, monkeypatch):
    """An unknown name says plugin packages must be installed; the registry names none."""
    monkeypatch.setenv("OPBOOST_DISABLE_PLUGIN_AUTOLOAD", "1")  # as if opboost-xgboost is absent
    with pytest.raises(
        UnknownComponentError,
        match=r"A base_learner from a plugin package appears once that package is installed",
    ):
        get_registry().get("base_learner", "xgboost_tree")


def test_registry_entry_point_plugin_is_found(fake_plugins):
    """A component from an entry-point plugin is available, with its distribution recorded."""
    fake_plugins(
        "fancy",
        plugin_module("fake_fancy_plugin", [make_estimator_class("fancy_ips")]),
        dist="opboost-fancy",
        version="0.3",
    )
    assert "fancy_ips" in opboost.available("estimator")
    info = get_registry().provider("estimator", "fancy_ips")
    assert (info.name, info.distribution, info.version, info.builtin) == (
        "fancy",
        "opboost-fancy",
        "0.3",
        False,
    )


def test_registry_duplicate_name_names_both_providers(fake_plugins):
    """A name provided twice is an error naming both plugins and distributions."""
    fake_plugins(
        "clash",
        plugin_module("fake_clash_plugin", [make_estimator_class("ips")]),
        dist="opboost-clash",
        version="2.0",
    )
    with pytest.raises(
        PluginError,
        match=r"Duplicate estimator name 'ips': provided by plugin "
        r"'opboost\.algorithms\.estimators\.plugin' \(opboost .*\) and by plugin 'clash' "
        r"\(opboost-clash 2\.0\)",
    ):
        get_registry()


def test_registry_disable_autoload_leaves_builtins(fake_plugins, monkeypatch):
    """OPBOOST_DISABLE_PLUGIN_AUTOLOAD=1 loads no entry points."""
    fake_plugins("fancy", plugin_module("fake_fancy_plugin2", [make_estimator_class("fancy_two")]))
    monkeypatch.setenv("OPBOOST_DISABLE_PLUGIN_AUTOLOAD", "1")
    assert "fancy_two" not in opboost.available("estimator")
    assert all(info.builtin for info in get_registry().plugins)


def test_registry_blocked_plugin_is_skipped(fake_plugins, monkeypatch):
    """OPBOOST_DISABLED_PLUGINS blocks a named entry point (and resolves a clash)."""
    fake_plugins("clash", plugin_module("fake_clash_plugin2", [make_estimator_class("ips")]))
    monkeypatch.setenv("OPBOOST_DISABLED_PLUGINS", "clash, other")
    assert "ips" in opboost.available("estimator")
    assert "clash" not in [p.name for p in get_registry().plugins]


def test_registry_import_failure_names_entry_point(fake_plugins):
    """A plugin that fails to import is reported with its entry point and distribution."""
    fake_plugins("broken", "opboost_no_such_module_xyz", dist="opboost-broken", version="9.9")
    with pytest.raises(
        PluginError,
        match=r"Could not load the opboost plugin entry point 'broken' = "
        r"'opboost_no_such_module_xyz' of opboost-broken 9\.9: ModuleNotFoundError",
    ):
        get_registry()


def test_registry_misspelt_hook_is_rejected(fake_plugins):
    """A hookimpl whose name matches no spec is an error that lists the valid hooks."""
    module = plugin_module("fake_typo_plugin", [], hook="opboost_register_estimator")
    fake_plugins("typo", module)
    with pytest.raises(
        PluginError, match=r"opboost_register_estimator.*Hook implementations must be named"
    ):
        get_registry()


def test_registry_non_component_is_rejected(fake_plugins):
    """A hook returning something that is not a Component class is an error."""
    fake_plugins("bad", plugin_module("fake_bad_plugin", [dict]))
    with pytest.raises(
        PluginError, match=r"plugin 'bad' \(opboost-fake 1\.0\) returned <class 'dict'>"
    ):
        get_registry()


def test_registry_wrong_kind_is_rejected(fake_plugins):
    """An estimator class returned from the objectives hook is an error naming both kinds."""
    module = plugin_module(
        "fake_kind_plugin", [make_estimator_class("odd")], hook="opboost_register_objectives"
    )
    fake_plugins("kind", module)
    with pytest.raises(
        PluginError,
        match=r"\(kind 'estimator'\) from opboost_register_objectives, "
        r"which registers kind 'objective'",
    ):
        get_registry()


def test_registry_bad_name_is_rejected(fake_plugins):
    """Component names must be snake_case."""
    fake_plugins("camel", plugin_module("fake_camel_plugin", [make_estimator_class("FancyIPS")]))
    with pytest.raises(
        PluginError, match=r"name is 'FancyIPS'; component names must be snake_case"
    ):
        get_registry()


def test_registry_is_cached(clean_registry):
    """get_registry builds once and then returns the same object."""
    assert get_registry() is get_registry()


def test_import_opboost_is_light():
    """Importing opboost builds no registry and imports neither lightgbm nor river."""
    code = (
        "import sys, opboost, opboost.core.registry as r;"
        "print(r._REGISTRY is None, 'lightgbm' in sys.modules, 'river' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False", "False"]
