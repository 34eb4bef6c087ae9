"""VWOfflinePolicy (--cb_adf on logged rows) beats the logging policy on simulated digits."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from opboost_vw.offline import VWOfflinePolicy

from opboost.api import InvalidParameterError, NotFittedError
from opboost.simulation.datasets.bundled import Digits
from opboost.simulation.supervised import expected_reward, supervised_to_bandit


@pytest.fixture(scope="module")
def digits_log():
    """Digits split 1347/450; the training rows logged by a weak softmax policy (seed 0)."""
    data = Digits().load()
    order = np.random.default_rng(0).permutation(len(data.y))
    test, train = order[:450], order[450:]
    sim = supervised_to_bandit(data.X[train], data.y[train], n_actions=10, random_state=0)
    return sim, data.X[test], data.y[test]


@pytest.mark.parametrize("cb_type", ["dr", "ips", "mtr"])
def test_vw_offline_beats_logging_policy(digits_log, cb_type):
    """True test reward of the greedy VW policy exceeds the logging policy's by > 0.3."""
    sim, X_test, y_test = digits_log
    logging = expected_reward(sim.logging_policy.predict_proba(X_test), y_test)
    model = VWOfflinePolicy(cb_type=cb_type, random_state=0).fit(sim.logged)
    learned = expected_reward(model.predict_proba(X_test), y_test)
    assert logging < 0.4
    assert learned > logging + 0.3, (learned, logging)


def test_vw_offline_is_seeded_and_pickles(digits_log):
    """Same seed, same scores; a pickled policy (VW model bytes) scores identically."""
    sim, X_test, _ = digits_log
    first = VWOfflinePolicy(n_passes=1, random_state=3).fit(sim.logged)
    second = VWOfflinePolicy(n_passes=1, random_state=3).fit(sim.logged)
    scores = first.decision_function(X_test[:50])
    assert scores.shape == (50, 10)
    np.testing.assert_array_equal(second.decision_function(X_test[:50]), scores)
    restored = pickle.loads(pickle.dumps(first))
    assert "_ws" not in restored.__dict__
    np.testing.assert_array_equal(restored.decision_function(X_test[:50]), scores)


def test_vw_offline_errors(digits_log):
    """Unfitted use, a non-LoggedBandit and a bad cb_type fail with actionable messages."""
    sim, X_test, _ = digits_log
    with pytest.raises(NotFittedError, match="not fitted yet"):
        VWOfflinePolicy().predict(X_test)
    with pytest.raises(InvalidParameterError, match=r"fit expects a LoggedBandit\. Got ndarray"):
        VWOfflinePolicy().fit(X_test)
    with pytest.raises(
        InvalidParameterError,
        match=r"The 'cb_type' parameter of VWOfflinePolicy must be one of \{'dr', 'ips', 'mtr'\}",
    ):
        VWOfflinePolicy(cb_type="dm").fit(sim.logged)
