"""Every action's prediction of a LightGBM model on [x; onehot(a)] from the actions its trees
split on (issue 52 item 1: the doubly robust reward model predicted 10**6 actions one at a time
on (m, d + 10**6) dense rows, and RewardRegression stacked every action of a context)."""

from __future__ import annotations

import lightgbm as lgb
import numpy as np
import pytest
import scipy.sparse as sp

from opboost.algorithms.estimators.direct import DoublyRobust, action_features
from opboost.algorithms.policy_learners.reward_regression import RewardRegression
from opboost.api.data.logged import LoggedBandit
from opboost.api.numerics.design import stacked_design
from opboost.lgbm.onehot_scores import onehot_action_scores, split_actions


def _logs(n: int, k: int, seed: int = 0) -> LoggedBandit:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    X[rng.random(X.shape) < 0.1] = 0.0
    actions = rng.integers(0, k, n)
    rewards = rng.random(n) + (actions % 3 == 0) * X[:, 0]
    return LoggedBandit(X, actions, np.full(n, 1 / k), rewards, k)


@pytest.mark.parametrize("k", [7, 60])
@pytest.mark.parametrize("sparse", [False, True])
def test_reward_regression_scores_equal_the_stacked_design(k, sparse):
    """RewardRegression.decision_function equals LightGBM's prediction of the stacked dense
    [x; onehot(a)] rows of every action (missing and zero values included), dense or CSR."""
    data = _logs(1500, k)
    model = RewardRegression(n_estimators=30, random_state=0).fit(data)
    X = np.random.default_rng(1).normal(size=(40, 4))
    X[::3, 1], X[1::4, 2] = np.nan, 0.0
    expected = model.model_.predict(stacked_design(X, k)).reshape(40, k)
    assert len(split_actions(model.model_.booster_, 4, k)) > 0  # some actions split on
    got = model.decision_function(sp.csr_matrix(X) if sparse else X)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


class CountingRegressor(lgb.LGBMRegressor):
    """LightGBM's regressor counting its predict calls and the rows they read."""

    calls: list[int] = []  # noqa: RUF012 - shared by the clones of one test

    def predict(self, X, *args, **kwargs):
        type(self).calls.append(X.shape[0])
        return super().predict(X, *args, **kwargs)


def test_doubly_robust_predicts_only_the_split_on_actions():
    """DR's cross-fitted q on 2,000 actions: one predict call per fold (it was one per
    action, each on rows as wide as the actions), equal to the model's prediction of any
    action's one-hot rows."""
    k = 2_000
    data = _logs(200, k)
    CountingRegressor.calls = []
    model = CountingRegressor(n_estimators=20, num_leaves=7, verbose=-1, random_state=0)
    estimator = DoublyRobust(reward_model=model, n_folds=2, random_state=0)
    q = estimator.reward_predictions(data)
    assert q.shape == (200, k)
    assert len(CountingRegressor.calls) == 2, CountingRegressor.calls[:5]
    fitted = lgb.LGBMRegressor(n_estimators=20, num_leaves=7, verbose=-1, random_state=0)
    fitted.fit(action_features(data.contexts, data.actions, k), data.rewards)
    scores = onehot_action_scores(fitted, data.contexts[:5], k)
    for a in (0, int(data.actions[0]), k - 1):
        design = action_features(data.contexts[:5], np.full(5, a), k)
        np.testing.assert_allclose(scores[:, a], fitted.predict(design), rtol=0, atol=1e-12)


def test_reward_regression_scores_refused_by_what_does_not_fit(monkeypatch):
    """With 100 KiB left: the scores of 1,000 contexts x 60 actions (469 KiB) are refused with
    "score fewer contexts" and the size of one context's; with 100 bytes left even one
    context's 480 bytes do not fit, and the advice is fewer actions."""
    import opboost.api.numerics.memory_limit as memory_limit

    model = RewardRegression(n_estimators=5, random_state=0).fit(_logs(300, 60))
    X = np.zeros((1000, 4))
    left = 100 * 1024
    monkeypatch.setattr(memory_limit, "memory_left", lambda: (left, "left (test)"))
    with pytest.raises(
        memory_limit.InsufficientMemoryError,
        match=r"^RewardRegression\.decision_function: scores of 1,000 contexts x 60 actions "
        r"\(float64\): at least 0\.0 GiB needed, more than the 0\.0 GiB left \(test\)\. Score "
        r"fewer contexts per call \(one context's scores take 0\.5 KiB\)\.$",
    ):
        model.decision_function(X)
    assert model.decision_function(X[:10]).shape == (10, 60)
    left = 100
    with pytest.raises(
        memory_limit.InsufficientMemoryError,
        match=r"^RewardRegression\.decision_function: one context's scores, 60 actions "
        r"\(float64\): .* Refit with fewer actions; no call can score a context\.$",
    ):
        model.decision_function(X[:1])
