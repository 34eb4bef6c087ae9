"""Slate estimators: independent (per-position) IPS and reward-interaction (cascade) IPS.

On [`SlateLogs`][opboost.api.slates.SlateLogs] (n impressions x L positions) and an evaluated
ranking policy pi (a [`SlatePolicy`][opboost.api.slates.SlatePolicy], or an (n, L) integer ranking),
with position weights alpha_k (1 by default), each impression's value is a sum over positions:

    IIPS (obp's SlateIndependentIPS; Li et al. 2018):
        V_i = sum_k alpha_k r_{i,k} pi(a_{i,k} at k | x_i) / pi_0(a_{i,k} at k | x_i)
    RIPS (obp's SlateRewardInteractionIPS; McInerney et al. 2020), the cascade weights:
        V_i = sum_k alpha_k r_{i,k} pi(a_{i,1..k} | x_i) / pi_0(a_{i,1..k} | x_i)

IIPS is unbiased when the click at k depends on the item at k only (a position-based
model); RIPS also when it depends on the items above k (a cascade), at a higher variance.
The estimate is the mean of V_i and its interval a Student-t one over the n impressions.
With one position both are ordinary IPS.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from opboost.api.constraints import Satisfies
from opboost.api.data.logged import LoggedBandit
from opboost.api.estimator import Estimator
from opboost.api.exceptions import InvalidParameterError
from opboost.api.slate_dr_terms import impression_values
from opboost.api.slates import SlateLogs, SlatePolicy, position_weights_ok, slate_inputs

__all__ = ["SlateEstimator", "SlateIndependentIPS", "SlateRewardInteractionIPS"]


class SlateEstimator(Estimator):
    """Base of the slate estimators: per-impression values (n,) from per-position terms
    (n, L) (``position_values``) weighed by ``position_weights``.

    Parameters
    ----------
    position_weights
        alpha_k, a sequence of L finite numbers, or None for 1 at every position (the
        expected number of clicks).
    """

    _parameter_constraints: ClassVar[dict] = {
        "position_weights": [
            Satisfies(
                position_weights_ok, "None or a 1-D sequence of finite numbers, one per position"
            )
        ]
    }

    def __init__(self, *, position_weights: Any = None) -> None:
        self.position_weights = position_weights

    def position_values(self, logs: SlateLogs, policy: SlatePolicy) -> np.ndarray:
        """The (n, L) per-position terms before the position weights."""
        raise NotImplementedError

    def _alpha(self, slate_size: int) -> np.ndarray:
        self.validate_params()
        if self.position_weights is None:
            return np.ones(slate_size)
        alpha = np.asarray(self.position_weights, dtype=np.float64)
        if alpha.shape != (slate_size,):
            raise InvalidParameterError(
                f"{type(self).__name__}: position_weights has {alpha.size} value(s) but the "
                f"logs have L = {slate_size} positions; give one weight per position."
            )
        return alpha

    def round_values(self, data: SlateLogs | LoggedBandit, action_probs: Any) -> np.ndarray:
        """Per-impression values V_i (n,). ``data``: SlateLogs (or a LoggedBandit without
        positions, one position); ``action_probs``: a SlatePolicy or an (n, L) integer
        ranking (on a LoggedBandit, any form ``check_action_probs`` takes)."""
        logs, policy = slate_inputs(data, action_probs, type(self).__name__)
        terms = self.position_values(logs, policy)
        return impression_values(logs, terms, self._alpha(logs.slate_size))

    @classmethod
    def _unit_test_params(cls) -> dict[str, Any]:
        return {"position_weights": None}


class SlateIndependentIPS(SlateEstimator):
    """Independent (per-position) IPS, obp's IIPS: weight pi(a_k at k) / pi_0(a_k at k)."""

    name: ClassVar[str] = "slate_iips"

    def position_values(self, logs: SlateLogs, policy: SlatePolicy) -> np.ndarray:
        return logs.rewards * np.asarray(policy.marginal) / logs.marginal_propensities


def cascade_propensities(logs: SlateLogs, owner: str) -> np.ndarray:
    """The logs' (n, L) pi_0(a_{1..k} | x), or an error naming ``owner`` when unknown."""
    if logs.cascade_propensities is None:
        raise InvalidParameterError(
            f"{owner}: the logs have no cascade_propensities (the logger's probability of "
            f"each ranking's first k items), which reward-interaction weights need; log them "
            f"(SlateLogs(..., cascade_propensities=...)) or use slate_iips / slate_idr."
        )
    return logs.cascade_propensities


class SlateRewardInteractionIPS(SlateEstimator):
    """Reward-interaction (cascade) IPS, obp's RIPS: weight pi(a_{1..k}) / pi_0(a_{1..k})."""

    name: ClassVar[str] = "slate_rips"

    def position_values(self, logs: SlateLogs, policy: SlatePolicy) -> np.ndarray:
        logged = cascade_propensities(logs, type(self).__name__)
        return logs.rewards * np.asarray(policy.cascade) / logged
