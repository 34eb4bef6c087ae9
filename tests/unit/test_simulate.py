"""Unit tests of supervised-to-bandit simulation and reward structures, on bundled digits."""

from __future__ import annotations

import numpy as np
import pytest

from opboost.api.exceptions import InvalidParameterError
from opboost.simulation.supervised import (
    SoftmaxLoggingPolicy,
    expected_reward,
    partial_credit,
    reward_table,
    supervised_to_bandit,
)

K = 10


@pytest.fixture(scope="module")
def sim(digits):
    """digits converted with the default settings, seed 0."""
    return supervised_to_bandit(digits.X, digits.y, n_actions=K, random_state=0)


def test_propensities_match_the_logging_policy(sim, digits):
    """Logged propensities are logging_probs[i, a_i], which is the logger's predict_proba."""
    logged = sim.logged
    rows = np.arange(len(logged))
    np.testing.assert_array_equal(logged.propensities, logged.logging_probs[rows, logged.actions])
    np.testing.assert_allclose(
        logged.logging_probs, sim.logging_policy.predict_proba(digits.X[sim.bandit_indices])
    )
    np.testing.assert_allclose(logged.logging_probs.sum(axis=1), 1.0)


def test_logged_rewards_are_reward_table_entries(sim, digits):
    """r_i = 1{a_i = y_i} for multiclass, and y_logged are the hidden labels of logged rows."""
    logged = sim.logged
    np.testing.assert_array_equal(sim.y_logged, digits.y[sim.bandit_indices])
    np.testing.assert_array_equal(logged.rewards, (logged.actions == sim.y_logged).astype(float))
    table = reward_table(sim.y_logged, "multiclass", K)
    np.testing.assert_array_equal(logged.rewards, table[np.arange(len(logged)), logged.actions])
    np.testing.assert_array_equal(logged.contexts, digits.X[sim.bandit_indices])


@pytest.mark.parametrize(
    ("log_fraction", "n_logger"),
    [pytest.param(0.1, 180, id="10%"), pytest.param(0.5, 898, id="50%")],
)
def test_log_fraction_sets_the_logger_rows(digits, log_fraction, n_logger):
    """round(log_fraction * n) rows train the logger; the rest, disjoint, are logged."""
    sim = supervised_to_bandit(
        digits.X, digits.y, n_actions=K, log_fraction=log_fraction, random_state=1
    )
    assert len(sim.logger_indices) == n_logger
    assert len(sim.logged) == len(digits) - n_logger
    assert not set(sim.logger_indices) & set(sim.bandit_indices)
    all_rows = np.sort(np.concatenate([sim.logger_indices, sim.bandit_indices]))
    np.testing.assert_array_equal(all_rows, np.arange(len(digits)))


def test_same_seed_same_log_and_different_seed_different_log(sim, digits):
    """The split, the logger and the sampled actions are all seeded."""
    again = supervised_to_bandit(digits.X, digits.y, n_actions=K, random_state=0)
    np.testing.assert_array_equal(again.logged.actions, sim.logged.actions)
    np.testing.assert_array_equal(again.logged.propensities, sim.logged.propensities)
    other = supervised_to_bandit(digits.X, digits.y, n_actions=K, random_state=1)
    assert not np.array_equal(other.bandit_indices, sim.bandit_indices)


@pytest.mark.parametrize("epsilon", [pytest.param(e, id=f"eps={e}") for e in (0.05, 0.5, 1.0)])
def test_epsilon_bounds_every_logging_probability(digits, epsilon):
    """With epsilon-uniform exploration every action has probability >= epsilon / K."""
    sim = supervised_to_bandit(digits.X, digits.y, n_actions=K, epsilon=epsilon, random_state=2)
    assert sim.logged.logging_probs.min() >= epsilon / K - 1e-12
    if epsilon == 1.0:
        np.testing.assert_allclose(sim.logged.propensities, 1 / K)


def test_multilabel_rewards_are_one_for_any_true_label(digits):
    """For an (n, K) label matrix the reward is 1 iff the action is one of the row's labels."""
    rng = np.random.default_rng(0)
    labels = np.eye(K)[digits.y]
    labels[rng.random(labels.shape) < 0.2] = 1.0  # add extra true labels
    sim = supervised_to_bandit(digits.X, labels, n_actions=K, reward="multilabel", random_state=3)
    logged = sim.logged
    rows = np.arange(len(logged))
    np.testing.assert_array_equal(logged.rewards, sim.y_logged[rows, logged.actions])
    assert logged.rewards.mean() > 0.2  # more true labels than multiclass gives
    assert expected_reward(
        sim.y_logged / sim.y_logged.sum(1, keepdims=True), sim.y_logged, "multilabel"
    ) == pytest.approx(1.0)


def test_partial_credit_matrix():
    """partial_credit: 1 on the diagonal, credit within a group, 0 across groups."""
    matrix = partial_credit(5, [[0, 1], [2, 3, 4]], credit=0.25)
    expected = np.array(
        [
            [1, 0.25, 0, 0, 0],
            [0.25, 1, 0, 0, 0],
            [0, 0, 1, 0.25, 0.25],
            [0, 0, 0.25, 1, 0.25],
            [0, 0, 0.25, 0.25, 1],
        ]
    )
    np.testing.assert_array_equal(matrix, expected)


def test_partial_credit_rewards_in_a_simulated_log(digits):
    """With a reward matrix R, logged rewards are R[y_i, a_i] (including partial credit)."""
    matrix = partial_credit(K, [[0, 6, 8, 9], [1, 7], [3, 5]], credit=0.25)
    sim = supervised_to_bandit(
        digits.X, digits.y, n_actions=K, reward=matrix, epsilon=0.5, random_state=4
    )
    logged = sim.logged
    np.testing.assert_array_equal(logged.rewards, matrix[sim.y_logged, logged.actions])
    assert set(np.unique(logged.rewards)) == {0.0, 0.25, 1.0}


@pytest.mark.parametrize(
    "reward",
    [
        pytest.param("multiclass", id="multiclass"),
        pytest.param(partial_credit(K, [[0, 1, 2]], 0.5), id="partial-credit"),
    ],
)
def test_expected_reward_of_the_true_label_policy_is_one(sim, reward):
    """Playing the true class always earns 1; the uniform policy earns the mean table entry."""
    onehot = np.eye(K)[sim.y_logged]
    assert expected_reward(onehot, sim.y_logged, reward) == pytest.approx(1.0)
    uniform = np.full(onehot.shape, 1 / K)
    table = reward_table(sim.y_logged, reward, K)
    assert expected_reward(uniform, sim.y_logged, reward) == pytest.approx(table.mean())


def test_expected_reward_of_the_logger_matches_its_mean_logged_reward(sim):
    """The logger's true value is close to its average logged reward (same rows, sampling noise)."""
    true = expected_reward(sim.logged.logging_probs, sim.y_logged)
    se = np.sqrt(true * (1 - true) / len(sim.logged))
    assert abs(sim.logged.rewards.mean() - true) < 4 * se


def test_logging_policy_with_a_single_class_is_constant():
    """A logger that saw one class plays it (up to epsilon), with every probability > 0."""
    policy = SoftmaxLoggingPolicy(n_actions=3, epsilon=0.3).fit(np.ones((4, 2)), np.full(4, 1))
    probs = policy.predict_proba(np.zeros((2, 2)))
    np.testing.assert_allclose(probs, [[0.1, 0.8, 0.1]] * 2)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        pytest.param(
            {"reward": "binary"},
            r"The 'reward' parameter must be 'multiclass', "
            r"'multilabel' or a \(classes x actions\) matrix\. Got 'binary'",
            id="unknown-reward",
        ),
        pytest.param(
            {"reward": np.ones(K)},
            r"reward matrix must be a finite 2-D \(classes x "
            r"actions\) array\. Got shape \(10,\)",
            id="1d-matrix",
        ),
        pytest.param(
            {"reward": np.ones((5, K))},
            r"y has class 9 but the reward matrix has "
            r"only 5 rows",
            id="matrix-too-few-classes",
        ),
        pytest.param(
            {"reward": np.ones((K, 4))},
            r"reward matrix has 4 columns \(actions\) but "
            r"n_actions=10",
            id="matrix-wrong-actions",
        ),
        pytest.param(
            {"reward": "multilabel"},
            r"reward='multilabel' needs y as an \(n, K\) 0/1 "
            r"matrix\. Got shape \(1797,\)",
            id="multilabel-1d",
        ),
        pytest.param(
            {"n_actions": 5},
            r"reward='multiclass': y has class 9 but n_actions=5",
            id="too-few-actions",
        ),
        pytest.param(
            {"n_actions": 1},
            r"The 'n_actions' parameter of supervised_to_bandit must "
            r"be an int >= 2\. Got 1",
            id="one-action",
        ),
        pytest.param(
            {"log_fraction": 1.0},
            r"The 'log_fraction' parameter of "
            r"supervised_to_bandit must be a float > 0\.0 and < 1\.0\. Got 1\.0",
            id="log-fraction-one",
        ),
        pytest.param(
            {"epsilon": -0.1},
            r"The 'epsilon' parameter of supervised_to_bandit must "
            r"be a float >= 0\.0 and <= 1\.0\. Got -0\.1",
            id="negative-epsilon",
        ),
    ],
)
def test_bad_reward_spec_and_parameters(digits, kwargs, match):
    """Bad reward structures and parameters are errors naming what is wrong."""
    params = {"n_actions": K, "random_state": 0, **kwargs}
    with pytest.raises(InvalidParameterError, match=match):
        supervised_to_bandit(digits.X, digits.y, **params)


def test_rows_of_x_and_y_must_match(digits):
    """X and y with different row counts are rejected with both counts."""
    with pytest.raises(InvalidParameterError, match="X has 1797 rows but y has 1796"):
        supervised_to_bandit(digits.X, digits.y[:-1], n_actions=K, random_state=0)


def test_labels_must_be_class_indices(digits):
    """String labels get a hint to encode them."""
    with pytest.raises(InvalidParameterError, match=r"1-D array of class indices.*LabelEncoder"):
        supervised_to_bandit(digits.X, digits.y.astype(str), n_actions=K, random_state=0)


def test_expected_reward_shape_mismatch(sim):
    """action_probs with the wrong number of rows is rejected with both shapes."""
    probs = np.full((5, K), 1 / K)
    with pytest.raises(
        InvalidParameterError,
        match=r"action_probs has shape \(5, 10\) but the labels give \(1617, 10\)",
    ):
        expected_reward(probs, sim.y_logged)
