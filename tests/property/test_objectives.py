"""Objective identities: risk formulas, gradient vs finite differences, the step minimising the
quadratic upper bound, and both reductions ranking predictors as the base objective does."""

from __future__ import annotations

import numpy as np
import pytest
from objective_problems import (
    assert_step_minimises_bound,
    make_problem,
    numeric_gradient,
    upper_bound,
)

from opboost.algorithms.objectives import BOPL, BOPLS, SNIPSObjective, VariancePenalised, softmax
from opboost.api.exceptions import InvalidParameterError

OBJECTIVES = [pytest.param(BOPL(), id="bopl"), pytest.param(BOPLS(), id="bopl_s")]


def test_bopl_risk_is_negative_ips_of_softmax():
    """BOPL's risk is -(1/n) sum c_i pi(a_i|x_i)."""
    data, coef, scores, _ = make_problem()
    pi = softmax(scores)[np.arange(len(data)), data.actions]
    assert BOPL().risk(scores, data, coef) == pytest.approx(-np.mean(coef * pi), rel=1e-12)


def test_bopl_s_risk_is_piecewise_surrogate():
    """BOPL-S uses -c(ln pi + 1) where c >= 0 and -c pi where c < 0."""
    data, coef, scores, _ = make_problem()
    pi = softmax(scores)[np.arange(len(data)), data.actions]
    expected = np.where(coef >= 0, -coef * (np.log(pi) + 1), -coef * pi).mean()
    assert BOPLS().risk(scores, data, coef) == pytest.approx(expected, rel=1e-12)


def test_bopl_s_upper_bounds_bopl_risk():
    """The surrogate upper-bounds the IPS risk (-c(ln z + 1) >= -c z for c >= 0)."""
    data, coef, scores, _ = make_problem(seed=3)
    assert BOPLS().risk(scores, data, coef) >= BOPL().risk(scores, data, coef)


@pytest.mark.parametrize("obj", OBJECTIVES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gradient_matches_central_finite_differences(obj, seed):
    """The analytic gradient equals central differences of the risk in every score."""
    data, coef, scores, _ = make_problem(seed=seed, n=12, k=3)
    grad = obj.gradient(scores, data, coef)
    numeric = numeric_gradient(obj, scores, data, coef)
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-9)


class ScaledGradient(BOPLS):
    """A third-party objective whose gradient is not of the family's form."""

    def gradient_at(self, state):
        return 3.0 * super().gradient_at(state)


@pytest.mark.parametrize(
    "obj",
    [*OBJECTIVES, SNIPSObjective(), VariancePenalised(variance_penalty=0.5), ScaledGradient()],
    ids=["bopl", "bopl_s", "snips", "variance", "overridden_gradient"],
)
def test_gradient_norm_is_the_norm_of_the_gradient(obj):
    """The booster's stopping test reads gradient_norm_at; it equals ||gradient_at||."""
    data, coef, scores, _ = make_problem(seed=5)
    state = obj.round_state(scores, data, coef)
    expected = np.linalg.norm(obj.gradient_at(state))
    assert obj.gradient_norm_at(state) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("obj", OBJECTIVES)
def test_step_minimises_quadratic_upper_bound(obj):
    """alpha is the minimiser of the bound: zero derivative and lower than nearby alphas."""
    data, coef, scores, rng = make_problem(seed=4)
    for _ in range(5):
        f = rng.normal(size=scores.shape)
        assert_step_minimises_bound(obj, scores, f, data, coef, (1e-3, 1e-1, 1.0), 1e-8)


@pytest.mark.parametrize("obj", OBJECTIVES)
def test_quadratic_bound_upper_bounds_the_risk(obj):
    """R(F + alpha f) <= bound(alpha) for a grid of alphas and random f (smoothness)."""
    data, coef, scores, rng = make_problem(seed=5)
    for _ in range(5):
        f = rng.normal(size=scores.shape)
        for alpha in np.linspace(-3, 3, 13):
            risk = obj.risk(scores + alpha * f, data, coef)
            assert risk <= upper_bound(obj, scores, f, data, coef, alpha) + 1e-12


def test_bopl_step_equals_paper_formula():
    """BOPL alpha = 2 sum c pi g^T f / sum |c| ||f||^2 (Algorithm 3, line 4)."""
    data, coef, scores, rng = make_problem(seed=6)
    f = rng.normal(size=scores.shape)
    probs = softmax(scores)
    rows = np.arange(len(data))
    g = np.eye(data.n_actions)[data.actions] - probs
    expected = (
        2
        * np.sum(coef * probs[rows, data.actions] * np.sum(g * f, axis=1))
        / np.sum(np.abs(coef) * np.sum(f * f, axis=1))
    )
    assert BOPL().step(scores, f, data, coef) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("obj", OBJECTIVES)
def test_step_is_zero_for_vanishing_f(obj):
    """A zero predictor gets alpha 0 rather than a division by zero."""
    data, coef, scores, _ = make_problem()
    assert obj.step(scores, np.zeros_like(scores), data, coef) == 0.0


def base_criterion(obj, scores, f, data, coef):
    """The base-learning objective: |numerator|^2 / denominator (eq. 16 and its BOPL-S form)."""
    state = obj.round_state(scores, data, coef)
    return obj.step_numerator_at(state, f) ** 2 / obj.step_denominator_at(state, f)


@pytest.mark.parametrize("obj", OBJECTIVES)
def test_regression_reduction_ranks_like_base_objective(obj):
    """Weighted least squares at each candidate's best scale ranks as num^2/den does."""
    data, coef, scores, rng = make_problem(seed=7)
    problem = obj.base_problem(scores, data, coef, "regression")
    candidates = [rng.normal(size=scores.shape) for _ in range(30)]
    losses, criteria = [], []
    for f in candidates:
        c = np.sum(problem.weights * problem.targets * f) / np.sum(problem.weights * f * f)
        losses.append(np.sum(problem.weights * (problem.targets - c * f) ** 2))
        criteria.append(base_criterion(obj, scores, f, data, coef))
    assert np.array_equal(np.argsort(losses), np.argsort(-np.asarray(criteria)))


@pytest.mark.parametrize("obj", OBJECTIVES)
def test_regression_loss_is_lagrangian_of_line_3(obj):
    """sum w (y - f)^2 = const - 2 numerator + denominator for every f."""
    data, coef, scores, rng = make_problem(seed=8)
    problem = obj.base_problem(scores, data, coef, "regression")
    state = obj.round_state(scores, data, coef)
    const = np.sum(problem.weights * problem.targets**2)
    for _ in range(5):
        f = rng.normal(size=scores.shape)
        loss = np.sum(problem.weights * (problem.targets - f) ** 2)
        lagrangian = const - 2 * obj.step_numerator_at(state, f) + obj.step_denominator_at(state, f)
        assert loss == pytest.approx(lagrangian, rel=1e-10)


@pytest.mark.parametrize("obj", OBJECTIVES)
def test_classification_reduction_ranks_like_base_objective(obj):
    """For +-1 predictors the weighted 0-1 error is (W - numerator)/2: same ranking as the
    base objective, and the least error maximises num^2/den over a symmetric class."""
    data, coef, scores, rng = make_problem(seed=9)
    problem = obj.base_problem(scores, data, coef, "classification")
    assert set(np.unique(problem.targets)) <= {-1.0, 1.0}
    state = obj.round_state(scores, data, coef)
    base = [np.where(rng.random(scores.shape) < 0.5, -1.0, 1.0) for _ in range(20)]
    candidates = base + [-f for f in base]  # a symmetric class
    errors = np.array([np.sum(problem.weights * (problem.targets != f)) for f in candidates])
    numerators = np.array([obj.step_numerator_at(state, f) for f in candidates])
    np.testing.assert_allclose(errors, (problem.weights.sum() - numerators) / 2, rtol=1e-10)
    assert np.array_equal(np.argsort(errors, kind="stable"), np.argsort(-numerators, kind="stable"))
    criteria = [base_criterion(obj, scores, f, data, coef) for f in candidates]
    assert criteria[int(np.argmin(errors))] == pytest.approx(max(criteria))


@pytest.mark.parametrize("obj", OBJECTIVES)
def test_base_problem_rejects_unknown_reduction(obj):
    """An unknown reduction names the parameter and the valid choices."""
    data, coef, scores, _ = make_problem()
    with pytest.raises(InvalidParameterError, match=r"'reduction' parameter .* 'ranking'"):
        obj.base_problem(scores, data, coef, "ranking")


def test_scores_shape_is_checked():
    """Scores of the wrong shape raise an error stating the expected shape."""
    data, coef, _, _ = make_problem(n=10, k=3)
    with pytest.raises(InvalidParameterError, match=r"scores must have shape \(10, 3\)"):
        BOPL().risk(np.zeros((10, 4)), data, coef)


def test_bopl_s_risk_is_finite_for_extreme_scores():
    """The log-softmax is computed from scores, so huge margins give a finite risk."""
    data, coef, scores, _ = make_problem()
    assert np.isfinite(BOPLS().risk(scores * 1e4, data, coef))
