"""Properties of Chen, Lin & Lu (2014), Algorithm 1: Claim 1 and the simplex of eq. 6."""

from __future__ import annotations

import numpy as np
import pytest

from opboost.algorithms.online import ChenBanditBoost
from opboost.algorithms.online.chen_bandit_boost import example_weights
from opboost.simulation import run_bandit


def _recording_learner(delta: float, seed: int) -> tuple[ChenBanditBoost, list]:
    # raw features: the claim is about fixed hypotheses, and a running scaler moves them;
    # the numpy engine calls bank_.learn, which the recorder replaces
    learner = ChenBanditBoost(
        n_actions=4,
        n_learners=12,
        delta=delta,
        learning_rate=0.0,
        standardize=False,
        random_state=seed,
        engine="numpy",
    )
    learner.predict_one(np.zeros(5))  # build the bank
    calls: list = []
    learner.bank_.learn = lambda k, x, y, w, h: calls.append((k, w.copy()))  # freeze learners
    return learner, calls


@pytest.mark.parametrize("delta", [0.1, 0.4])
def test_claim1_example_weight_estimator_unbiased(delta):
    """E[w_tk^(i)] = wbar_tk^(i) for every class k and learner i (Claim 1, eqs. 2-4)."""
    rng = np.random.default_rng(0)
    learner, calls = _recording_learner(delta, seed=1)
    x = rng.normal(size=5)
    label = 2
    hyp = learner.bank_.predict(x)
    y_all = np.where(np.arange(4) == label, 1.0, -1.0)
    wbar = np.stack([example_weights(hyp[k], y_all[k], learner.gamma, 1.0) for k in range(4)])
    trials = 40_000
    total = np.zeros_like(wbar)
    for _ in range(trials):
        action = learner.predict_one(x)
        learner.learn_one(x, action, float(action == label))
    for k, w in calls:
        total[k] += w
    estimate = total / trials
    # w_tk = wbar 1[yhat = k] / p(k): its Monte Carlo standard error is
    # wbar sqrt((1 - p) / (p trials)); allow 4 standard errors.
    probs = learner.action_probs_one(x)[:, None]
    stderr = wbar * np.sqrt((1.0 - probs) / (probs * trials))
    assert np.all(np.abs(estimate - wbar) <= 4.0 * stderr + 1e-12)
    assert np.all(wbar > 0.5)  # the comparison is not vacuous


def test_claim1_weights_bounded_by_B():
    """Every estimated weight is at most B = K / delta (used by Claim 1's Azuma bound)."""
    learner, calls = _recording_learner(0.2, seed=2)
    rng = np.random.default_rng(3)
    for _ in range(2000):
        x = rng.normal(size=5)
        action = learner.predict_one(x)
        learner.learn_one(x, action, float(rng.random() < 0.5))
    assert max(w.max() for _, w in calls) <= 4 / 0.2 + 1e-12


@pytest.mark.parametrize("learning_rate", [None, 0.05, 5.0])
@pytest.mark.parametrize("weak_learner", ["perceptron", "gaussian_nb"])
def test_voting_weights_stay_on_simplex(learning_rate, weak_learner):
    """After every step each class's alpha is non-negative and sums to 1 (eq. 6)."""
    rng = np.random.default_rng(4)
    learner = ChenBanditBoost(
        n_actions=3,
        n_learners=10,
        weak_learner=weak_learner,
        learning_rate=learning_rate,
        delta=0.2,
        random_state=0,
    )
    for _ in range(300):
        x = rng.normal(size=4)
        action = learner.predict_one(x)
        learner.learn_one(x, action, float(rng.random() < 0.4))
        alpha = learner.alpha_
        assert np.all(alpha >= 0.0) and np.allclose(alpha.sum(axis=1), 1.0)


def test_eq6_one_step_by_hand():
    """One multiplicative step: alpha_k <- alpha_k exp(-eta l) / Z with l = -y h / p."""
    learner = ChenBanditBoost(
        n_actions=3, n_learners=4, learning_rate=0.3, delta=0.3, random_state=0
    )
    x = np.array([0.5, -1.0])
    action = learner.predict_one(x)
    hyp, f, top = learner._last
    before = learner.alpha_.copy()
    learner.learn_one(x, action, 0.0)  # y = -1 for the chosen class
    p = 0.1 + 0.7 * (action == top)
    theta = 0.1 / 2.1
    expected = before.copy()
    if theta + f[action] > 0:  # hinge active for y = -1
        expected[action] = before[action] * np.exp(-0.3 * hyp[action] / p)
        expected[action] /= expected[action].sum()
    assert np.allclose(learner.alpha_, expected)


def test_default_learning_rate_is_delta_cubed_over_k():
    """The paper's eta = delta^3 / K is the default."""
    learner = ChenBanditBoost(n_actions=5, delta=0.1, random_state=0)
    learner.predict_one(np.zeros(2))
    assert learner._eta == pytest.approx(0.1**3 / 5)


def test_row_order_changes_only_through_seed():
    """The same ordering seed reproduces the learning curve exactly; another seed differs."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 3))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0)
    runs = [
        run_bandit(
            ChenBanditBoost(n_actions=3, n_learners=6, random_state=1), X, y, random_state=s
        ).curve_error
        for s in (7, 7, 8)
    ]
    assert runs[0] == runs[1] and runs[0] != runs[2]
