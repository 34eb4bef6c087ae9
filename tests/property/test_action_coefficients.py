"""Per-action coefficients Gamma (n, K) (doubly robust training): the value estimate
(1/n) sum_i <pi_i, Gamma_i>, its gradient against finite differences, the smoothness bound and
its closed-form step against a line search, the reductions, consistency with the per-row
family for Gamma_i = c_i e_{a_i}, and the unbiasedness of the DR training objective."""

from __future__ import annotations

import numpy as np
import pytest
from objective_problems import make_problem
from scipy import optimize

from opboost.algorithms.estimators.direct import DoublyRobust, dr_coefficients
from opboost.algorithms.objectives import BOPL, BOPLS, SNIPSObjective, softmax
from opboost.api.data.logged import LoggedBandit
from opboost.api.exceptions import InvalidParameterError
from opboost.api.objective import ActionState, centre_rows

OBJECTIVES = [pytest.param(BOPL(), id="bopl"), pytest.param(BOPLS(), id="bopl_s")]


def gamma_problem(seed: int = 0, n: int = 15, k: int = 4):
    """A random log with a DR-like Gamma: a reward model plus an IPS correction."""
    data, _, scores, rng = make_problem(seed=seed, n=n, k=k)
    q = rng.uniform(-0.5, 1.0, size=(n, k))
    return data, dr_coefficients(data, q), scores, rng


def risk_bound(obj, scores, f, data, gamma, alpha):
    """R(F) - (alpha/n) sum u^T f + (alpha^2 / 2n) sum kappa ||f||^2."""
    state = obj.round_state(scores, data, gamma)
    n = len(data)
    return (
        obj.risk_at(state)
        - alpha / n * obj.step_numerator_at(state, f)
        + alpha**2 / (2 * n) * obj.step_denominator_at(state, f)
    )


def test_bopl_risk_is_minus_the_value_estimate():
    """BOPL's per-action risk is -(1/n) sum_i <pi_i, Gamma_i> (row centring shifts it by a
    constant that does not depend on the policy)."""
    data, gamma, scores, rng = gamma_problem()
    value = np.mean(np.einsum("ij,ij->i", softmax(scores), gamma))
    other = rng.normal(size=scores.shape)
    value_other = np.mean(np.einsum("ij,ij->i", softmax(other), gamma))
    r, r_other = BOPL().risk(scores, data, gamma), BOPL().risk(other, data, gamma)
    assert r - r_other == pytest.approx(-(value - value_other), rel=1e-12)


def test_bopl_s_upper_bounds_bopl_on_per_action_coefficients():
    """ln z + 1 <= z entry by entry: the surrogate is an upper bound of the BOPL risk."""
    for seed in range(5):
        data, gamma, scores, _ = gamma_problem(seed=seed)
        assert BOPLS().risk(scores, data, gamma) >= BOPL().risk(scores, data, gamma)


@pytest.mark.parametrize("obj", OBJECTIVES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gradient_matches_central_finite_differences(obj, seed):
    """-(1/n) u_i equals central differences of the risk in every score."""
    data, gamma, scores, _ = gamma_problem(seed=seed, n=10, k=3)
    numeric = np.zeros_like(scores)
    for idx in np.ndindex(scores.shape):
        up, down = scores.copy(), scores.copy()
        up[idx] += 1e-6
        down[idx] -= 1e-6
        numeric[idx] = (obj.risk(up, data, gamma) - obj.risk(down, data, gamma)) / 2e-6
    np.testing.assert_allclose(obj.gradient(scores, data, gamma), numeric, rtol=1e-6, atol=1e-9)
    state = obj.round_state(scores, data, gamma)
    assert obj.gradient_norm_at(state) == pytest.approx(np.linalg.norm(numeric), rel=1e-6)


@pytest.mark.parametrize("obj", OBJECTIVES)
def test_quadratic_bound_upper_bounds_the_risk(obj):
    """R(F + alpha f) <= the bound for random F, f, Gamma and a grid of alphas (kappa is a
    valid curvature)."""
    data, gamma, _, rng = gamma_problem(seed=3)
    for _ in range(40):
        scores, f = 3 * rng.normal(size=gamma.shape), rng.normal(size=gamma.shape)
        for alpha in np.linspace(-4, 4, 17):
            risk = obj.risk(scores + alpha * f, data, gamma)
            assert risk <= risk_bound(obj, scores, f, data, gamma, alpha) + 1e-12


@pytest.mark.parametrize("obj", OBJECTIVES)
def test_closed_form_step_equals_line_search_on_the_bound(obj):
    """alpha = sum u^T f / sum kappa ||f||^2 is the bound's minimiser found by a line search,
    and the risk at it never exceeds the risk at alpha = 0."""
    data, gamma, scores, rng = gamma_problem(seed=4)
    for _ in range(5):
        f = rng.normal(size=scores.shape)
        alpha = obj.step(scores, f, data, gamma)
        found = optimize.minimize_scalar(
            lambda a, f=f: risk_bound(obj, scores, f, data, gamma, a),
            bracket=(-10.0, 10.0),
            tol=1e-12,
        )
        assert alpha == pytest.approx(found.x, rel=1e-4, abs=1e-7)
        assert obj.risk(scores + alpha * f, data, gamma) <= obj.risk(scores, data, gamma)


@pytest.mark.parametrize("obj", OBJECTIVES)
def test_regression_loss_is_the_bound_at_unit_step(obj):
    """sum kappa ||u/kappa - f||^2 = const - 2 sum u^T f + sum kappa ||f||^2 for every f, so
    least squares minimises the bound at alpha = 1 over the learner's class."""
    data, gamma, scores, rng = gamma_problem(seed=5)
    problem = obj.base_problem(scores, data, gamma, "regression")
    state = obj.round_state(scores, data, gamma)
    const = np.sum(problem.weights * problem.targets**2)
    for _ in range(5):
        f = rng.normal(size=scores.shape)
        loss = np.sum(problem.weights * (problem.targets - f) ** 2)
        expected = const - 2 * obj.step_numerator_at(state, f) + obj.step_denominator_at(state, f)
        assert loss == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("obj", OBJECTIVES)
def test_classification_error_is_linear_in_the_numerator(obj):
    """For +-1 predictors the weighted 0-1 error is (sum |u| - sum u^T f) / 2."""
    data, gamma, scores, rng = gamma_problem(seed=6)
    problem = obj.base_problem(scores, data, gamma, "classification")
    state = obj.round_state(scores, data, gamma)
    for _ in range(5):
        f = np.where(rng.random(scores.shape) < 0.5, -1.0, 1.0)
        error = np.sum(problem.weights * (problem.targets != f))
        expected = (problem.weights.sum() - obj.step_numerator_at(state, f)) / 2
        assert error == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("obj", OBJECTIVES)
def test_ips_matrix_reduces_to_per_row_coefficients(obj):
    """Gamma_i = c_i e_{a_i} (K >= 3) gives the per-row objective: same risk, gradient,
    curvature, step and weighted targets."""
    data, coef, scores, rng = make_problem(seed=7, n=20, k=4)
    gamma = np.zeros(scores.shape)
    gamma[np.arange(len(data)), data.actions] = coef
    row, matrix = obj.round_state(scores, data, coef), obj.round_state(scores, data, gamma)
    assert isinstance(matrix, ActionState) and not isinstance(row, ActionState)
    assert obj.risk_at(matrix) == pytest.approx(obj.risk_at(row), rel=1e-12)
    np.testing.assert_allclose(obj.gradient_at(matrix), obj.gradient_at(row), atol=1e-15)
    np.testing.assert_allclose(obj.curvature_at(matrix), obj.curvature_at(row), atol=1e-15)
    f = rng.normal(size=scores.shape)
    assert obj.step_at(matrix, f) == pytest.approx(obj.step_at(row, f), rel=1e-12)
    p_row, p_matrix = obj.problem_at(row, "regression"), obj.problem_at(matrix, "regression")
    np.testing.assert_allclose(p_matrix.weights * p_matrix.targets, p_row.weights * p_row.targets)


def test_objectives_without_per_action_support_name_the_fix():
    """SNIPS-objective boosting takes per-row coefficients only, and says what to use."""
    data, gamma, scores, _ = gamma_problem()
    with pytest.raises(InvalidParameterError, match=r"SNIPSObjective takes one training coef"):
        SNIPSObjective().risk(scores, data, gamma)


def test_coefficient_matrix_shape_is_checked():
    """A matrix of the wrong shape names both accepted shapes."""
    data, gamma, scores, _ = gamma_problem(n=10, k=3)
    with pytest.raises(InvalidParameterError, match=r"\(10,\).* or \(10, 3\).*Got \(10, 2\)"):
        BOPL().risk(scores, data, gamma[:, :2])


# --- unbiasedness on a simulator with known mean rewards ----------------------------------


def _simulator(seed: int, n: int = 400, k: int = 3):
    """Contexts, known mean rewards mu (n, K), a softmax logger (n, K) and a target policy."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2))
    mu = 1 / (1 + np.exp(-x @ rng.normal(size=(2, k))))
    logger = softmax(x @ rng.normal(size=(2, k)))
    target = softmax(2 * x @ rng.normal(size=(2, k)))
    return x, mu, logger, target


def _log(rng, x, mu, logger) -> LoggedBandit:
    """One log: actions from the logger, Bernoulli rewards of mean mu."""
    u = rng.random(len(x))[:, None]
    actions = (u > np.cumsum(logger, axis=1)).sum(axis=1).clip(max=mu.shape[1] - 1)
    rows = np.arange(len(x))
    rewards = (rng.random(len(x)) < mu[rows, actions]).astype(float)
    return LoggedBandit(x, actions, logger[rows, actions], rewards, mu.shape[1])


def test_dr_training_objective_is_unbiased_for_any_fixed_reward_model():
    """E[(1/n) sum_i <pi_i, Gamma_i>] = (1/n) sum_i <pi_i, mu_i> for a deliberately wrong q."""
    x, mu, logger, target = _simulator(0)
    true_value = np.mean(np.einsum("ij,ij->i", target, mu))
    q = np.full(mu.shape, 0.9)  # far from mu: the IPS correction must remove the bias
    rng = np.random.default_rng(1)
    values = []
    for _ in range(2000):
        gamma = dr_coefficients(_log(rng, x, mu, logger), q)
        values.append(np.mean(np.einsum("ij,ij->i", target, gamma)))
    se = np.std(values, ddof=1) / np.sqrt(len(values))
    assert abs(np.mean(values) - true_value) < 4 * se
    assert abs(q.mean() - true_value) > 40 * se  # the direct method alone would be far off


class _LinearModel:
    """A tiny least-squares reward model (fit/predict), so the test stays fast."""

    def fit(self, X, y):
        design = np.column_stack([np.ones(len(X)), X])
        self.coef_ = np.linalg.lstsq(design, y, rcond=None)[0]
        return self

    def predict(self, X):
        return np.column_stack([np.ones(len(X)), X]) @ self.coef_


def test_cross_fitted_dr_coefficients_are_unbiased():
    """The DR estimator's own cross-fitted Gamma (q never trained on its row) averages to the
    true value of the target policy over simulated logs."""
    x, mu, logger, target = _simulator(2, n=300)
    true_value = np.mean(np.einsum("ij,ij->i", target, mu))
    rng = np.random.default_rng(3)
    values = []
    for rep in range(150):
        est = DoublyRobust(reward_model=_LinearModel(), n_folds=2, random_state=rep)
        gamma = est.coefficients(_log(rng, x, mu, logger))
        values.append(np.mean(np.einsum("ij,ij->i", target, gamma)))
    se = np.std(values, ddof=1) / np.sqrt(len(values))
    assert abs(np.mean(values) - true_value) < 4 * se


@pytest.mark.parametrize("obj", OBJECTIVES)
def test_precentred_coefficients_give_the_same_round(obj):
    """A fit centres Gamma once and says so (centred=True); the round equals centring every
    round (to rounding: numpy's median may sum in another order), and centring is idempotent."""
    data, gamma, scores, _ = gamma_problem(seed=8)
    fresh = obj.round_state(scores, data, gamma)
    once = obj.round_state(scores, data, centre_rows(gamma), centred=True)
    np.testing.assert_allclose(once.direction, fresh.direction, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(once.kappa, fresh.kappa, rtol=1e-12)
    assert obj.risk_at(once) == pytest.approx(obj.risk_at(fresh), rel=1e-12)
    np.testing.assert_allclose(centre_rows(centre_rows(gamma)), centre_rows(gamma), atol=1e-15)
