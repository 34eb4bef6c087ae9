"""Issue 19 acceptance: on simulated catalogue logs, test rows whose candidates are all items
absent from the training logs, the default Booster on action features reaches at least 95%
of the true value of LightGBM reward regression on [x, phi(a)] over the same candidates,
beats the logging policy clearly and never serves a non-candidate."""

from __future__ import annotations

import numpy as np
import pytest

from opboost import Booster
from opboost.algorithms.policy_learners.reward_regression import RewardRegression
from opboost.simulation import simulate_catalogue


@pytest.mark.parametrize("seed", [0, 1])
def test_default_booster_on_item_features_scores_new_items(seed):
    # 20,000 rows of a 200-item catalogue, 10 candidates a row, uniform logger; about 1.5 s
    # a fit on one thread (the thread count changes the speed, not the model).
    sim = simulate_catalogue(20_000, 200, 10, 3, 3, random_state=seed, logging_beta=0.0,
                             reward_scale=3.0)  # fmt: skip
    test = sim.test_rows(2_000, new_items=True)
    assert np.isin(test.candidate_items, test.new_items).all()  # every candidate is new
    serving = {"action_features": test.item_features, "candidates": test.logged.candidates}
    X = test.logged.contexts

    booster = Booster(random_state=0, base_learner_params={"num_threads": 1}).fit(sim.logged)
    model = RewardRegression(random_state=0).fit(sim.logged)
    actions = booster.predict(X, **serving)
    assert test.logged.candidates.toarray()[np.arange(len(X)), actions].all()

    boosted = test.policy_value(actions)
    regression = test.policy_value(model.predict(X, **serving))
    logging = test.logging_value
    best = float(test.candidate_means.max(axis=1).mean())
    assert boosted >= 0.95 * regression, (boosted, regression)
    assert boosted - logging >= 0.5 * (best - logging), (boosted, logging, best)
