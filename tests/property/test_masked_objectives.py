"""Objective identities over per-row candidate sets (masked slots): the softmax gives
non-candidates probability exactly 0, the gradient matches finite differences in the
candidates' scores and vanishes elsewhere, and the closed-form step still minimises the
smoothness bound, which still bounds the risk."""

from __future__ import annotations

import numpy as np
import pytest
from objective_problems import (
    assert_step_minimises_bound,
    make_problem,
    numeric_gradient,
    upper_bound,
)

from opboost.algorithms.objectives import BOPL, BOPLS
from opboost.api.data.logged import LoggedBandit
from opboost.api.data.slots import MASKED_SCORE, SlotView

OBJECTIVES = [pytest.param(BOPL(), id="bopl"), pytest.param(BOPLS(), id="bopl_s")]


def masked_problem(seed: int = 0, n: int = 12, k: int = 5):
    """make_problem's log restricted to random candidate sets (2 .. k per row, the logged
    action always one of them); returns (data, coef, scores, mask)."""
    data, coef, scores, rng = make_problem(seed=seed, n=n, k=k)
    mask = rng.random((n, k)) < 0.5
    mask[np.arange(n), data.actions] = True
    mask[np.arange(n), (data.actions + 1) % k] = True
    masked = LoggedBandit(
        data.contexts, data.actions, data.propensities, data.rewards, k, candidates=mask
    )
    return masked, coef, scores, mask


@pytest.mark.parametrize("obj", OBJECTIVES)
def test_non_candidates_get_probability_exactly_zero(obj):
    data, coef, scores, mask = masked_problem()
    state = obj.round_state(scores * 50.0, data, coef)  # also with large margins
    assert np.all(state.probs[~mask] == 0.0)
    np.testing.assert_allclose(state.probs.sum(axis=1), 1.0)
    # the risk ignores the non-candidates' scores altogether
    other = np.where(mask, scores, 1e3)
    assert obj.risk(other, data, coef) == obj.risk(scores, data, coef)


@pytest.mark.parametrize("obj", OBJECTIVES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_masked_gradient_matches_central_finite_differences(obj, seed):
    """The analytic gradient equals central differences of the risk in every candidate's
    score and is exactly 0 in the masked slots (where the risk is constant)."""
    data, coef, scores, mask = masked_problem(seed=seed)
    grad = obj.gradient(scores, data, coef)
    numeric = numeric_gradient(obj, scores, data, coef)
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-9)
    assert np.all(grad[~mask] == 0.0)
    assert np.abs(grad[mask]).max() > 0


def _masked_direction(rng, mask):
    return np.where(mask, rng.normal(size=mask.shape), 0.0)


@pytest.mark.parametrize("obj", OBJECTIVES)
def test_masked_step_minimises_quadratic_upper_bound(obj):
    """alpha is the minimiser of the bound for directions that are 0 outside the candidates
    (what the pair learner fits): zero derivative and lower than nearby alphas."""
    data, coef, scores, mask = masked_problem(seed=4, n=30)
    rng = np.random.default_rng(0)
    for _ in range(5):
        f = _masked_direction(rng, mask)
        assert_step_minimises_bound(obj, scores, f, data, coef, (1e-3, 1e-1, 1.0), 1e-8)


@pytest.mark.parametrize("obj", OBJECTIVES)
def test_masked_bound_upper_bounds_the_risk(obj):
    data, coef, scores, mask = masked_problem(seed=5, n=30)
    rng = np.random.default_rng(1)
    for _ in range(5):
        f = _masked_direction(rng, mask)
        for alpha in (-2.0, -0.5, 0.1, 0.7, 3.0):
            risk = obj.risk(scores + alpha * f, data, coef)
            assert risk <= upper_bound(obj, scores, f, data, coef, alpha) + 1e-12


@pytest.mark.parametrize("obj", OBJECTIVES)
def test_slot_logs_give_the_masked_objective(obj):
    """The slot view (each row's candidates in slots, padding masked) has the same risk,
    gradient and step as the (n, K) masked log: boosting in slots is boosting over
    candidates."""
    data, coef, scores, mask = masked_problem(seed=6, n=20, k=6)
    view = SlotView.from_candidates(mask, len(data), data.n_actions)
    slot = view.slot_logs(data)
    slot_scores = np.where(view.valid, np.take_along_axis(scores, view.items, 1), MASKED_SCORE)
    assert obj.risk(slot_scores, slot, coef) == pytest.approx(obj.risk(scores, data, coef))
    grad = view.to_actions(obj.gradient(slot_scores, slot, coef), 0.0)
    np.testing.assert_allclose(grad, obj.gradient(scores, data, coef), atol=1e-15)
    f = _masked_direction(np.random.default_rng(2), mask)
    slot_f = np.where(view.valid, np.take_along_axis(f, view.items, 1), 0.0)
    assert obj.step(slot_scores, slot_f, slot, coef) == pytest.approx(
        obj.step(scores, f, data, coef), rel=1e-12
    )


def _gamma(rng, mask):
    """Per-action (DR-like) coefficients on the candidates, 0 elsewhere."""
    return np.where(mask, rng.normal(size=mask.shape), 0.0)


@pytest.mark.parametrize("obj", OBJECTIVES)
@pytest.mark.parametrize("seed", [0, 1])
def test_masked_per_action_gradient_matches_finite_differences(obj, seed):
    """Per-action coefficients are centred over each row's candidates (non-candidates stay
    0), so the risk stays finite and its gradient matches central differences, 0 outside."""
    data, _, scores, mask = masked_problem(seed=seed)
    gamma = _gamma(np.random.default_rng(seed), mask)
    assert np.isfinite(obj.risk(scores, data, gamma))
    grad = obj.gradient(scores, data, gamma)
    numeric = numeric_gradient(obj, scores, data, gamma)
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-9)
    assert np.all(grad[~mask] == 0.0)


@pytest.mark.parametrize("obj", OBJECTIVES)
def test_masked_per_action_step_minimises_the_bound(obj):
    data, _, scores, mask = masked_problem(seed=7, n=30)
    rng = np.random.default_rng(3)
    gamma = _gamma(rng, mask)
    for _ in range(5):
        f = _masked_direction(rng, mask)
        assert_step_minimises_bound(obj, scores, f, data, gamma, (1e-3, 1e-1, 1.0), 1e-8)
        for alpha in (-1.0, 0.3, 2.0):
            risk = obj.risk(scores + alpha * f, data, gamma)
            assert risk <= upper_bound(obj, scores, f, data, gamma, alpha) + 1e-12
