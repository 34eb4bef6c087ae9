"""vw_cb_explore and vw_cb_adf pass the opboost component contract and are found through the
entry point."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from opboost_vw.explore import VWCBExplore
from opboost_vw.offline import VWOfflinePolicy

from opboost import get_registry, reset_registry
from opboost.api import InvalidParameterError
from opboost.testing import parametrize_with_checks


@parametrize_with_checks([VWCBExplore, VWOfflinePolicy])
def test_vw_component(component_class, check):
    """The component passes the check."""
    check(component_class)


def test_vw_cb_explore_is_registered_by_the_plugin(monkeypatch):
    """The installed entry point 'vw' provides online learner vw_cb_explore."""
    monkeypatch.delenv("OPBOOST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    monkeypatch.delenv("OPBOOST_DISABLED_PLUGINS", raising=False)
    reset_registry()
    try:
        registry = get_registry()
        assert registry.get("online_learner", "vw_cb_explore") is VWCBExplore
        info = registry.provider("online_learner", "vw_cb_explore")
        assert (info.name, info.distribution, info.builtin) == ("vw", "opboost-vw", False)
        assert registry.get("policy_learner", "vw_cb_adf") is VWOfflinePolicy
    finally:
        reset_registry()


def test_vw_learner_pickles_through_vw_model_bytes():
    """A learner mid-stream survives pickle (VW's binary model inside) with equal actions."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(20, 3))
    learner = VWCBExplore(n_actions=4, exploration="bag", bag_size=3, random_state=2)
    for x in X[:10]:
        learner.learn_one(x, learner.predict_one(x), float(x[0] > 0))
    copy = pickle.loads(pickle.dumps(learner))
    assert isinstance(copy.__getstate__()["_ws"], bytes)
    np.testing.assert_array_equal(copy.action_probs_many(X[10:]), learner.action_probs_many(X[10:]))
    assert list(copy.predict_many(X[10:])) == list(learner.predict_many(X[10:]))


@pytest.mark.parametrize(
    ("params", "message"),
    [
        pytest.param(
            {"exploration": "cover"},
            r"The 'exploration' parameter of VWCBExplore must be one of \{'epsilon', 'bag'\}. "
            r"Got 'cover' instead",
            id="exploration",
        ),
        pytest.param(
            {"epsilon": 1.5},
            r"The 'epsilon' parameter of VWCBExplore must be a float >= 0.0 and <= 1.0. "
            r"Got 1.5 instead",
            id="epsilon",
        ),
        pytest.param(
            {"n_actions": 1},
            r"The 'n_actions' parameter of VWCBExplore must be an int >= 2. Got 1 instead",
            id="n_actions",
        ),
    ],
)
def test_vw_bad_parameter_messages(params, message):
    """Invalid parameters fail at first use with the parameter, the rule and the value."""
    learner = VWCBExplore(**{"n_actions": 3, **params})
    with pytest.raises(InvalidParameterError, match=message):
        learner.predict_one(np.zeros(2))


def test_vw_learn_one_rejects_unknown_action():
    """learn_one with an action outside [0, K) names the range and the value."""
    learner = VWCBExplore(n_actions=3, random_state=0)
    with pytest.raises(InvalidParameterError, match=r"action must be an int in \[0, 3\). Got 7"):
        learner.learn_one(np.zeros(2), 7, 1.0)
