"""LinUCB and ε-greedy on per-action ridge regressions (algorithms/online/linear_bandits.py)."""

from __future__ import annotations

import numpy as np
import pytest

from opboost.algorithms.online import EpsilonGreedyLinear, LinUCB
from opboost.api.exceptions import InvalidParameterError
from opboost.simulation import run_bandit


def _stream(n: int = 300, d: int = 4, k: int = 3, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    labels = np.argmax(X[:, :k] + 0.3 * rng.normal(size=(n, k)), axis=1)
    return X, labels


@pytest.mark.parametrize(("l2", "beta"), [(1.0, 1.0), (1.0, 2.0)])
def test_linucb_matches_river_linucb_disjoint(l2, beta):
    """Same upper bounds as river's LinUCBDisjoint(alpha=l2, beta) at every step (raw
    features, no intercept), and the same action whenever river's argmax is unique."""
    from river import bandit

    X, labels = _stream(n=120)
    river = bandit.LinUCBDisjoint(alpha=l2, beta=beta, seed=0)
    ours = LinUCB(
        n_actions=3, l2=l2, beta=beta, fit_intercept=False, standardize=False, random_state=0
    )
    arms = [0, 1, 2]
    unique = 0
    for x, label in zip(X, labels, strict=True):
        context = dict(enumerate(x.tolist()))
        bounds = []
        for arm in arms:
            dist = river._bayes_lin_regs[arm].predict_one(context, with_dist=True)
            bounds.append(dist.mu + dist.sigma)
        np.testing.assert_allclose(ours.ucb_one(x), bounds, rtol=1e-9, atol=1e-12)
        arm = river.pull(arms, context=context)
        action = ours.predict_one(x)
        if np.sum(np.isclose(bounds, max(bounds), rtol=0, atol=1e-12)) == 1:
            assert action == arm
            unique += 1
        reward = float(arm == label)
        river.update(arm, context, reward)
        ours.learn_one(x, arm, reward)  # both learn river's action
    assert unique >= 100  # ties only in the first steps


def test_linucb_alpha_zero_is_greedy_ridge():
    """alpha=0 plays argmax_k theta_k . x of ridge regressions solved directly."""
    X, labels = _stream(n=80)
    learner = LinUCB(n_actions=3, alpha=0.0, l2=2.0, standardize=False, random_state=0)
    rng = np.random.default_rng(1)
    actions = rng.integers(3, size=len(X))
    for x, a, label in zip(X, actions, labels, strict=True):
        learner.learn_one(x, int(a), float(a == label))
    Xb = np.hstack([X, np.ones((len(X), 1))])
    for k in range(3):
        rows = actions == k
        A = 2.0 * np.eye(5) + Xb[rows].T @ Xb[rows]
        theta = np.linalg.solve(A, Xb[rows].T @ (labels[rows] == k).astype(float))
        np.testing.assert_allclose(learner.coef_[k], theta, rtol=1e-8, atol=1e-10)
    x = X[0]
    assert learner.predict_one(x) == int(np.argmax(learner.coef_ @ np.append(x, 1.0)))


def test_linucb_action_probs_many_matches_one():
    """The batched point masses equal action_probs_one row by row."""
    X, labels = _stream(n=60)
    learner = LinUCB(n_actions=3, random_state=0)
    run_bandit(learner, X, labels, random_state=0)
    many = learner.action_probs_many(X[:10])
    np.testing.assert_allclose(many, np.stack([learner.action_probs_one(x) for x in X[:10]]))


def test_epsilon_greedy_distribution_and_sampling():
    """1 - eps + eps/K on the greedy action, eps/K elsewhere; predict_one samples from it."""
    X, labels = _stream(n=100)
    # raw features: with the scaler on, repeating one x moves its standardised value
    learner = EpsilonGreedyLinear(n_actions=3, epsilon=0.3, standardize=False, random_state=0)
    run_bandit(learner, X, labels, random_state=0)
    x = X[0]
    probs = learner.action_probs_one(x)
    assert np.isclose(probs.max(), 0.7 + 0.1) and np.isclose(probs.min(), 0.1)
    np.testing.assert_allclose(learner.action_probs_many(X[:1])[0], probs)
    counts = np.zeros(3)
    for _ in range(6000):
        counts[learner.predict_one(x)] += 1
    np.testing.assert_allclose(counts / 6000, probs, atol=0.03)
    np.testing.assert_allclose(learner.action_probs_one(x), probs)


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: LinUCB(n_actions=3, random_state=0), id="linucb"),
        pytest.param(lambda: EpsilonGreedyLinear(n_actions=3, random_state=0), id="eps"),
    ],
)
def test_linear_references_learn(make):
    """Both beat 0.7 progressive reward on a 3-class linear stream (chance: 1/3)."""
    X, labels = _stream(n=1500)
    assert run_bandit(make(), X, labels, random_state=0).mean_reward > 0.7


@pytest.mark.parametrize(
    ("make", "message"),
    [
        pytest.param(
            lambda: LinUCB(n_actions=3, alpha=-1.0),
            r"The 'alpha' parameter of LinUCB must be a float >= 0.0. Got -1.0 instead; "
            r"alpha=0 plays greedily.",
            id="alpha",
        ),
        pytest.param(
            lambda: LinUCB(n_actions=3, l2=0.0),
            r"The 'l2' parameter of LinUCB must be a float > 0.0. Got 0.0 instead; e.g. l2=1.0.",
            id="l2",
        ),
        pytest.param(
            lambda: EpsilonGreedyLinear(n_actions=3, epsilon=1.5),
            r"The 'epsilon' parameter of EpsilonGreedyLinear must be a float >= 0.0 and "
            r"<= 1.0. Got 1.5 instead; e.g. 0.05.",
            id="epsilon",
        ),
        pytest.param(
            lambda: LinUCB(n_actions=1),
            r"The 'n_actions' parameter of LinUCB must be an int >= 2. Got 1 instead",
            id="n-actions",
        ),
    ],
)
def test_linear_references_bad_parameters(make, message):
    """Bad parameters raise with the exact message at the first context."""
    with pytest.raises(InvalidParameterError, match=message):
        make().predict_one(np.zeros(2))
