"""Regularised and variance-aware objectives: the L2-penalised closed-form step minimises the
penalised bound, SNIPS and POEM gradients match central finite differences, the SNIPS gradient
is BOPL's under the data-chosen reward translation, and the line-searched steps never increase
the risk."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from objective_problems import make_problem, numeric_gradient

from opboost.algorithms.estimators.snips import SNIPS
from opboost.algorithms.objectives import BOPL, BOPLS, SNIPSObjective, VariancePenalised, softmax
from opboost.api.exceptions import InvalidParameterError


def penalised_bound(obj, scores, f, data, coef, alpha, l2):
    """R(F) + alpha <grad, f> + alpha^2/(2n) sum |c| sigma ||f||^2 + l2 alpha^2."""
    state = obj.round_state(scores, data, coef)
    linear = float(np.sum(obj.gradient_at(state) * f))
    quad = obj.step_denominator_at(state, f) / (2 * len(data))
    return obj.risk_at(state) + alpha * linear + alpha**2 * quad + l2 * alpha**2


@pytest.mark.parametrize("obj", [BOPL(), BOPLS()], ids=["bopl", "bopl_s"])
@pytest.mark.parametrize("l2", [0.0, 0.01, 0.5])
def test_l2_step_minimises_penalised_bound(obj, l2):
    """alpha = N / (D + 2 n l2) has zero slope and beats nearby alphas on the penalised bound."""
    data, coef, scores, rng = make_problem(seed=4)
    state = obj.round_state(scores, data, coef)
    for _ in range(4):
        f = rng.normal(size=scores.shape)
        alpha = obj.step_at(state, f, l2=l2)
        expected = obj.step_numerator_at(state, f) / (
            obj.step_denominator_at(state, f) + 2 * len(data) * l2
        )
        assert alpha == pytest.approx(expected, rel=1e-12)
        at = penalised_bound(obj, scores, f, data, coef, alpha, l2)
        for delta in (1e-3, 1e-1, 1.0):
            assert at < penalised_bound(obj, scores, f, data, coef, alpha + delta, l2)
            assert at < penalised_bound(obj, scores, f, data, coef, alpha - delta, l2)
        h = 1e-5
        up = penalised_bound(obj, scores, f, data, coef, alpha + h, l2)
        down = penalised_bound(obj, scores, f, data, coef, alpha - h, l2)
        assert abs((up - down) / (2 * h)) < 1e-8


def test_l2_shrinks_step_towards_zero():
    """A larger penalty gives a strictly smaller |alpha| of the same sign (appendix E)."""
    data, coef, scores, rng = make_problem(seed=5)
    state = BOPL().round_state(scores, data, coef)
    f = rng.normal(size=scores.shape)
    alphas = [BOPL().step_at(state, f, l2=l2) for l2 in (0.0, 0.1, 1.0, 10.0)]
    assert all(np.sign(a) == np.sign(alphas[0]) for a in alphas)
    assert all(abs(a) > abs(b) for a, b in itertools.pairwise(alphas))


VARIANCE_OBJECTIVES = [
    pytest.param(SNIPSObjective(), id="snips"),
    pytest.param(SNIPSObjective(max_weight=3.0), id="snips-clipped"),
    pytest.param(VariancePenalised(variance_penalty=0.5), id="poem"),
]


@pytest.mark.parametrize("obj", VARIANCE_OBJECTIVES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gradient_matches_central_finite_differences(obj, seed):
    """The analytic gradient equals central differences of the exact risk in every score."""
    data, coef, scores, _ = make_problem(seed=seed, n=12, k=3)
    grad = obj.gradient(scores, data, coef)
    numeric = numeric_gradient(obj, scores, data, coef)
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-9)


def test_snips_risk_is_minus_snips_estimate():
    """R(F) = -SNIPS value of softmax(F) (the evaluation estimator's formula)."""
    data, coef, scores, _ = make_problem(seed=3)
    expected = -SNIPS().estimate_value(data, softmax(scores))
    assert SNIPSObjective().risk(scores, data, coef) == pytest.approx(expected, rel=1e-12)


def test_snips_gradient_is_bopl_gradient_with_data_chosen_translation():
    """BanditNet: grad SNIPS = grad BOPL with rewards r - V, scaled by 1/S (V, S at F)."""
    data, coef, scores, _ = make_problem(seed=6)
    probs = softmax(scores)
    pi = probs[np.arange(len(data)), data.actions]
    value = SNIPS().estimate_value(data, probs)
    normaliser = float(np.mean(pi / data.propensities))
    translated = (data.rewards - value) / data.propensities
    expected = BOPL().gradient(scores, data, translated) / normaliser
    got = SNIPSObjective().gradient(scores, data, coef)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-14)


def test_snips_risk_is_invariant_to_reward_translation():
    """Shifting every reward by delta shifts the risk by -delta and leaves the gradient."""
    data, _, scores, _ = make_problem(seed=7)
    obj = SNIPSObjective()
    shifted = data.with_rewards(data.rewards - 0.7)
    c0, c1 = data.rewards / data.propensities, shifted.rewards / shifted.propensities
    assert obj.risk(scores, shifted, c1) == pytest.approx(obj.risk(scores, data, c0) + 0.7)
    np.testing.assert_allclose(
        obj.gradient(scores, shifted, c1), obj.gradient(scores, data, c0), atol=1e-12
    )


def test_poem_without_penalty_is_bopl():
    """variance_penalty = 0 gives BOPL's risk and gradient."""
    data, coef, scores, _ = make_problem(seed=8)
    poem = VariancePenalised(variance_penalty=0.0)
    assert poem.risk(scores, data, coef) == pytest.approx(BOPL().risk(scores, data, coef))
    np.testing.assert_allclose(
        poem.gradient(scores, data, coef), BOPL().gradient(scores, data, coef), rtol=1e-12
    )


def test_poem_risk_formula():
    """R = -mean(u) + lambda sqrt(Var(u)/n), u = c pi, Var with n - 1 degrees of freedom."""
    data, coef, scores, _ = make_problem(seed=9)
    u = coef * softmax(scores)[np.arange(len(data)), data.actions]
    expected = -u.mean() + 0.3 * np.sqrt(u.var(ddof=1) / len(u))
    got = VariancePenalised(variance_penalty=0.3).risk(scores, data, coef)
    assert got == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("obj", VARIANCE_OBJECTIVES)
@pytest.mark.parametrize("l2", [0.0, 0.05])
def test_line_search_step_never_increases_the_risk(obj, l2):
    """R(F + alpha f) + l2 alpha^2 <= R(F) for the returned alpha, for random f."""
    data, coef, scores, rng = make_problem(seed=10)
    state = obj.round_state(scores, data, coef)
    moved = 0
    for _ in range(10):
        f = rng.normal(size=scores.shape)
        alpha = obj.step_at(state, f, l2=l2)
        after = obj.risk(scores + alpha * f, data, coef) + l2 * alpha**2
        assert after <= obj.risk_at(state) + 1e-15
        moved += alpha != 0.0
    assert moved >= 5


@pytest.mark.parametrize("obj", VARIANCE_OBJECTIVES)
def test_descent_direction_gets_a_positive_step(obj):
    """Along f = -gradient the step is positive and the risk strictly decreases."""
    data, coef, scores, _ = make_problem(seed=11)
    state = obj.round_state(scores, data, coef)
    f = -obj.gradient_at(state) * len(data)
    alpha = obj.step_at(state, f)
    assert alpha > 0
    assert obj.risk(scores + alpha * f, data, coef) < obj.risk_at(state)


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (
            SNIPSObjective(max_weight=0.0),
            r"The 'max_weight' parameter of SNIPSObjective must be a float > 0\.0\. "
            r"Got 0\.0 instead; use inf to disable clipping\.",
        ),
        (
            VariancePenalised(variance_penalty=-1.0),
            r"The 'variance_penalty' parameter of VariancePenalised must be a float "
            r">= 0\.0\. Got -1\.0 instead; use 0\.0 for the plain IPS risk",
        ),
    ],
)
def test_invalid_parameters_name_value_and_fix(obj, message):
    data, coef, scores, _ = make_problem()
    with pytest.raises(InvalidParameterError, match=message):
        obj.risk(scores, data, coef)
