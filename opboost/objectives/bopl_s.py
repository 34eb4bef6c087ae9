"""BOPL-S (London et al. 2023, Algorithm 2 / appendix B.2): boost a surrogate risk.

For c_i >= 0 (non-negative reward) the loss is the convex upper bound -c_i (ln pi_i + 1)
(xi_i = 1, sigma_i = 1); for c_i < 0 it is BOPL's -c_i pi_i (xi_i = pi_i, sigma_i = 1/2).
Without reward translation (all rewards >= 0) this is BOPL-CS, whose objective is convex.
The sign of c_i is the sign of r_i for every estimator whose coefficients are r_i times a
positive weight (IPS, truncated IPS).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from opboost.objectives.base import Objective, RoundState

__all__ = ["BOPLS"]


class BOPLS(Objective):
    """Boosted off-policy learning on the log-softmax surrogate where rewards are >= 0."""

    name: ClassVar[str] = "bopl_s"

    def __init__(self) -> None:
        pass

    def xi_sigma(self, coef: np.ndarray, pi_logged: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        negative = coef < 0
        return np.where(negative, pi_logged, 1.0), np.where(negative, 0.5, 1.0)

    def risk_at(self, state: RoundState) -> float:
        coef = state.coef
        negative = coef < 0
        # log pi from the scores, not log(probs): probs may underflow to 0 for large |F|.
        log_pi = state.log_pi_logged
        losses = np.where(negative, -coef * state.pi_logged, -coef * (log_pi + 1.0))
        return float(losses.mean())
