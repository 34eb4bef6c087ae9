"""Banditron (Kakade, Shalev-Shwartz & Tewari 2008): a bandit multiclass perceptron.

A linear multiclass model W (K, d) (Kesler's construction). At step t:

- yhat_t = argmax_k (W x_t)_k;
- P(k) = (1 - gamma) 1[k = yhat_t] + gamma / K; sample ytilde_t ~ P;
- feedback 1[ytilde_t = y_t] (here: reward > 0.5);
- update W <- W + U~_t with U~_t = x_t (1[ytilde_t = y_t] e_{ytilde_t} / P(ytilde_t)
  - e_{yhat_t})^T, an unbiased estimate of the full-information perceptron update
  x_t (e_{y_t} - e_{yhat_t})^T.

A constant bias feature is appended internally (``fit_intercept=True``).
"""

from __future__ import annotations

from numbers import Real
from typing import Any, ClassVar

import numpy as np

from opboost.algorithms.online.parameters import BANDIT
from opboost.algorithms.online.scaling import make_scaler, scale_one
from opboost.api.bandit import BanditLearner, as_context
from opboost.api.constraints import Interval
from opboost.api.validation import check_random_state

__all__ = ["Banditron"]


class Banditron(BanditLearner):
    """Banditron of Kakade et al. (2008).

    Parameters
    ----------
    n_actions
        number of classes K (>= 2).
    gamma
        exploration rate in (0, 1) (the paper's gamma; Chen et al. tune it like delta).
    fit_intercept
        append a constant 1 feature.
    standardize
        online scaling by the running std
        (``RunningScaler``; a context joins the statistics
        when ``predict_one`` acts on it): ``"auto"`` centres at the running mean except two-valued
        features (one-hot zeros kept), ``"mean"`` is river's StandardScaler, False feeds raw
        features.
    random_state
        seed of the exploration and of tie-breaking.

    Notes
    -----
    Fitted state: ``coef_`` (K, d + fit_intercept), ``scaler_``, ``n_features_in_``.
    """

    name: ClassVar[str] = "banditron"

    _parameter_constraints: ClassVar[dict] = {
        **BANDIT,
        "gamma": [
            Interval(
                Real, 0.0, 1.0, closed="neither", fix="Kakade et al. use a small gamma, e.g. 0.05"
            )
        ],
        "fit_intercept": ["boolean"],
    }

    def __init__(
        self,
        *,
        n_actions: int = 2,
        gamma: float = 0.05,
        fit_intercept: bool = True,
        standardize: str | bool = "auto",
        random_state: int | None = None,
    ) -> None:
        self.n_actions = n_actions
        self.gamma = gamma
        self.fit_intercept = fit_intercept
        self.standardize = standardize
        self.random_state = random_state

    def _prepare(self, x: Any, learn: bool = False) -> np.ndarray:
        """``x`` standardised (learnt by the scaler if ``learn``), plus the bias; (d + 1,)."""
        if getattr(self, "_rng", None) is None:
            owner = type(self).__name__
            self.validate_params()
            K = int(self.n_actions)
            arr = as_context(x, None, owner)
            self.scaler_ = make_scaler(self.standardize, arr.shape[0], owner)
            self._rng = check_random_state(self.random_state)
            self.n_features_in_ = arr.shape[0]
            self.coef_ = np.zeros((K, arr.shape[0] + int(self.fit_intercept)))
            self._K = K
            self._last_x = None
        arr = as_context(x, self.n_features_in_, type(self).__name__)
        arr = scale_one(self.scaler_, arr, learn)
        return np.append(arr, 1.0) if self.fit_intercept else arr

    def _top(self, xb: np.ndarray) -> int:
        scores = self.coef_ @ xb
        best = np.flatnonzero(scores == scores.max())
        return int(best[0] if len(best) == 1 else self._rng.choice(best))

    def action_probs_one(self, x: np.ndarray) -> np.ndarray:
        """P (K,): 1 - gamma + gamma/K on argmax_k (W x)_k, gamma/K elsewhere."""
        xb = self._prepare(x)
        scores = self.coef_ @ xb
        best = np.flatnonzero(scores == scores.max())
        probs = np.full(self._K, self.gamma / self._K)
        probs[best] += (1.0 - self.gamma) / len(best)  # ties split evenly
        return probs

    def predict_one(self, x: np.ndarray) -> int:
        """Sample ytilde ~ P; remember yhat (the greedy class) for ``learn_one``."""
        xb = self._prepare(x, learn=True)
        top = self._top(xb)
        self._last_x, self._last_xb, self._last_top = x, xb, top
        if self._rng.random() < self.gamma:
            return int(self._rng.integers(self._K))
        return top

    def greedy_action_one(self) -> int | None:
        """yhat of the last ``predict_one``: the argmax class before exploration."""
        return None if self._last_x is None else self._last_top

    def learn_one(self, x: np.ndarray, action: int, reward: float) -> None:
        """W <- W + x (1[correct] e_action / P(action) - e_yhat)^T."""
        if x is self._last_x and x is not None:
            xb, top = self._last_xb, self._last_top
        else:
            xb = self._prepare(x, learn=True)
            top = self._top(xb)
        k = self._check_action(action, self._K)
        if reward > 0.5:
            p = self.gamma / self._K + (1.0 - self.gamma) * (k == top)
            self.coef_[k] += xb / p
        self.coef_[top] -= xb
        self._last_x = None

    @classmethod
    def _unit_test_params(cls) -> dict[str, Any]:
        return {"n_actions": 3, "random_state": 0}
