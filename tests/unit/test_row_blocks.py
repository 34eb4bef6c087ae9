"""A round's arithmetic over blocks of rows gives the whole-array values bit for bit.

Every test shrinks the blocks (``BLOCK_VALUES``) so that a few hundred rows span many blocks,
including a last, shorter one, and compares with the whole-array numpy formulas the fit used
before it worked in blocks.
"""

from __future__ import annotations

import numpy as np
import pytest

from opboost.algorithms.objectives.bopl_s import BOPLS
from opboost.api.learner import BaseProblem
from opboost.api.numerics import row_blocks
from opboost.api.numerics.row_blocks import (
    RowWeightedProblem,
    add_scaled,
    gradient_products,
    logged_gradient,
)
from opboost.api.objective import policy_terms, softmax
from opboost.api.round_state import RoundState

N, K = 301, 7


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    monkeypatch.setattr(row_blocks, "BLOCK_VALUES", 40)  # 5 rows of 7 actions a block


@pytest.fixture
def policy():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(N, K)) * 3.0
    return scores, rng.integers(K, size=N)


def _old_softmax(scores):
    """The whole-array softmax of the fit before blocks (same operations, one pass each)."""
    top = scores.max(axis=1)
    probs = scores - top[:, None]
    np.exp(probs, out=probs)
    total = np.einsum("ij->i", probs)
    probs *= (1.0 / total)[:, None]
    return probs, top + np.log(total)


def _old_gradient(probs, actions):
    g = -probs
    g.ravel()[np.arange(len(actions)) * probs.shape[1] + actions] += 1.0
    return g


def test_blocks_cover_the_rows_in_order():
    blocks = list(row_blocks.row_blocks(N, K))
    assert blocks[0] == slice(0, 5) and blocks[-1] == slice(300, 301)
    assert [b.start for b in blocks[1:]] == [b.stop for b in blocks[:-1]]
    assert list(row_blocks.row_blocks(3, 1000)) == [slice(0, 1), slice(1, 2), slice(2, 3)]


def test_softmax_and_policy_terms_are_the_whole_array_values(policy):
    scores, actions = policy
    probs, log_norm = _old_softmax(scores)
    assert np.array_equal(softmax(scores), probs)
    new_probs, pi_logged, g, new_log_norm = policy_terms(scores, actions)
    assert np.array_equal(new_probs, probs) and np.array_equal(new_log_norm, log_norm)
    assert np.array_equal(g, _old_gradient(probs, actions))
    assert np.array_equal(pi_logged, probs[np.arange(N), actions])


def test_gradient_products_and_scaled_adds_are_the_whole_array_values(policy):
    scores, actions = policy
    probs = _old_softmax(scores)[0]
    g, other = _old_gradient(probs, actions), np.random.default_rng(1).normal(size=(N, K))
    assert np.array_equal(logged_gradient(probs, actions, slice(10, 20)), g[10:20])
    assert np.array_equal(gradient_products(probs, actions), np.einsum("ij,ij->i", g, g))
    assert np.array_equal(gradient_products(probs, actions, other), np.einsum("ij,ij->i", g, other))
    out = scores.copy()
    add_scaled(out, 0.37, other)
    assert np.array_equal(out, scores + 0.37 * other)


def test_round_state_builds_g_only_when_asked(policy):
    scores, actions = policy
    probs = _old_softmax(scores)[0]
    ones = np.ones(N)
    state = RoundState(scores, probs, ones, actions, ones, None, ones, ones, ones)
    other = np.random.default_rng(2).normal(size=(N, K))
    lazy = state.gradient_products(other)
    assert "_g" not in state.__dict__ or state.__dict__["_g"] is None  # not built
    assert np.array_equal(state.g, _old_gradient(probs, actions))  # built on first use
    assert np.array_equal(state.gradient_products(other), lazy)  # now from the held g
    assert np.array_equal(state.gradient_rows(slice(3, 9)), state.g[3:9])
    given = RoundState(scores, probs, ones, actions, ones, other, ones, ones, ones)
    assert given.g is other


def test_bopl_s_problem_is_the_whole_array_problem(policy):
    """The row-weighted regression problem holds the targets and weights of the formulas
    s_i (xi_i / sigma_i) g_{i,a} and |c_i| sigma_i, built only when read."""
    scores, actions = policy
    coef = np.random.default_rng(3).normal(size=N)  # both signs: both branches of BOPL-S
    objective = BOPLS()
    data = _logs(actions)
    state = objective.round_state(scores, data, coef)
    problem = objective.problem_at(state, "regression")
    assert isinstance(problem, RowWeightedProblem) and isinstance(problem, BaseProblem)
    assert "targets" not in repr(problem) and "targets" not in problem.__dict__
    g = _old_gradient(state.probs, actions)
    sign = np.where(coef < 0, -1.0, 1.0)
    assert np.array_equal(problem.targets, (sign * state.xi / state.sigma)[:, None] * g)
    curvature = np.abs(coef) * state.sigma
    assert np.array_equal(problem.weights, np.repeat(curvature[:, None], K, axis=1))
    assert problem.weights.flags.c_contiguous
    scratch = np.full((N, K), np.nan)
    assert np.array_equal(problem.weights_into(scratch), problem.weights)
    assert "_g" not in state.__dict__ or state.__dict__["_g"] is None  # never built


def _logs(actions):
    from opboost.api.data.logged import LoggedBandit

    X = np.zeros((N, 2))
    return LoggedBandit(X, actions, np.full(N, 1.0 / K), np.ones(N), K)
