"""Shared fixtures-as-functions for the objective property tests."""

from __future__ import annotations

import numpy as np

from opboost.api.data.logged import LoggedBandit


def make_problem(seed: int = 0, n: int = 40, k: int = 4):
    """Random log with mixed-sign rewards (some zero), random scores and IPS coefficients."""
    rng = np.random.default_rng(seed)
    rewards = rng.choice([-1.0, -0.3, 0.0, 0.5, 1.0], size=n)
    data = LoggedBandit(
        rng.normal(size=(n, 2)), rng.integers(0, k, n), rng.uniform(0.1, 1.0, n), rewards, k
    )
    return data, data.rewards / data.propensities, rng.normal(size=(n, k)), rng


def numeric_gradient(obj, scores, data, coef, eps: float = 1e-6) -> np.ndarray:
    """Central finite differences of ``obj.risk`` in every score, shape (n, K)."""
    numeric = np.zeros_like(scores)
    for idx in np.ndindex(scores.shape):
        up, down = scores.copy(), scores.copy()
        up[idx] += eps
        down[idx] -= eps
        numeric[idx] = (obj.risk(up, data, coef) - obj.risk(down, data, coef)) / (2 * eps)
    return numeric


def upper_bound(obj, scores, f, data, coef, alpha):
    """R(F) + alpha <grad, f> + alpha^2 / (2n) sum |c| sigma ||f||^2 (the smoothness bound)."""
    n = len(data)
    state = obj.round_state(scores, data, coef)
    linear = float(np.sum(obj.gradient_at(state) * f))
    return (
        obj.risk_at(state) + alpha * linear + alpha**2 / (2 * n) * obj.step_denominator_at(state, f)
    )


def assert_step_minimises_bound(obj, scores, f, data, coef, deltas, slope_tol):
    """obj.step's alpha is the bound's minimiser: lower than alpha +- each of ``deltas`` and
    a central-difference slope below ``slope_tol``."""
    alpha = obj.step(scores, f, data, coef)
    at = upper_bound(obj, scores, f, data, coef, alpha)
    for delta in deltas:
        assert at < upper_bound(obj, scores, f, data, coef, alpha + delta)
        assert at < upper_bound(obj, scores, f, data, coef, alpha - delta)
    h = 1e-5
    slope = (
        upper_bound(obj, scores, f, data, coef, alpha + h)
        - upper_bound(obj, scores, f, data, coef, alpha - h)
    ) / (2 * h)
    assert abs(slope) < slope_tol
