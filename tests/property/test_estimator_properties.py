"""Statistical and structural properties of the estimators, checked on seeded simulations."""

from __future__ import annotations

import numpy as np
import pytest

from opboost.algorithms.estimators.direct import DoublyRobust
from opboost.algorithms.estimators.ips import IPS, TruncatedIPS
from opboost.algorithms.estimators.snips import SNIPS
from opboost.api.data.logged import LoggedBandit

N_REPLICATES = 400


class ConstantModel:
    """A deliberately wrong reward model: the same prediction for every (x, a)."""

    def __init__(self, value: float):
        self.value = value

    def fit(self, X, y):
        return self

    def predict(self, X):
        return np.full(X.shape[0], self.value)


def _replicate_logs(base, n_replicates: int, seed: int):
    """Fresh uniform-logging logs on the fixed contexts of ``base``, Bernoulli rewards."""
    rng = np.random.default_rng(seed)
    n, k = base.table.shape
    rows = np.arange(n)
    for _ in range(n_replicates):
        actions = rng.integers(k, size=n)
        rewards = (rng.random(n) < base.table[rows, actions]).astype(float)
        yield LoggedBandit(base.data.contexts, actions, np.full(n, 1 / k), rewards, k)


@pytest.mark.parametrize(
    "estimator",
    [
        pytest.param(IPS(), id="ips"),
        pytest.param(DoublyRobust(reward_model=ConstantModel(0.9), n_folds=1), id="dr-wrong-model"),
    ],
)
def test_unbiased_under_uniform_logging(log_factory, estimator):
    """Over many simulated logs the mean estimate is within 4 standard errors of the truth."""
    base = log_factory(n=200, n_actions=4, uniform=True, bernoulli=True, seed=11)
    estimates = np.array(
        [
            estimator.estimate_value(log, base.target_probs)
            for log in _replicate_logs(base, N_REPLICATES, seed=12)
        ]
    )
    se = estimates.std(ddof=1) / np.sqrt(N_REPLICATES)
    assert abs(estimates.mean() - base.true_value) < 4 * se
    assert se < 0.01  # the check has power: 4 se is small next to rewards in [0, 1]


def test_truncated_ips_is_biased_downwards_for_nonnegative_rewards(log_factory):
    """Clipping nonnegative contributions can only lower them: truncated IPS <= IPS per row."""
    log = log_factory(n=300, bernoulli=True, seed=2)
    ips = IPS().round_values(log.data, log.target_probs)
    trunc = TruncatedIPS(max_weight=1.5).round_values(log.data, log.target_probs)
    assert np.all(trunc <= ips) and trunc.sum() < ips.sum()


@pytest.mark.parametrize(
    "max_weight", [pytest.param(m, id=f"M={m}") for m in (0.5, 1.0, 2.0, 5.0, 20.0)]
)
@pytest.mark.parametrize(
    "reward_value", [pytest.param(1.0, id="r01"), pytest.param(-2.0, id="r0m2")]
)
def test_clipping_never_increases_variance_with_binary_rewards(
    log_factory, max_weight, reward_value
):
    """Rewards in {0, c}: truncated IPS round values vary no more than IPS ones (same sample).

    Assumption: every nonzero reward has the same value c. Then r_i min(w_i, M) is a
    1-Lipschitz function of r_i w_i (min(., cM) or max(., cM)), and such a map never increases
    the empirical variance. See the next test for why general nonneg rewards are not enough.
    """
    log = log_factory(n=500, bernoulli=True, seed=3)
    data = log.data.with_rewards(log.data.rewards * reward_value)
    ips = IPS().round_values(data, log.target_probs)
    trunc = TruncatedIPS(max_weight=max_weight).round_values(data, log.target_probs)
    assert np.var(trunc) <= np.var(ips) + 1e-15


def test_clipping_can_increase_variance_with_general_nonnegative_rewards():
    """Counterexample: (r, w) = (1, 10) and (10, 1) tie under IPS; clipping at 1 splits them."""
    data = LoggedBandit(
        np.zeros((2, 1)), np.array([0, 0]), np.array([0.1, 1.0]), np.array([1.0, 10.0]), 2
    )
    probs = np.array([[1.0, 0.0], [1.0, 0.0]])
    assert np.var(IPS().round_values(data, probs)) == 0.0
    assert np.var(TruncatedIPS(max_weight=1.0).round_values(data, probs)) > 0.0


@pytest.mark.parametrize(
    "estimator",
    [
        pytest.param(IPS(), id="ips"),
        pytest.param(TruncatedIPS(max_weight=3.0), id="truncated"),
        pytest.param(SNIPS(), id="snips"),
    ],
)
def test_estimates_do_not_depend_on_row_order(log_factory, estimator):
    """Permuting the rows of the log and of action_probs together leaves the estimate unchanged."""
    log = log_factory(n=250, bernoulli=True, seed=4)
    order = np.random.default_rng(0).permutation(250)
    before = estimator.estimate_value(log.data, log.target_probs)
    after = estimator.estimate_value(log.data.subset(order), log.target_probs[order])
    assert after == pytest.approx(before, rel=1e-12)
