"""BOPL-S with xgboost_tree learns a better policy than the logging policy on digits."""

from __future__ import annotations

import numpy as np

from opboost import Booster
from opboost.simulation.datasets.bundled import Digits
from opboost.simulation.supervised import expected_reward, supervised_to_bandit


def test_xgboost_bopl_s_beats_logging_policy_on_digits():
    """30 rounds of exact-split trees: true test reward well above the logging policy's."""
    data = Digits().load()
    order = np.random.default_rng(0).permutation(len(data.y))
    test, train = order[:450], order[450:]
    sim = supervised_to_bandit(data.X[train], data.y[train], n_actions=10, random_state=0)
    booster = Booster(
        objective="bopl_s",
        base_learner="xgboost_tree",
        base_learner_params={"tree_method": "exact", "max_depth": 6, "min_child_weight": 5.0},
        n_rounds=30,
        random_state=0,
    ).fit(sim.logged)
    logging = expected_reward(sim.logging_policy.predict_proba(data.X[test]), data.y[test])
    learned = float(np.mean(booster.predict(data.X[test]) == data.y[test]))
    assert logging < 0.4
    assert learned > logging + 0.2, (learned, logging)
