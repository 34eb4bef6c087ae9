"""The stacked (x, a) design and the reward-regression baseline."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from opboost.algorithms.policy_learners.reward_regression import RewardRegression
from opboost.api.numerics.design import action_rows, stacked_design
from opboost.simulation.supervised import expected_reward, supervised_to_bandit


def test_stacked_design_rows_are_context_then_onehot():
    """Row i*K + a of the stacked design is [x_i; onehot(a)]."""
    X = np.arange(6.0).reshape(3, 2)
    rows = stacked_design(X, 4)
    assert rows.shape == (12, 6)
    i, a = 2, 3
    np.testing.assert_array_equal(rows[i * 4 + a], [4.0, 5.0, 0, 0, 0, 1])


def test_stacked_design_sparse_matches_dense():
    """A CSR context matrix gives the same (sparse) design as the dense one."""
    X = np.array([[0.0, 1.5], [2.0, 0.0]])
    dense = stacked_design(X, 3)
    sparse = stacked_design(sp.csr_matrix(X), 3)
    assert sp.issparse(sparse)
    np.testing.assert_array_equal(sparse.toarray(), dense)


def test_action_rows_one_row_per_example():
    """action_rows appends the one-hot of each row's own action."""
    X = np.ones((2, 1))
    np.testing.assert_array_equal(action_rows(X, np.array([1, 0]), 2), [[1, 0, 1], [1, 1, 0]])


def test_reward_regression_beats_uniform_on_digits():
    """The greedy reward-regression policy beats uniform guessing on held-out digits."""
    import opboost

    digits = opboost.make("dataset", "digits").load()
    X, y = digits.X, digits.y
    sim = supervised_to_bandit(X[:1300], y[:1300], n_actions=10, random_state=0)
    model = RewardRegression(n_estimators=50, random_state=0).fit(sim.logged)
    actions = model.predict(X[1300:])
    value = expected_reward(np.eye(10)[actions], y[1300:])
    assert model.decision_function(X[1300:]).shape == (len(X) - 1300, 10)
    assert value > 0.1 + 0.3  # uniform is 0.1
