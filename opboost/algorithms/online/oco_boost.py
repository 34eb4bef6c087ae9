"""Boosting with online convex optimisation (Brukhim, Chen, Hazan & Moran 2020).

Binary labels ``y ∈ {-1, +1}``. An OCO algorithm — here projected online gradient descent
(OGD) — plays the weights ``p`` against the weak learners with the linear losses
(Algorithm 4, line 6)::

    l_t(p) = Σ_i p(i) (h_t(x_i) y_i / γ - 1),     p ∈ [0, 1]^m (realizable) or [-1, 1]^m

- **realizable**: the weak learner sees example i with probability ∝ ``p(i)`` (line 3);
- **agnostic**: example i is re-labelled, ``P[ỹ_i = y_i] = (1 + p(i))/2`` (line 4; so
  ``E[ỹ_i] = p(i) y_i``, Lemma 13);
- output: the randomized majority vote ``Π(1/(γT) Σ_t h_t(x))`` (line 9): ``sign(z)`` when
  ``|z| >= 1``, else +1 with probability ``(1 + z)/2``.

Two ways to run it:

- :meth:`OCOBoost.fit` / :meth:`OCOBoost.predict` — Algorithm 4 on a sample, T =
  ``n_learners`` rounds, OGD over the m example weights, decision stumps (scikit-learn
  ``DecisionTreeClassifier(max_depth=1)``) trained on ``sample_size`` draws per round.
- :meth:`OCOBoost.learn_one` / :meth:`OCOBoost.predict_one` — the online version: N online
  weak learners (logistic-loss linear models trained by OGD, vectorised), and for each
  example OGD runs over i = 1..N on ``l^i(p) = p (W_i(x) y / γ - 1)`` (the OCO sequence of
  the proof of Theorem 11); learner i sees the example with probability ``p^i``
  (realizable) or the label re-drawn with ``P[ỹ = y] = (1 + p^i)/2`` (agnostic).
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np

from opboost.algorithms.online.parameters import N_LEARNERS, STANDARDIZE
from opboost.algorithms.online.scaling import make_scaler, scale_one
from opboost.api.constraints import Interval, Options
from opboost.api.exceptions import InvalidParameterError
from opboost.api.online import OnlineLearner, as_context
from opboost.api.validation import check_fitted, check_random_state

__all__ = ["OCOBoost", "randomized_vote"]


def randomized_vote(z: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The randomized majority vote ``Π(z)`` of scores ``z`` (n,): ±1 labels (n,).

    ``+1`` with probability ``clip((1 + z)/2, 0, 1)``: ``sign(z)`` when ``|z| >= 1``.
    """
    return np.where(rng.random(np.shape(z)) < np.clip((1.0 + z) / 2.0, 0.0, 1.0), 1, -1)


def _labels(y: Any, owner: str) -> np.ndarray:
    y = np.asarray(y)
    if not np.isin(y, (-1, 1)).all():
        bad = y[~np.isin(y, (-1, 1))].ravel()[:3]
        raise InvalidParameterError(
            f"{owner}: labels must be -1 or +1. Got {bad.tolist()}; map 0/1 labels with 2*y-1."
        )
    return y.astype(np.int64)


class OCOBoost(OnlineLearner):
    """Boosting with OCO (OGD) over example weights, realizable or agnostic.

    Parameters
    ----------
    n_learners
        T rounds of [`fit`][opboost.algorithms.online.oco_boost.OCOBoost.fit], or N online weak
        learners.
    mode
        ``"realizable"`` (re-weighting, p ∈ [0, 1]) or ``"agnostic"`` (re-labelling,
        p ∈ [-1, 1]).
    gamma
        weak-learning edge γ in (0, 1].
    oco_lr
        OGD step on p; None uses ``1 / ((1/γ + 1) sqrt(n_learners))`` (diameter 1
        over gradient bound ``1/γ + 1``, times ``1/sqrt(T)``).
    weak_lr
        step of the online weak learners (logistic-loss OGD).
    sample_size
        m_0, draws per round passed to the stump in
        [`fit`][opboost.algorithms.online.oco_boost.OCOBoost.fit] (None: m).
    vote
        ``"randomized"`` (the paper's Π) or ``"deterministic"`` (``sign(z)``).
    standardize
        online scaling by the running std
        (``RunningScaler``; a context joins the statistics
        in ``learn_one``): ``"auto"`` centres at the running mean except two-valued features
        (one-hot zeros kept), ``"mean"`` is river's StandardScaler, False feeds raw features.
        Online path only ([`fit`][opboost.algorithms.online.oco_boost.OCOBoost.fit]'s stumps are
        scale-invariant).
    random_state
        seed of sampling, re-labelling and the randomized vote.

    References
    ----------
    Brukhim, Chen, Hazan & Moran (2020), Online Agnostic Boosting via Regret Minimization,
    NeurIPS, Algorithm 4 (appendix A) and §4.
    """

    name: ClassVar[str] = "oco_boost"
    #: Full-information binary labels (not bandit): ``learn_one(x, y)`` with y = ±1.
    feedback: ClassVar[str] = "label"

    _parameter_constraints: ClassVar[dict] = {
        "n_learners": N_LEARNERS("e.g. n_learners=20"),
        "mode": [Options(("realizable", "agnostic"))],
        "gamma": [
            Interval(
                Real, 0.0, 1.0, closed="right", fix="gamma is the weak learner's edge, e.g. 0.1"
            )
        ],
        "oco_lr": [Interval(Real, 0.0, None, closed="right"), None],
        "weak_lr": [Interval(Real, 0.0, None, closed="right")],
        "sample_size": [Interval(Integral, 1, None), None],
        "vote": [Options(("randomized", "deterministic"))],
        "standardize": STANDARDIZE,
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        *,
        n_learners: int = 20,
        mode: str = "realizable",
        gamma: float = 0.5,
        oco_lr: float | None = None,
        weak_lr: float = 0.5,
        sample_size: int | None = None,
        vote: str = "randomized",
        standardize: str | bool = "auto",
        random_state: int | None = None,
    ) -> None:
        self.n_learners = n_learners
        self.mode = mode
        self.gamma = gamma
        self.oco_lr = oco_lr
        self.weak_lr = weak_lr
        self.sample_size = sample_size
        self.vote = vote
        self.standardize = standardize
        self.random_state = random_state

    # --- shared -----------------------------------------------------------------------------

    def _validate(self) -> None:
        self.validate_params()
        self._rng = check_random_state(self.random_state)
        self._p_low = 0.0 if self.mode == "realizable" else -1.0
        self._eta = self.oco_lr or 1.0 / ((1.0 / self.gamma + 1.0) * np.sqrt(self.n_learners))

    def _ogd_step(self, p: np.ndarray, h_y: np.ndarray) -> np.ndarray:
        """``Π(p - η ∇l(p))`` with ``∇l = h y / γ - 1`` (line 6–7), onto [p_low, 1]."""
        return np.clip(p - self._eta * (h_y / self.gamma - 1.0), self._p_low, 1.0)

    def _output(self, z: np.ndarray) -> np.ndarray:
        if self.vote == "deterministic":
            return np.where(z >= 0, 1, -1)
        return randomized_vote(z, self._rng)

    # --- Algorithm 4 on a sample ---------------------------------------------------------------

    def fit(self, X: np.ndarray, y: np.ndarray) -> OCOBoost:
        """Algorithm 4 on ``X`` (m, d), ``y`` (m,) in {-1, +1}; stores ``estimators_``."""
        from sklearn.tree import DecisionTreeClassifier

        self._validate()
        X = np.asarray(X, dtype=np.float64)
        y = _labels(y, "OCOBoost.fit")
        m = X.shape[0]
        m0 = self.sample_size or m
        p = np.ones(m)
        self.estimators_: list[Any] = []
        for _ in range(self.n_learners):
            if self.mode == "realizable":
                if p.sum() <= 0:  # footnote 4: repeat the previous hypothesis
                    h = self.estimators_[-1]
                else:
                    idx = self._rng.choice(m, size=m0, p=p / p.sum())
                    h = DecisionTreeClassifier(max_depth=1).fit(X[idx], y[idx])
            else:
                idx = self._rng.integers(m, size=m0)
                keep = self._rng.random(m0) < (1.0 + p[idx]) / 2.0
                h = DecisionTreeClassifier(max_depth=1).fit(X[idx], np.where(keep, y[idx], -y[idx]))
            self.estimators_.append(h)
            p = self._ogd_step(p, h.predict(X) * y)
        self.weights_ = p
        return self

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        """``z = 1/(γT) Σ_t h_t(x)`` (n,) of the fitted ensemble (before the vote)."""
        check_fitted(self, "estimators_")
        X = np.asarray(X, dtype=np.float64)
        total = sum(h.predict(X).astype(np.float64) for h in self.estimators_)
        return total / (self.gamma * len(self.estimators_))

    def predict(self, X: np.ndarray) -> np.ndarray:
        """±1 labels (n,) by the (randomized) majority vote of line 9."""
        return self._output(self.decision_function(X))

    # --- online ---------------------------------------------------------------------------------

    def _x(self, x: Any, learn: bool = False) -> np.ndarray:
        """``x`` (d,) standardised (then added to the scaler's statistics if ``learn``)."""
        W = getattr(self, "_W", None)
        x = as_context(x, None if W is None else W.shape[1] - 1, "OCOBoost")
        if W is None:
            self._validate()
            self._scaler = make_scaler(self.standardize, x.shape[0], "OCOBoost")
            self._W = np.zeros((self.n_learners, x.shape[0] + 1))
        return scale_one(self._scaler, x, learn)

    def _weak_votes(self, x: np.ndarray) -> np.ndarray:
        return np.where(self._W[:, :-1] @ x + self._W[:, -1] >= 0, 1.0, -1.0)

    def score_one(self, x: np.ndarray) -> float:
        """``z = 1/(γN) Σ_i W_i(x)`` for one context ``x`` (d,)."""
        x = self._x(x)
        return float(self._weak_votes(x).sum() / (self.gamma * self.n_learners))

    def predict_one(self, x: np.ndarray) -> int:
        """±1 by the (randomized) majority vote of the N online weak learners."""
        return int(self._output(np.array(self.score_one(x))))

    def learn_one(self, x: np.ndarray, y: int) -> None:
        """OGD over i = 1..N on ``p (W_i(x) y/γ - 1)``; pass (x, y) on by p (re-weight/label)."""
        x = self._x(x, learn=True)
        y = int(_labels(y, "OCOBoost.learn_one"))
        h_y = self._weak_votes(x) * y
        p = np.empty(self.n_learners)
        p_i = 1.0
        for i in range(self.n_learners):  # sequential: p^{i+1} depends on learner i
            p[i] = p_i
            p_i = float(self._ogd_step(np.array(p_i), h_y[i]))
        if self.mode == "realizable":
            weight = (self._rng.random(self.n_learners) < p).astype(np.float64)
            labels = np.full(self.n_learners, float(y))
        else:
            weight = np.ones(self.n_learners)
            keep = self._rng.random(self.n_learners) < (1.0 + p) / 2.0
            labels = np.where(keep, y, -y).astype(np.float64)
        margin = labels * (self._W[:, :-1] @ x + self._W[:, -1])
        step = self.weak_lr * weight * labels / (1.0 + np.exp(np.clip(margin, -50, 50)))
        self._W[:, :-1] += step[:, None] * x[None, :]
        self._W[:, -1] += step

    @classmethod
    def _unit_test_params(cls) -> dict[str, Any]:
        return {"n_learners": 5, "random_state": 0}
