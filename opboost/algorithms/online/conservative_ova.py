"""Conservative one-versus-all (C-OVA; Chen et al. 2009, as described by Chen, Lin & Lu 2014).

K online binary learners, one per class (one-versus-all). No random exploration:

- predict yhat_t = argmax_k m_k(x_t), the binary learners' margins (margin-based decoding;
  ties broken uniformly at random with the learner's seeded rng);
- feedback 1[yhat_t = y_t] gives the binary label of class yhat_t only: +1 if correct,
  -1 otherwise; only learner yhat_t is updated ("conservative": it uses whatever the
  partial feedback reveals and nothing else).

The action distribution is deterministic: a point mass on yhat_t (split evenly over ties).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from opboost.algorithms.online.parameters import BANDIT, OPTIONAL_DICT, WEAK_LEARNER
from opboost.algorithms.online.scaling import make_scaler, scale_one
from opboost.algorithms.online.weak_learners import make_bank
from opboost.api.bandit import BanditLearner, as_context
from opboost.api.validation import check_random_state

__all__ = ["ConservativeOVA"]

_ONE = np.ones(1)


class ConservativeOVA(BanditLearner):
    """C-OVA: K one-vs-all online binary learners with conservative bandit updates.

    Parameters
    ----------
    n_actions
        number of classes K (>= 2).
    base_learner
        "passive_aggressive" (the C-OVA paper's internal learner), "perceptron",
        "gaussian_nb" or "river:<module>.<Class>" (see
        ``opboost.algorithms.online.weak_learners``).
    base_learner_params
        keyword arguments for the base learner bank.
    standardize
        online scaling by the running std
        (``RunningScaler``; a context joins the statistics
        when ``predict_one`` acts on it): ``"auto"`` centres at the running mean except two-valued
        features (one-hot zeros kept), ``"mean"`` is river's StandardScaler, False feeds raw
        features.
    random_state
        seed of tie-breaking (and of any random initialisation).

    Notes
    -----
    Fitted state: ``bank_`` (a bank with N = 1 learner per class), ``scaler_``,
    ``n_features_in_``.
    """

    name: ClassVar[str] = "conservative_ova"

    _parameter_constraints: ClassVar[dict] = {
        **BANDIT,
        "base_learner": WEAK_LEARNER,
        "base_learner_params": OPTIONAL_DICT,
    }

    def __init__(
        self,
        *,
        n_actions: int = 2,
        base_learner: str = "passive_aggressive",
        base_learner_params: dict | None = None,
        standardize: str | bool = "auto",
        random_state: int | None = None,
    ) -> None:
        self.n_actions = n_actions
        self.base_learner = base_learner
        self.base_learner_params = base_learner_params
        self.standardize = standardize
        self.random_state = random_state

    def _prepare(self, x: Any, learn: bool = False) -> np.ndarray:
        """``x`` as a (d,) array, standardised (learnt by the scaler first if ``learn``)."""
        if getattr(self, "_rng", None) is None:
            self.validate_params()
            K = int(self.n_actions)
            arr = as_context(x, None, type(self).__name__)
            self.scaler_ = make_scaler(self.standardize, arr.shape[0], type(self).__name__)
            self._rng = check_random_state(self.random_state)
            params = dict(self.base_learner_params or {})
            if self.base_learner == "perceptron":
                params.setdefault("init_scale", 0.0)
            self.bank_ = make_bank(
                self.base_learner, K, 1, arr.shape[0], self._rng, params, type(self).__name__
            )
            self.n_features_in_ = arr.shape[0]
            self._K = K
            self._last_x = None
        else:
            arr = as_context(x, self.n_features_in_, type(self).__name__)
        return scale_one(self.scaler_, arr, learn)

    def action_probs_one(self, x: np.ndarray) -> np.ndarray:
        """Point mass on the argmax of the margins (K,), split evenly over ties."""
        arr = self._prepare(x)
        margins = self.bank_.margins(arr)[:, 0]
        best = margins == margins.max()
        return best / best.sum()

    def predict_one(self, x: np.ndarray) -> int:
        """argmax_k of the K binary margins (random tie-break)."""
        arr = self._prepare(x, learn=True)
        margins = self.bank_.margins(arr)[:, 0]
        best = np.flatnonzero(margins == margins.max())
        top = int(best[0] if len(best) == 1 else self._rng.choice(best))
        self._last_x, self._last_arr, self._last_margins = x, arr, margins
        self._last_top = top
        return top

    def greedy_action_one(self) -> int | None:
        """The last ``predict_one``'s action: C-OVA never explores, so greedy = played."""
        return None if self._last_x is None else self._last_top

    def learn_one(self, x: np.ndarray, action: int, reward: float) -> None:
        """Update learner ``action`` with label +1 if the reward says correct, else -1."""
        if x is self._last_x and x is not None:
            arr, margins = self._last_arr, self._last_margins
        else:
            arr = self._prepare(x, learn=True)
            margins = self.bank_.margins(arr)[:, 0]
        k = self._check_action(action, self._K)
        y = 1.0 if reward > 0.5 else -1.0
        self.bank_.learn(k, arr, y, _ONE, np.sign(margins[k : k + 1]))
        self._last_x = None

    @classmethod
    def _unit_test_params(cls) -> dict[str, Any]:
        return {"n_actions": 3, "random_state": 0}
