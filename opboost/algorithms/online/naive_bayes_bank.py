"""A bank of online Gaussian naive Bayes binary weak learners (weighted sufficient statistics),
with the interface of :mod:`opboost.algorithms.online.weak_learners`."""

from __future__ import annotations

import numpy as np

__all__ = ["GaussianNBBank"]


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
