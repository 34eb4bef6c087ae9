"""Doubly robust slate estimators: independent DR and cascade DR (Kiyohara et al. 2022).

With a reward model q[i, k, a] ~ the reward at position k of item a for impression i, and
the weights of ``opboost.algorithms.estimators.slate`` (w_{i,k} = pi/pi_0 of the logged
item at k; W_{i,k} = pi/pi_0 of the logged items 1..k, W_{i,0} = 1):

    independent DR:
        V_i = sum_k alpha_k [ w_{i,k} (r_{i,k} - q[i,k,a_{i,k}]) + sum_a pi(a at k|x_i) q[i,k,a] ]
    cascade DR (obp's SlateCascadeDoublyRobust):
        V_i = sum_k alpha_k [ W_{i,k} (r_{i,k} - q[i,k,a_{i,k}])
                              + W_{i,k-1} sum_a pi(a at k | x_i, a_{i,1..k-1}) q[i,k,a] ]

For any q fitted without row i, E[V_i] is the policy's value under the assumption of the
matching IPS estimator (position-based independence; cascade). In Kiyohara et al. q is the
Q-function Q_k(x, a_{1..k-1}, a), the expected weighted reward of positions k..L; any q
keeps the estimator unbiased, a better one lowers its variance. Pass q (n, L, K) through
``on_logs(logs, reward_predictions=q)``, or a regressor as ``reward_model`` (cross-fitted on
[x; phi(a) or onehot(a); onehot(k)]); by default each estimate cross-fits each (position,
item)'s mean reward over the other folds, shrunk toward the position's mean
(``opboost.algorithms.estimators.slate_reward``).
"""

from __future__ import annotations

from numbers import Integral
from typing import Any, ClassVar

import numpy as np

from opboost.algorithms.estimators.slate import SlateEstimator, cascade_propensities
from opboost.algorithms.estimators.slate_reward import fitted_reward_model, position_item_means
from opboost.api.constraints import Interval, Satisfies
from opboost.api.data.logged import LoggedBandit
from opboost.api.estimator import ConfidenceInterval, LogsScorer, normal_interval
from opboost.api.exceptions import InvalidParameterError
from opboost.api.slate_dr_terms import cascade_dr_terms, impression_values, independent_dr_terms
from opboost.api.slates import SlateLogs, SlatePolicy, slate_inputs

__all__ = ["SlateCascadeDR", "SlateIndependentDR"]


def _is_regressor(value: Any) -> bool:
    return callable(getattr(value, "fit", None)) and callable(getattr(value, "predict", None))


class _SlateDR(SlateEstimator):
    """Shared parameters and the reward model of the slate DR estimators.

    Parameters
    ----------
    position_weights
        alpha_k, one per position, or None for 1 everywhere.
    reward_model
        None (each (position, item)'s mean reward) or a scikit-learn style regressor of the
        reward on [x; phi(a) or onehot(a); onehot(k)], e.g.
        ``opboost.algorithms.estimators.direct.default_reward_model()``.
    n_folds
        folds of the reward model's cross-fitting (1: fitted on all rows).
    random_state
        seed of the folds.
    """

    takes_reward_predictions: ClassVar[bool] = True
    _parameter_constraints: ClassVar[dict] = {
        **SlateEstimator._parameter_constraints,
        "reward_model": [None, Satisfies(_is_regressor, "an object with fit and predict")],
        "n_folds": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        *,
        position_weights: Any = None,
        reward_model: Any = None,
        n_folds: int = 2,
        random_state: int | None = 0,
    ) -> None:
        self.position_weights = position_weights
        self.reward_model = reward_model
        self.n_folds = n_folds
        self.random_state = random_state

    def reward_predictions(self, logs: SlateLogs) -> np.ndarray:
        """q (n, L, K) of ``reward_model`` (or the position-item means), cross-fitted."""
        self.validate_params()
        if self.reward_model is None:
            return position_item_means(logs, self.n_folds, self.random_state)
        return fitted_reward_model(logs, self.reward_model, self.n_folds, self.random_state)

    def dr_values(self, logs: SlateLogs, policy: SlatePolicy, q: np.ndarray) -> np.ndarray:
        """The (n, L) per-position DR terms with reward model ``q`` (n, L, K)."""
        raise NotImplementedError

    def position_values(self, logs: SlateLogs, policy: SlatePolicy) -> np.ndarray:
        return self.dr_values(logs, policy, self.reward_predictions(logs))

    def on_logs(self, data: Any, reward_predictions: np.ndarray | None = None) -> LogsScorer:
        """This estimator on fixed logs, with ``reward_predictions`` q (n, L, K) if given
        (else the default model, fitted once)."""
        return _SlateDRScorer(self, data, reward_predictions)

    @classmethod
    def _unit_test_params(cls) -> dict[str, Any]:
        return {"position_weights": None, "reward_model": None, "n_folds": 2, "random_state": 0}


def _check_q(logs: SlateLogs, q: np.ndarray, owner: str) -> np.ndarray:
    """q as (n, L, K); a one-action reward model's (n, K) serves one-position logs."""
    q = np.asarray(q, dtype=np.float64)
    if q.ndim == 2 and logs.slate_size == 1:
        q = q[:, None, :]
    expected = (len(logs), logs.slate_size, logs.n_items)
    if q.shape != expected:
        raise InvalidParameterError(
            f"{owner}: reward_predictions must have shape (n, L, K) = {expected}; got {q.shape}."
        )
    return q


class SlateIndependentDR(_SlateDR):
    """Doubly robust form of IIPS (position-based independence)."""

    name: ClassVar[str] = "slate_idr"

    def dr_values(self, logs: SlateLogs, policy: SlatePolicy, q: np.ndarray) -> np.ndarray:
        return independent_dr_terms(logs, policy, q, type(self).__name__)


class SlateCascadeDR(_SlateDR):
    """Cascade doubly robust estimator (Kiyohara et al. 2022; obp's Cascade-DR)."""

    name: ClassVar[str] = "slate_cascade_dr"

    def dr_values(self, logs: SlateLogs, policy: SlatePolicy, q: np.ndarray) -> np.ndarray:
        owner = type(self).__name__
        return cascade_dr_terms(logs, policy, q, cascade_propensities(logs, owner), owner)


class _SlateDRScorer(LogsScorer):
    """A slate DR estimator on fixed logs with one reward model q for every policy."""

    def __init__(
        self, estimator: _SlateDR, data: SlateLogs | LoggedBandit, q: np.ndarray | None
    ) -> None:
        super().__init__(estimator, data)
        owner = type(estimator).__name__
        self._logs = data if isinstance(data, SlateLogs) else None
        logs = self._logs or slate_inputs(data, np.zeros(len(data), dtype=int), owner)[0]
        self._q = estimator.reward_predictions(logs) if q is None else _check_q(logs, q, owner)

    def row_values(self, action_probs: Any) -> np.ndarray:
        est: _SlateDR = self.estimator  # type: ignore[assignment]
        logs, policy = slate_inputs(self.data, action_probs, type(est).__name__)
        terms = est.dr_values(logs, policy, self._q)
        return impression_values(logs, terms, est._alpha(logs.slate_size))

    def interval(self, action_probs: Any, *, alpha: float = 0.05) -> ConfidenceInterval:
        return normal_interval(self.row_values(action_probs), 1 - alpha)
