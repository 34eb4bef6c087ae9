"""Shared fixtures-as-functions for the objective property tests."""

from __future__ import annotations

import numpy as np

from opboost.api.data import LoggedBandit


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
