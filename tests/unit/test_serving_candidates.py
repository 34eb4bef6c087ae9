"""Serving over per-request candidate sets: a masked policy never returns, or gives
probability to, a non-candidate; slates are the top-k distinct candidates."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from opboost import Booster
from opboost.api.policy import ConstantPolicy
from opboost.api.serving.masks import top_k


@pytest.fixture(scope="module")
def fitted(digits):
    from opboost.simulation import supervised_to_bandit

    sim = supervised_to_bandit(digits.X[:600], digits.y[:600], n_actions=10, random_state=0)
    policy = Booster(n_rounds=5, random_state=0).fit(sim.logged).policy_
    return policy, digits.X[600:800]


def _mask(m: int, k: int, per_row: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    mask = np.zeros((m, k), dtype=bool)
    for i in range(m):
        mask[i, rng.choice(k, size=per_row, replace=False)] = True
    return mask


@pytest.mark.parametrize("sparse", [False, True])
def test_masked_policy_never_serves_a_non_candidate(fitted, sparse):
    policy, X = fitted
    mask = _mask(len(X), 10, 3)
    given = sp.csr_matrix(mask) if sparse else mask
    actions = policy.predict(X, candidates=given)
    assert mask[np.arange(len(X)), actions].all()
    probs = policy.predict_proba(X, candidates=given)
    assert np.all(probs[~mask] == 0.0)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0)
    # among the candidates the ranking is the unmasked policy's
    scores = policy.decision_function(X)
    best = np.where(mask, scores, -np.inf).argmax(axis=1)
    np.testing.assert_array_equal(actions, best)


def test_slates_are_the_top_candidates_best_first(fitted):
    policy, X = fitted
    mask = _mask(len(X), 10, 3, seed=1)
    slates = policy.rank(X, 4, candidates=mask)
    assert slates.shape == (len(X), 4)
    np.testing.assert_array_equal(slates[:, 3], -1)  # only 3 candidates a row
    np.testing.assert_array_equal(slates[:, 0], policy.predict(X, candidates=mask))
    scores = policy.decision_function(X)
    rows = np.arange(len(X))[:, None]
    assert (np.diff(scores[rows, slates[:, :3]], axis=1) <= 0).all()
    assert mask[rows, slates[:, :3]].all()


def test_top_k_ties_go_to_the_lower_index():
    scores = np.array([[1.0, 3.0, 3.0, -np.inf]])
    np.testing.assert_array_equal(top_k(scores, 4), [[1, 2, 0, -1]])


def test_constant_fallback_respects_candidates():
    policy = ConstantPolicy(2, 4)
    mask = np.array([[True, False, True, False], [False, True, False, True]])
    np.testing.assert_array_equal(policy.predict(np.zeros((2, 3)), candidates=mask), [2, 1])
    np.testing.assert_array_equal(
        policy.predict_proba(np.zeros((2, 3)), candidates=mask), [[0, 0, 1, 0], [0, 1, 0, 0]]
    )


@pytest.mark.parametrize(
    ("candidates", "message"),
    [
        (np.ones((2, 10), dtype=bool), r"candidates must have shape \(200, 10\)"),
        (np.zeros((200, 10), dtype=bool), r"candidates row 0 has no candidate"),
        (np.full((200, 10), 2), r"candidates must be a boolean mask"),
    ],
)
def test_bad_candidates_are_named(fitted, candidates, message):
    policy, X = fitted
    with pytest.raises(ValueError, match=r"^Policy\.decision_function: " + message):
        policy.predict(X, candidates=candidates)
