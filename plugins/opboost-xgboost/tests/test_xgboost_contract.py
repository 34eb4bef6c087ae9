"""xgboost_tree passes the opboost component contract and is found through its entry point."""

from __future__ import annotations

from opboost_xgboost.tree import XGBoostEnsemble, XGBoostTree

from opboost import get_registry, reset_registry
from opboost.testing import parametrize_with_checks


@parametrize_with_checks([XGBoostTree])
def test_xgboost_component(component_class, check):
    """The component passes the check."""
    check(component_class)


def test_xgboost_tree_is_registered_by_the_plugin(monkeypatch):
    """The installed entry point 'xgboost' provides base learner xgboost_tree."""
    monkeypatch.delenv("OPBOOST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    monkeypatch.delenv("OPBOOST_DISABLED_PLUGINS", raising=False)
    reset_registry()
    try:
        registry = get_registry()
        assert registry.get("base_learner", "xgboost_tree") is XGBoostTree
        info = registry.provider("base_learner", "xgboost_tree")
        assert (info.name, info.distribution, info.builtin) == ("xgboost", "opboost-xgboost", False)
        assert XGBoostTree.ensemble_class is XGBoostEnsemble
    finally:
        reset_registry()
