"""Reference contextual bandits on per-action ridge regressions: LinUCB and ε-greedy.

Both keep, for every action k, a Bayesian ridge regression of the reward on the context
(``p = d + fit_intercept`` features after online standardisation)::

    A_k = l2 I + beta sum_{t: a_t = k} x_t x_t^T        (p, p), kept as its inverse
    theta_k = A_k^{-1} beta sum_{t: a_t = k} r_t x_t     (p,)

The inverse is updated by Sherman–Morrison (O(p^2) per step) and every action is scored with
one batched matrix product, so a step costs O(K p^2) numpy work without a Python loop over
actions.

- [`LinUCB`][opboost.algorithms.online.linear_bandits.LinUCB] (``"linucb"``, Li et al. 2010,
disjoint model) plays
  ``argmax_k theta_k . x + alpha sqrt(1/beta + x^T A_k^{-1} x)``. With ``alpha=1``,
  ``fit_intercept=False`` and ``standardize=False`` its scores are those of river's
  ``bandit.LinUCBDisjoint(alpha=l2, beta=beta)`` (river's ``alpha`` is the prior precision,
  called ``l2`` here; its UCB width is fixed at one posterior standard deviation).
- [`EpsilonGreedyLinear`][opboost.algorithms.online.linear_bandits.EpsilonGreedyLinear]
(``"epsilon_greedy"``) plays ``argmax_k theta_k . x`` with
  probability 1 - epsilon and a uniform action otherwise.

Ties of the argmax are broken uniformly at random with the learner's seeded generator.
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

__all__ = ["EpsilonGreedyLinear", "LinUCB"]


class _RidgeBandit(BanditLearner):
    """Shared state and updates of the per-action ridge regressions (see the module doc)."""

    _parameter_constraints: ClassVar[dict] = {
        **BANDIT,
        "l2": [Interval(Real, 0.0, None, closed="right", fix="e.g. l2=1.0")],
        "beta": [Interval(Real, 0.0, None, closed="right", fix="e.g. beta=1.0")],
        "fit_intercept": ["boolean"],
    }

    def _prepare(self, x: Any, learn: bool = False) -> np.ndarray:
        """``x`` standardised (then learnt by the scaler if ``learn``), plus the bias; (p,)."""
        owner = type(self).__name__
        if getattr(self, "_rng", None) is None:
            self.validate_params()
            K = int(self.n_actions)
            arr = as_context(x, None, owner)
            self.scaler_ = make_scaler(self.standardize, arr.shape[0], owner)
            p = arr.shape[0] + int(self.fit_intercept)
            self._rng = check_random_state(self.random_state)
            self.n_features_in_ = arr.shape[0]
            self.cov_ = np.repeat(np.eye(p)[None] / self.l2, K, axis=0)  # A_k^{-1}, (K, p, p)
            self.eta_ = np.zeros((K, p))  # beta sum r x, (K, p)
            self.coef_ = np.zeros((K, p))  # theta_k, (K, p)
            self._K = K
            self._last_x: Any = None
        else:
            arr = as_context(x, self.n_features_in_, owner)
        arr = scale_one(self.scaler_, arr, learn)
        return np.append(arr, 1.0) if self.fit_intercept else arr

    def _features_many(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        self._prepare(X[0])
        if self.scaler_ is not None:
            X = self.scaler_.transform_many(X)
        if self.fit_intercept:
            X = np.hstack([X, np.ones((len(X), 1))])
        return X

    def _argmax(self, scores: np.ndarray) -> int:
        best = np.flatnonzero(scores == scores.max())
        return int(best[0] if len(best) == 1 else self._rng.choice(best))

    def _update(self, k: int, xb: np.ndarray, reward: float, cov_x: np.ndarray | None) -> None:
        """Sherman–Morrison on A_k^{-1} with beta x x^T; ``cov_x`` = A_k^{-1} x if known."""
        cov = self.cov_[k]
        u = cov @ xb if cov_x is None else cov_x
        beta = float(self.beta)
        cov -= np.multiply.outer(u, u * (beta / (1.0 + beta * float(u @ xb))))
        self.eta_[k] += (beta * reward) * xb
        np.matmul(cov, self.eta_[k], out=self.coef_[k])

    def learn_one(self, x: np.ndarray, action: int, reward: float) -> None:
        """Add (x, reward) to the regression of ``action`` only."""
        if x is getattr(self, "_last_x", None) and x is not None:
            xb, cov_x = self._last_xb, self._last_cov_x
        else:
            xb, cov_x = self._prepare(x, learn=True), None
        k = self._check_action(action, self._K)
        self._update(k, xb, float(reward), None if cov_x is None else cov_x[k])
        self._last_x = None

    def greedy_action_one(self) -> int | None:
        """The argmax action behind the last ``predict_one`` (before any exploration)."""
        return None if self._last_x is None else self._last_top


class LinUCB(_RidgeBandit):
    """LinUCB with disjoint linear models (Li, Chu, Langford & Schapire 2010), vectorised.

    Parameters
    ----------
    n_actions
        K >= 2.
    alpha
        width of the confidence bonus, in posterior standard deviations (>= 0).
    l2
        prior precision of every coefficient (ridge penalty, > 0).
    beta
        noise precision of the rewards (> 0).
    fit_intercept
        append a constant 1 feature (after standardisation).
    standardize
        online feature scaling
        (``RunningScaler``): ``"mean"`` (river's
        StandardScaler, best for the ridge regressions), ``"auto"`` (one-hot zeros kept) or False
        (raw features).
    random_state
        seed of tie-breaking.

    Notes
    -----
    Fitted state: ``cov_`` (K, p, p) posterior covariances A_k^{-1}, ``coef_`` (K, p)
    posterior means, ``eta_`` (K, p), ``scaler_``, ``n_features_in_``.

    Examples
    --------
    >>> import numpy as np
    >>> learner = LinUCB(n_actions=2, standardize=False, random_state=0)
    >>> x = np.array([1.0, 0.0])
    >>> learner.learn_one(x, 1, 1.0)  # arm 1: A = I + x x^T (with the bias), theta = A^-1 x
    >>> learner.ucb_one(x).round(3)  # theta.x + sqrt(1 + x^T A^-1 x)
    array([1.732, 1.958])
    """

    name: ClassVar[str] = "linucb"

    def __init__(
        self,
        *,
        n_actions: int = 2,
        alpha: float = 1.0,
        l2: float = 1.0,
        beta: float = 1.0,
        fit_intercept: bool = True,
        standardize: str | bool = "mean",
        random_state: int | None = None,
    ) -> None:
        self.n_actions = n_actions
        self.alpha = alpha
        self.l2 = l2
        self.beta = beta
        self.fit_intercept = fit_intercept
        self.standardize = standardize
        self.random_state = random_state

    _parameter_constraints: ClassVar[dict] = {
        **_RidgeBandit._parameter_constraints,
        "alpha": [Interval(Real, 0.0, None, fix="alpha=0 plays greedily")],
    }

    def _ucb(self, xb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        cov_x = self.cov_ @ xb  # (K, p)
        width = np.sqrt(1.0 / self.beta + cov_x @ xb)
        return self.coef_ @ xb + self.alpha * width, cov_x

    def ucb_one(self, x: np.ndarray) -> np.ndarray:
        """Upper confidence bounds (K,) of the actions for context ``x`` (d,)."""
        return self._ucb(self._prepare(x))[0]

    def action_probs_one(self, x: np.ndarray) -> np.ndarray:
        """Point mass on argmax_k of the bounds (K,), split evenly over ties."""
        ucb = self.ucb_one(x)
        best = ucb == ucb.max()
        return best / best.sum()

    def action_probs_many(self, X: np.ndarray) -> np.ndarray:
        """(n, K) point masses on the argmax bound of each row of ``X`` (n, d)."""
        Xb = self._features_many(X)
        cov_x = np.einsum("kij,nj->nki", self.cov_, Xb)
        ucb = Xb @ self.coef_.T + self.alpha * np.sqrt(
            1.0 / self.beta + np.einsum("nki,ni->nk", cov_x, Xb)
        )
        best = ucb == ucb.max(axis=1, keepdims=True)
        return best / best.sum(axis=1, keepdims=True)

    def predict_one(self, x: np.ndarray) -> int:
        """The action of largest upper confidence bound (random tie-break)."""
        xb = self._prepare(x, learn=True)
        ucb, cov_x = self._ucb(xb)
        top = self._argmax(ucb)
        self._last_x, self._last_xb, self._last_cov_x, self._last_top = x, xb, cov_x, top
        return top

    @classmethod
    def _unit_test_params(cls) -> dict[str, Any]:
        return {"n_actions": 3, "random_state": 0}


class EpsilonGreedyLinear(_RidgeBandit):
    """ε-greedy on per-action ridge regressions of the reward.

    Parameters
    ----------
    n_actions
        K >= 2.
    epsilon
        probability of a uniform action, in [0, 1].
    l2, beta
        prior and noise precisions of the ridge regressions (> 0); the greedy action
        depends on their ratio only.
    fit_intercept
        append a constant 1 feature (after standardisation).
    standardize
        online feature scaling
        (``RunningScaler``): ``"mean"`` (river's
        StandardScaler, best for the ridge regressions), ``"auto"`` (one-hot zeros kept) or False
        (raw features).
    random_state
        seed of the exploration and of tie-breaking.

    Notes
    -----
    Fitted state: as [`LinUCB`][opboost.algorithms.online.linear_bandits.LinUCB].
    """

    name: ClassVar[str] = "epsilon_greedy"

    def __init__(
        self,
        *,
        n_actions: int = 2,
        epsilon: float = 0.05,
        l2: float = 1.0,
        beta: float = 1.0,
        fit_intercept: bool = True,
        standardize: str | bool = "mean",
        random_state: int | None = None,
    ) -> None:
        self.n_actions = n_actions
        self.epsilon = epsilon
        self.l2 = l2
        self.beta = beta
        self.fit_intercept = fit_intercept
        self.standardize = standardize
        self.random_state = random_state

    _parameter_constraints: ClassVar[dict] = {
        **_RidgeBandit._parameter_constraints,
        "epsilon": [Interval(Real, 0.0, 1.0, fix="e.g. 0.05")],
    }

    def action_probs_one(self, x: np.ndarray) -> np.ndarray:
        """(K,): 1 - epsilon split over the argmax actions, epsilon / K on every action."""
        xb = self._prepare(x)
        scores = self.coef_ @ xb
        best = scores == scores.max()
        return (1.0 - self.epsilon) * best / best.sum() + self.epsilon / self._K

    def action_probs_many(self, X: np.ndarray) -> np.ndarray:
        """(n, K) ε-greedy distributions for the rows of ``X`` (n, d)."""
        scores = self._features_many(X) @ self.coef_.T
        best = scores == scores.max(axis=1, keepdims=True)
        return (1.0 - self.epsilon) * best / best.sum(axis=1, keepdims=True) + (
            self.epsilon / self._K
        )

    def predict_one(self, x: np.ndarray) -> int:
        """The greedy action w.p. 1 - epsilon, else a uniform action."""
        xb = self._prepare(x, learn=True)
        top = self._argmax(self.coef_ @ xb)
        self._last_x, self._last_xb, self._last_cov_x, self._last_top = x, xb, None, top
        if self._rng.random() < self.epsilon:
            return int(self._rng.integers(self._K))
        return top

    @classmethod
    def _unit_test_params(cls) -> dict[str, Any]:
        return {"n_actions": 3, "random_state": 0}
