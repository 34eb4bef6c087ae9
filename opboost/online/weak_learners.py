"""Banks of online binary weak learners for one-vs-rest bandit boosting.

Chen, Lin & Lu (2014) run N copies of an online binary learner on the one-vs-rest examples
((x, k), y_k). As in their Section 3, each learner i is K binary hypotheses
h^{(i)}(x, k) = h^{(i)}_k(x): the pair (x, k) is encoded by giving every class its own block
of parameters (Kesler's construction). A bank therefore holds K x N binary learners and
exposes them as arrays:

``predict(x) -> (K, N)``
    hypotheses h^{(i)}_k(x) in [-1, 1] (here: {-1, +1} labels).
``margins(x) -> (K, N)``
    real-valued confidences (perceptron score, naive Bayes log-odds) for margin decoding.
``learn(k, x, y, w, h_k)``
    update the N learners of class k on label y in {-1, +1} with per-learner weights w (N,);
    ``h_k`` is row k of the last ``predict`` (saves recomputing it).

The numpy banks update all N learners with array operations (no loop over learners).
:class:`RiverBank` wraps any river binary classifier, one model per (k, i).

Weighted learning: the numpy banks use the weights exactly (weighted perceptron step,
weighted sufficient statistics). River models whose ``learn_one`` accepts ``w`` get
``w=w_i``; others (e.g. ``naive_bayes.GaussianNB``) learn the example Poisson(w_i) times,
which matches the weighted update in expectation (Oza & Russell 2001), with a seeded rng.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import numpy as np

from opboost.exceptions import InvalidParameterError

__all__ = [
    "BANKS",
    "GaussianNBBank",
    "PassiveAggressiveBank",
    "PerceptronBank",
    "RiverBank",
    "make_bank",
]


class PerceptronBank:
    """K x N online perceptrons with weighted mistake-driven updates.

    Parameters: ``n_actions`` K, ``n_learners`` N, ``n_features`` d, ``rng`` (seeded
    Generator), ``learning_rate`` (step size), ``init_scale`` (std of the random initial
    weights: the paper's "random h_1").
    State: ``W`` (K, N, d) and ``b`` (K, N). Hypothesis h = sign(W[k, i] . x + b[k, i]).
    """

    def __init__(
        self,
        n_actions: int,
        n_learners: int,
        n_features: int,
        rng: np.random.Generator,
        *,
        learning_rate: float = 1.0,
        init_scale: float = 0.01,
    ) -> None:
        self.n_actions, self.n_learners, self.n_features = n_actions, n_learners, n_features
        self.learning_rate = learning_rate
        self.W = rng.normal(0.0, init_scale, size=(n_actions, n_learners, n_features))
        self.b = rng.normal(0.0, init_scale, size=(n_actions, n_learners))
        # flat views sharing memory: one matrix-vector product scores all K x N learners
        self._W2 = self.W.reshape(n_actions * n_learners, n_features)
        self._b2 = self.b.reshape(n_actions * n_learners)
        self._shape = (n_actions, n_learners)

    def margins(self, x: np.ndarray) -> np.ndarray:
        """Scores W[k, i] . x + b[k, i], shape (K, N)."""
        scores = self._W2 @ x
        scores += self._b2
        return scores.reshape(self._shape)

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Hypotheses sign(score) in {-1, 0, +1}, shape (K, N) (0 only on an exact tie)."""
        scores = self._W2 @ x
        scores += self._b2
        return np.sign(scores, out=scores).reshape(self._shape)

    def predict_batch(self, X: np.ndarray) -> np.ndarray:
        """Hypotheses for every row of X (n, d): shape (n, K, N)."""
        scores = np.einsum("knd,md->mkn", self.W, X) + self.b
        return np.sign(scores)

    def learn(self, k: int, x: np.ndarray, y: float, w: np.ndarray, h_k: np.ndarray) -> None:
        """Weighted perceptron step on every learner of class k that erred (y * h <= 0)."""
        step = y * h_k <= 0.0
        if step.any():
            step = step * w
            step *= self.learning_rate * y
            self.W[k] += step[:, None] * x
            self.b[k] += step


class PassiveAggressiveBank(PerceptronBank):
    """K x N passive-aggressive (PA-I, Crammer et al. 2006) learners, margin-driven.

    Same state as :class:`PerceptronBank`; ``learn`` takes the hinge loss
    l = max(0, 1 - y s) of the score s (not only sign mistakes) and steps
    tau = min(C w_i, l / (||x||^2 + 1)) along y [x, 1].
    """

    def __init__(
        self,
        n_actions: int,
        n_learners: int,
        n_features: int,
        rng: np.random.Generator,
        *,
        C: float = 1.0,
        init_scale: float = 0.0,
    ) -> None:
        super().__init__(n_actions, n_learners, n_features, rng, init_scale=init_scale)
        self.C = C

    def learn(self, k: int, x: np.ndarray, y: float, w: np.ndarray, h_k: np.ndarray) -> None:
        """PA-I step on every learner of class k with positive hinge loss; weights cap tau."""
        loss = np.maximum(0.0, 1.0 - y * (self.W[k] @ x + self.b[k]))
        if loss.any():
            tau = np.minimum(self.C * w, loss / (x @ x + 1.0)) * y
            self.W[k] += np.multiply.outer(tau, x)
            self.b[k] += tau


class GaussianNBBank:
    """K x N weighted Gaussian naive Bayes binary learners.

    Each (k, i) keeps, for labels -1 and +1, a weighted count, per-feature means and
    weighted sums of squared deviations (West's weighted Welford update), plus
    ``var_smoothing`` added to every variance. Initial state: ``prior_count`` pseudo-weight
    per label at random means N(0, ``init_scale``) and unit variance (random h_1).
    The log-odds are a quadratic in x, cached as A, B (K, N, d) and C (K, N):
    log P(+1|x) - log P(-1|x) = A . x^2 + B . x + C, so prediction is two matrix products.
    """

    def __init__(
        self,
        n_actions: int,
        n_learners: int,
        n_features: int,
        rng: np.random.Generator,
        *,
        var_smoothing: float = 1e-2,
        prior_count: float = 1.0,
        init_scale: float = 0.1,
    ) -> None:
        K, N, d = n_actions, n_learners, n_features
        self.n_actions, self.n_learners, self.n_features = K, N, d
        self.var_smoothing = var_smoothing
        self.count = np.full((K, N, 2), float(prior_count))
        self.mean = rng.normal(0.0, init_scale, size=(K, N, 2, d))
        self.m2 = np.full((K, N, 2, d), float(prior_count))
        self.A = np.empty((K, N, d))
        self.B = np.empty((K, N, d))
        self.C = np.empty((K, N))
        for k in range(K):
            self._refresh(k)
        self._A2 = self.A.reshape(K * N, d)
        self._B2 = self.B.reshape(K * N, d)

    def _refresh(self, k: int) -> None:
        count = self.count[k]  # (N, 2)
        var = self.m2[k] / count[:, :, None] + self.var_smoothing  # (N, 2, d)
        inv = 1.0 / var
        mean = self.mean[k]
        a = -0.5 * inv
        b = mean * inv
        c = (-0.5 * (mean * b + np.log(var))).sum(axis=2) + np.log(count)  # (N, 2)
        self.A[k] = a[:, 1] - a[:, 0]
        self.B[k] = b[:, 1] - b[:, 0]
        self.C[k] = c[:, 1] - c[:, 0]

    def margins(self, x: np.ndarray) -> np.ndarray:
        """Log-odds log P(+1|x) - log P(-1|x), shape (K, N)."""
        out = self._A2 @ (x * x) + self._B2 @ x
        return out.reshape(self.n_actions, self.n_learners) + self.C

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Hypotheses sign(log-odds), shape (K, N)."""
        return np.sign(self.margins(x))

    def predict_batch(self, X: np.ndarray) -> np.ndarray:
        """Hypotheses for every row of X (n, d): shape (n, K, N)."""
        scores = np.einsum("knd,md->mkn", self.A, X * X) + np.einsum("knd,md->mkn", self.B, X)
        return np.sign(scores + self.C)

    def learn(self, k: int, x: np.ndarray, y: float, w: np.ndarray, h_k: np.ndarray) -> None:
        """Add x with weights w (N,) to the label-y statistics of every learner of class k."""
        c = 1 if y > 0 else 0
        count = self.count[k, :, c]  # (N,) view
        mean = self.mean[k, :, c]  # (N, d) view
        new_count = count + w
        delta = x - mean
        mean += (w / new_count)[:, None] * delta
        self.m2[k, :, c] += w[:, None] * delta * (x - mean)
        count[:] = new_count
        self._refresh(k)


class RiverBank:
    """K x N river binary classifiers, one per (k, i); river is imported lazily.

    ``spec`` is ``"module.Class"`` inside river, e.g. ``"linear_model.Perceptron"``.
    ``params`` go to every model's constructor; a model whose constructor takes ``seed``
    gets a distinct seed drawn from ``rng``. Contexts become dicts {j: x_j}.
    """

    def __init__(
        self,
        spec: str,
        n_actions: int,
        n_learners: int,
        n_features: int,
        rng: np.random.Generator,
        **params: Any,
    ) -> None:
        cls = _river_class(spec)
        takes_seed = "seed" in inspect.signature(cls).parameters
        self.n_actions, self.n_learners, self.n_features = n_actions, n_learners, n_features
        self.models = [
            [
                cls(**params, **({"seed": int(rng.integers(2**31))} if takes_seed else {}))
                for _ in range(n_learners)
            ]
            for _ in range(n_actions)
        ]
        self.weighted = "w" in inspect.signature(cls.learn_one).parameters
        self._rng = rng
        self._keys = list(range(n_features))

    def _dict(self, x: np.ndarray) -> dict[int, float]:
        return dict(zip(self._keys, x.tolist(), strict=True))

    def margins(self, x: np.ndarray) -> np.ndarray:
        """2 P(+1|x) - 1 for every model, shape (K, N)."""
        xd = self._dict(x)
        return np.array(
            [
                [2.0 * m.predict_proba_one(xd).get(True, 0.0) - 1.0 for m in row]
                for row in self.models
            ]
        )

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Hypotheses in {-1, +1} (a model that has seen nothing says -1), shape (K, N)."""
        xd = self._dict(x)
        return np.array(
            [[1.0 if m.predict_one(xd) is True else -1.0 for m in row] for row in self.models]
        )

    def predict_batch(self, X: np.ndarray) -> np.ndarray:
        """Hypotheses for every row of X (n, d): shape (n, K, N)."""
        return np.stack([self.predict(row) for row in X])

    def learn(self, k: int, x: np.ndarray, y: float, w: np.ndarray, h_k: np.ndarray) -> None:
        """Learn (x, y > 0) on the N models of class k, weight w_i (or Poisson(w_i) repeats)."""
        xd = self._dict(x)
        label = bool(y > 0)
        if self.weighted:
            for model, wi in zip(self.models[k], w.tolist(), strict=True):
                if wi > 0.0:
                    model.learn_one(xd, label, w=wi)
        else:
            for model, reps in zip(self.models[k], self._rng.poisson(w).tolist(), strict=True):
                for _ in range(reps):
                    model.learn_one(xd, label)


def _river_class(spec: str) -> type:
    module_name, _, class_name = spec.rpartition(".")
    try:
        module = importlib.import_module(f"river.{module_name}")
        return getattr(module, class_name)
    except (ImportError, AttributeError, ValueError) as err:
        raise InvalidParameterError(
            f"weak_learner='river:{spec}' does not name a river class ({err}). Use "
            f"'river:<module>.<Class>', e.g. 'river:linear_model.Perceptron' or "
            f"'river:tree.HoeffdingTreeClassifier'."
        ) from err


#: Names of the numpy banks accepted as ``weak_learner``.
BANKS: dict[str, type] = {
    "perceptron": PerceptronBank,
    "passive_aggressive": PassiveAggressiveBank,
    "gaussian_nb": GaussianNBBank,
}


def make_bank(
    spec: str,
    n_actions: int,
    n_learners: int,
    n_features: int,
    rng: np.random.Generator,
    params: dict[str, Any] | None = None,
    owner: str = "bank",
) -> PerceptronBank | GaussianNBBank | RiverBank:
    """Build the bank named ``spec``: "perceptron", "gaussian_nb" or "river:<module>.<Class>"."""
    params = dict(params or {})
    if isinstance(spec, str) and spec.startswith("river:"):
        return RiverBank(spec[len("river:") :], n_actions, n_learners, n_features, rng, **params)
    if spec not in BANKS:
        raise InvalidParameterError(
            f"The 'weak_learner' parameter of {owner} must be one of {sorted(BANKS)} or "
            f"'river:<module>.<Class>'. Got {spec!r} instead; e.g. "
            f"weak_learner='river:naive_bayes.GaussianNB'."
        )
    try:
        return BANKS[spec](n_actions, n_learners, n_features, rng, **params)
    except TypeError as err:
        raise InvalidParameterError(
            f"The 'weak_learner_params' parameter of {owner} has a key that weak learner "
            f"{spec!r} does not accept ({err}). Got {params!r} instead."
        ) from err
