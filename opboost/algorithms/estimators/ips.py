"""Inverse propensity scoring (IPS) and truncated IPS.

IPS (Horvitz & Thompson 1952): V(pi) = 1/n sum_i r_i pi(a_i|x_i) / p_i; training
coefficients c_i = r_i / p_i. Truncated IPS (Ionides 2008) clips the importance weight at
``max_weight``: c_i = r_i min(1/p_i, M), V(pi) = 1/n sum_i r_i min(pi(a_i|x_i)/p_i, M).
"""

from __future__ import annotations

from numbers import Real
from typing import ClassVar

import numpy as np

from opboost.api.constraints import Interval
from opboost.api.data.logged import LoggedBandit
from opboost.api.estimator import Estimator, check_action_probs

__all__ = ["IPS", "TruncatedIPS", "importance_weights"]


def importance_weights(data: LoggedBandit, action_probs: np.ndarray, owner: str) -> np.ndarray:
    """pi(a_i|x_i) / p_i for the evaluated policy, shape (n,)."""
    probs = check_action_probs(data, action_probs, owner)
    return probs[np.arange(len(data)), data.actions] / data.propensities


class IPS(Estimator):
    """Inverse propensity scoring; unbiased when propensities are correct and positive."""

    name: ClassVar[str] = "ips"
    supports_training: ClassVar[bool] = True
    row_local: ClassVar[bool] = True

    def __init__(self) -> None:
        pass

    def coefficients(self, data: LoggedBandit) -> np.ndarray:
        return data.rewards / data.propensities

    def round_values(self, data: LoggedBandit, action_probs: np.ndarray) -> np.ndarray:
        return data.rewards * importance_weights(data, action_probs, "IPS")


class TruncatedIPS(Estimator):
    """IPS with importance weights clipped at ``max_weight`` (biased, lower variance).

    Parameters
    ----------
    max_weight
        M > 0, the largest importance weight; ``inf`` disables truncation.
    """

    name: ClassVar[str] = "truncated_ips"
    supports_training: ClassVar[bool] = True
    row_local: ClassVar[bool] = True

    _parameter_constraints: ClassVar[dict] = {
        "max_weight": [
            Interval(Real, 0.0, None, closed="neither", fix="use inf to disable truncation")
        ]
    }

    def __init__(self, *, max_weight: float = 10.0) -> None:
        self.max_weight = max_weight

    def _max_weight(self) -> float:
        self.validate_params()
        return float(self.max_weight)

    def coefficients(self, data: LoggedBandit) -> np.ndarray:
        return data.rewards * np.minimum(1.0 / data.propensities, self._max_weight())

    def round_values(self, data: LoggedBandit, action_probs: np.ndarray) -> np.ndarray:
        weights = importance_weights(data, action_probs, "TruncatedIPS")
        return data.rewards * np.minimum(weights, self._max_weight())

    @classmethod
    def _unit_test_params(cls) -> dict:
        return {"max_weight": 5.0}
