"""Base class of off-policy estimators.

An estimator has two roles:

* training coefficients for the boosting objectives (``coefficients``), where the
  estimator defines them: one per row (IPS: r_i / p_i; truncated IPS: r_i * min(1/p_i, M))
  or one per row and action (DR, DM: an (n, K) matrix Gamma);
* the value of any policy on logged data (``estimate_value``) and a confidence interval
  (``estimate_interval``), from per-example contributions (``round_values``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from scipy import stats

from opboost.component import Component
from opboost.data import LoggedBandit
from opboost.exceptions import InvalidParameterError

__all__ = ["Estimator", "Interval", "check_action_probs"]


@dataclass(frozen=True)
class Interval:
    """A point estimate with a two-sided confidence interval at ``level``."""

    value: float
    low: float
    high: float
    level: float = 0.95

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2


def check_action_probs(data: LoggedBandit, action_probs: np.ndarray, owner: str) -> np.ndarray:
    """Validate an (n, K) matrix of the evaluated policy's action probabilities on ``data``."""
    probs = np.asarray(action_probs, dtype=np.float64)
    expected = (len(data), data.n_actions)
    if probs.shape != expected:
        raise InvalidParameterError(
            f"{owner}: action_probs must have shape {expected} (rows of data x actions). "
            f"Got {probs.shape}."
        )
    if not np.all(np.isfinite(probs)) or probs.min() < 0:
        i = int(np.argwhere(~np.isfinite(probs) | (probs < 0))[0, 0])
        raise InvalidParameterError(
            f"{owner}: action_probs must be finite and >= 0; row {i} is {probs[i].tolist()}."
        )
    return probs


def normal_interval(values: np.ndarray, level: float) -> Interval:
    """Mean of ``values`` with a Student-t interval from their standard error."""
    n = len(values)
    mean = float(np.mean(values))
    if n < 2:
        return Interval(mean, -np.inf, np.inf, level)
    se = float(np.std(values, ddof=1) / np.sqrt(n))
    q = float(stats.t.ppf(0.5 + level / 2, df=n - 1))
    return Interval(mean, mean - q * se, mean + q * se, level)


class Estimator(Component):
    """Off-policy estimator. Subclasses implement ``round_values`` (and ``coefficients``
    when they can drive training; set ``supports_training = True`` then)."""

    kind: ClassVar[str] = "estimator"
    #: Whether ``coefficients`` is defined, i.e. whether the booster can train with it.
    supports_training: ClassVar[bool] = False

    def coefficients(self, data: LoggedBandit) -> np.ndarray:
        """Training coefficients: c_i, shape (n,), or per-action coefficients Gamma (n, K)
        whose value estimate is V(pi) = (1/n) sum_i <pi(x_i), Gamma_i> (doubly robust
        training; objectives with ``supports_action_coefficients`` take them)."""
        raise InvalidParameterError(
            f"The estimator {self.name!r} gives no training coefficients, so the booster "
            f"cannot train with it; use estimator='ips' or 'truncated_ips' for training "
            f"and {self.name!r} for evaluation."
        )

    def round_values(self, data: LoggedBandit, action_probs: np.ndarray) -> np.ndarray:
        """Per-example contributions whose mean is the value estimate, shape (n,)."""
        raise NotImplementedError

    def estimate_value(self, data: LoggedBandit, action_probs: np.ndarray) -> float:
        """Estimated expected reward of the policy with ``action_probs`` (n, K) on ``data``."""
        return float(np.mean(self.round_values(data, action_probs)))

    def estimate_interval(
        self, data: LoggedBandit, action_probs: np.ndarray, *, alpha: float = 0.05
    ) -> Interval:
        """Value estimate with a (1 - alpha) confidence interval (Student-t on round values)."""
        return normal_interval(self.round_values(data, action_probs), 1 - alpha)
