"""BOPL (London et al. 2023, Algorithm 1 / appendix B.1): boost the IPS risk directly.

Risk R(F) = -(1/n) sum_i c_i pi(a_i | x_i); xi_i = pi(a_i | x_i) and sigma_i = 1/2 for every
example (the loss is |c_i|/2-smooth), so alpha = 2 sum c_i pi_i g_i^T f_i / sum |c_i| ||f_i||^2.

Per-action coefficients Gamma (n, K) (doubly robust training): R(F) = -(1/n) sum_i
<pi_i, Gamma_i>, direction u_i = pi_i * (Gamma_i - <pi_i, Gamma_i>) (elementwise) and curvature
kappa_i = (1/2) sum_a |Gamma_i(a)| (each pi(a|x) is 1/2-smooth in F); with Gamma_i = c_i e_{a_i}
these are c_i pi_i g_i and |c_i| / 2.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from opboost.api.numerics.arrays import dot
from opboost.api.objective import ActionState, Objective, RoundState

__all__ = ["BOPL"]


class BOPL(Objective):
    """Boosted off-policy learning on the (non-convex) empirical risk of the softmax policy."""

    name: ClassVar[str] = "bopl"
    supports_action_coefficients: ClassVar[bool] = True
    inert_zero_rows: ClassVar[bool] = True
    row_local: ClassVar[bool] = True

    def __init__(self) -> None:
        pass

    def xi_sigma(self, coef: np.ndarray, pi_logged: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return pi_logged, np.full_like(pi_logged, 0.5)

    def action_terms(
        self, gamma: np.ndarray, probs: np.ndarray, log_probs: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        value = np.einsum("ij,ij->i", probs, gamma)
        return probs * (gamma - value[:, None]), 0.5 * np.abs(gamma).sum(axis=1)

    def risk_at(self, state: RoundState) -> float:
        if isinstance(state, ActionState):
            return -float(np.einsum("ij,ij->", state.probs, state.coef)) / state.n
        return -dot(state.coef, state.pi_logged) / state.n
