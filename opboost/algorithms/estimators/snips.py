"""Self-normalised inverse propensity scoring (SNIPS).

SNIPS (Swaminathan & Joachims 2015) divides the IPS sum by the sum of the importance
weights instead of n:

    V(pi) = sum_i w_i r_i / sum_i w_i,    w_i = pi(a_i|x_i) / p_i.

It is biased (a ratio of two unbiased means) but consistent, invariant to translating the
rewards (V(r + c) = V(r) + c) and to scaling the weights, and usually has much lower variance
than IPS when the weights are large. It gives no training coefficients: the normaliser
depends on the policy being learned, so it is an evaluation estimator only.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from scipy import stats

from opboost.algorithms.estimators.ips import importance_weights
from opboost.api.data.logged import LoggedBandit
from opboost.api.estimator import ConfidenceInterval, Estimator, LogsScorer
from opboost.api.exceptions import InvalidParameterError
from opboost.api.numerics.arrays import dot

__all__ = ["SNIPS", "SNIPSScorer"]


class SNIPS(Estimator):
    """Self-normalised IPS, V = sum_i w_i r_i / sum_i w_i (evaluation only).

    ``round_values`` returns w_i r_i / mean(w), shape (n,), whose mean is the estimate.
    ``estimate_interval`` uses the delta-method standard error of the ratio estimator,

        se^2 = sum_i w_i^2 (r_i - V)^2 / (n (n - 1) mean(w)^2),

    with a Student-t quantile on n - 1 degrees of freedom (not the naive standard error of
    the round values, which ignores the randomness of the normaliser).
    """

    name: ClassVar[str] = "snips"

    def __init__(self) -> None:
        pass

    def _weights(self, data: LoggedBandit, action_probs: np.ndarray) -> np.ndarray:
        weights = importance_weights(data, action_probs, "SNIPS")
        if not weights.sum() > 0:
            raise InvalidParameterError(
                "SNIPS: the evaluated policy gives probability 0 to every logged action, so "
                "the self-normalised estimate is 0/0; use 'ips' or 'dm' for this policy."
            )
        return weights

    def round_values(self, data: LoggedBandit, action_probs: np.ndarray) -> np.ndarray:
        weights = self._weights(data, action_probs)
        return weights * data.rewards / weights.mean()

    def estimate_value(self, data: LoggedBandit, action_probs: np.ndarray) -> float:
        weights = self._weights(data, action_probs)
        return dot(weights, data.rewards) / float(weights.sum())

    def estimate_interval(
        self, data: LoggedBandit, action_probs: np.ndarray, *, alpha: float = 0.05
    ) -> ConfidenceInterval:
        """SNIPS value with a (1 - alpha) delta-method interval (see the class docstring)."""
        return _interval(self._weights(data, action_probs), data.rewards, 1 - alpha)

    def on_logs(
        self, data: LoggedBandit, reward_predictions: np.ndarray | None = None
    ) -> SNIPSScorer:
        """On fixed logs a policy that never plays a logged action gets an unknown value
        ([`SNIPSScorer`][opboost.algorithms.estimators.snips.SNIPSScorer]), not an error: a fit's
        early rounds may be such a policy. SNIPS takes no reward predictions."""
        return SNIPSScorer(self, data)


class SNIPSScorer(LogsScorer):
    """SNIPS on fixed logs: the interval of a policy that gives probability 0 to every logged
    action is NaN with infinite bounds (nothing is known of it)."""

    def interval(self, action_probs: np.ndarray, *, alpha: float = 0.05) -> ConfidenceInterval:
        weights = importance_weights(self.data, action_probs, "SNIPS")
        if not weights.sum() > 0:
            return ConfidenceInterval(float("nan"), -np.inf, np.inf, 1 - alpha)
        return _interval(weights, self.data.rewards, 1 - alpha)


def _interval(weights: np.ndarray, rewards: np.ndarray, level: float) -> ConfidenceInterval:
    """SNIPS value of the importance ``weights`` (n,) with its delta-method interval."""
    n = len(weights)
    value = dot(weights, rewards) / float(weights.sum())
    if n < 2:
        return ConfidenceInterval(value, -np.inf, np.inf, level)
    residuals = weights * (rewards - value)
    se = float(np.sqrt(np.sum(residuals**2) / (n * (n - 1))) / weights.mean())
    q = float(stats.t.ppf(0.5 + level / 2, df=n - 1))
    return ConfidenceInterval(value, value - q * se, value + q * se, level)
