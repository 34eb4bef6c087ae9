"""BOPL-S (London et al. 2023, Algorithm 2 / appendix B.2): boost a surrogate risk.

For c_i >= 0 (non-negative reward) the loss is the convex upper bound -c_i (ln pi_i + 1)
(xi_i = 1, sigma_i = 1); for c_i < 0 it is BOPL's -c_i pi_i (xi_i = pi_i, sigma_i = 1/2).
Without reward translation (all rewards >= 0) this is BOPL-CS, whose objective is convex.
The sign of c_i is the sign of r_i for every estimator whose coefficients are r_i times a
positive weight (IPS, truncated IPS).

Per-action coefficients Gamma (n, K) (doubly robust training, row-centred): the same surrogate
entry by entry. With P = max(Gamma, 0) and N = min(Gamma, 0),

    R(F) = -(1/n) sum_i sum_a [P_i(a) (ln pi(a|x_i) + 1) + N_i(a) pi(a|x_i)],

an upper bound of -V(pi) (ln z + 1 <= z). Direction u_i = P_i - (sum_a P_i(a)) pi_i
+ pi_i * (N_i - <pi_i, N_i>); curvature kappa_i = sum_a P_i(a) + (1/2) sum_a |N_i(a)| (the
log-softmax is 1-smooth, each pi(a|x) 1/2-smooth). With Gamma_i = c_i e_{a_i} these are
BOPL-S's c_i xi_i g_i and |c_i| sigma_i.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from opboost.api.objective import ActionState, Objective, RoundState

__all__ = ["BOPLS"]


class BOPLS(Objective):
    """Boosted off-policy learning on the log-softmax surrogate where rewards are >= 0."""

    name: ClassVar[str] = "bopl_s"
    supports_action_coefficients: ClassVar[bool] = True
    inert_zero_rows: ClassVar[bool] = True
    row_local: ClassVar[bool] = True

    def __init__(self) -> None:
        pass

    def xi_sigma(self, coef: np.ndarray, pi_logged: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        negative = coef < 0
        return np.where(negative, pi_logged, 1.0), np.where(negative, 0.5, 1.0)

    def action_terms(
        self, gamma: np.ndarray, probs: np.ndarray, log_probs: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        positive, negative = np.maximum(gamma, 0.0), np.minimum(gamma, 0.0)
        mass = positive.sum(axis=1)
        negative_value = np.einsum("ij,ij->i", probs, negative)
        direction = positive - mass[:, None] * probs
        direction += probs * (negative - negative_value[:, None])
        return direction, mass + 0.5 * np.abs(negative).sum(axis=1)

    def risk_at(self, state: RoundState) -> float:
        if isinstance(state, ActionState):
            gamma = state.coef
            log_probs = state.scores - state.log_norm[:, None]
            positive, negative = np.maximum(gamma, 0.0), np.minimum(gamma, 0.0)
            total = np.einsum("ij,ij->", positive, log_probs + 1.0)
            total += np.einsum("ij,ij->", negative, state.probs)
            return -float(total) / state.n
        coef = state.coef
        negative = coef < 0
        # log pi from the scores, not log(probs): probs may underflow to 0 for large |F|.
        log_pi = state.log_pi_logged
        losses = np.where(negative, -coef * state.pi_logged, -coef * (log_pi + 1.0))
        return float(losses.mean())
