"""A linear reward model per action: ridge regressions with the penalty chosen by exact
leave-one-out error, on dense or sparse contexts.

q(x, a) = b_a + x . w_a with w_a = w + v_a: a shared ridge regression w of the logged rewards on
every logged row, then one ridge regression v_a per action on the residuals of its own rows
(the per-action models shrink towards the shared one; Vowpal Wabbit's ``-q sa`` model with
an L2 penalty, fitted in closed form). Every penalty is chosen among :data:`ALPHAS` by the
exact leave-one-out squared error of ridge regression with an unpenalised intercept (the
hat-matrix identity e_i / (1 - h_ii), as scikit-learn's ``RidgeCV`` computes it), from one
eigendecomposition: of the centred Gram matrix X^T X (d, d) when n >= d, or of the centred
kernel X X^T (n, n) when n < d. Sparse contexts are never densified in the first case.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["ALPHAS", "LinearRewards", "fit_linear_rewards", "ridge_loo", "times"]

#: Candidate ridge penalties (in units of squared feature scale times rows).
ALPHAS: np.ndarray = np.logspace(-2, 5, 29)
#: Rows of the (rows, d) blocks densified at once while scoring leave-one-out errors.
_CHUNK = 8192
#: Fewest rows an action needs for a ridge of its own (else it keeps the shared model).
MIN_ACTION_ROWS = 3


@dataclass(frozen=True)
class Ridge:
    """A fitted ridge regression: y ~ intercept + X @ coef, penalty ``alpha``."""

    coef: np.ndarray
    intercept: float
    alpha: float


@dataclass(frozen=True)
class LinearRewards:
    """q(x, a) = intercepts[a] + x @ weights[:, a]; ``weights`` (d, K), ``intercepts`` (K,);
    ``alphas`` (K + 1,): the shared penalty, then each action's (NaN: no ridge of its own).
    ``columns``: the context columns read, when not all (the others, which may hold missing
    values, have weight 0); None: every column."""

    weights: np.ndarray
    intercepts: np.ndarray
    alphas: np.ndarray
    columns: np.ndarray | None = None

    def predict(self, X: Any) -> np.ndarray:
        """q on every (row, action) pair of the contexts ``X`` (m, d): (m, K)."""
        if self.columns is None:
            return times(X, self.weights) + self.intercepts
        return times(X[:, self.columns], self.weights[self.columns]) + self.intercepts


def _dense(X: Any) -> np.ndarray:
    """``X`` (rows, d) as a dense float64 array (float32 contexts are widened exactly)."""
    return np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)


def times(X: Any, M: np.ndarray) -> np.ndarray:
    """X @ M for contexts ``X`` (m, d) of any float dtype and ``M`` (d, ...) float64, computed
    in float64 on widened rows: float32 contexts give float64's result to the bit (numpy's
    mixed-dtype product may sum in another order)."""
    if sp.issparse(X):
        return np.asarray(X.astype(np.float64) @ M)
    if X.dtype == np.float64:
        return X @ M
    out = np.empty((X.shape[0], *M.shape[1:]))
    for start in range(0, X.shape[0], _CHUNK):
        out[start : start + _CHUNK] = _dense(X[start : start + _CHUNK]) @ M
    return out


def _column_means(X: Any) -> np.ndarray:
    """Column means (d,) of the float64 rows (float32 contexts give float64's to the bit)."""
    if sp.issparse(X):
        return np.asarray(X.astype(np.float64).sum(axis=0)).ravel() / X.shape[0]
    total = np.zeros(X.shape[1])
    for start in range(0, X.shape[0], _CHUNK):
        total += _dense(X[start : start + _CHUNK]).sum(axis=0)
    return total / X.shape[0]


def _centred_gram(X: Any, yc: np.ndarray, mu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(Xc^T Xc (d, d), Xc^T yc (d,)) of the centred rows, in float64, without a centred or
    widened copy of ``X`` (dense rows are widened a block at a time)."""
    n, d = X.shape
    if sp.issparse(X):
        wide = X.astype(np.float64)
        gram = (wide.T @ wide).toarray() - n * np.outer(mu, mu)
        return gram, np.asarray(wide.T @ yc).ravel()  # yc sums to 0: no centring term
    gram, z = np.zeros((d, d)), np.zeros(d)
    for start in range(0, n, _CHUNK):
        block = _dense(X[start : start + _CHUNK]) - mu
        gram += block.T @ block
        z += block.T @ yc[start : start + _CHUNK]
    return gram, z


def _primal(X: Any, yc: np.ndarray, mu: np.ndarray, alphas: np.ndarray) -> tuple:
    """(coefficients (d, A) for every penalty, leave-one-out SSE (A,)) for n >= d."""
    n = X.shape[0]
    gram, z = _centred_gram(X, yc, mu)
    s, V = np.linalg.eigh(gram)
    inv = 1.0 / (np.clip(s, 0.0, None)[:, None] + alphas[None, :])  # (d, A)
    coefs = V @ ((V.T @ z)[:, None] * inv)
    sse = np.zeros(len(alphas))
    for start in range(0, n, _CHUNK):
        block = _dense(X[start : start + _CHUNK]) - mu
        projected = block @ V
        leverage = (projected * projected) @ inv + 1.0 / n  # h_ii with the intercept's 1/n
        residual = yc[start : start + _CHUNK, None] - block @ coefs
        sse += np.sum((residual / (1.0 - leverage)) ** 2, axis=0)
    return coefs, sse


def _dual(X: Any, yc: np.ndarray, mu: np.ndarray, alphas: np.ndarray) -> tuple:
    """(coefficients (d, A), leave-one-out SSE (A,)) for n < d, from the (n, n) kernel."""
    n = X.shape[0]
    centred = _dense(X) - mu
    s, U = np.linalg.eigh(centred @ centred.T)
    s = np.clip(s, 0.0, None)[:, None]
    p = U.T @ yc
    shrunk = s / (s + alphas[None, :])  # (n, A)
    fitted = U @ (p[:, None] * shrunk)
    leverage = (U * U) @ shrunk + 1.0 / n
    sse = np.sum(((yc[:, None] - fitted) / (1.0 - leverage)) ** 2, axis=0)
    coefs = centred.T @ (U @ (p[:, None] / (s + alphas[None, :])))
    return coefs, sse


def ridge_loo(X: Any, y: np.ndarray, alphas: np.ndarray = ALPHAS) -> Ridge:
    """Ridge regression of ``y`` (n,) on ``X`` (n, d) (dense or CSR) with an unpenalised
    intercept, its penalty the one of ``alphas`` with the smallest exact leave-one-out squared
    error (ties: the first). Needs n >= 2."""
    n = X.shape[0]
    y = np.asarray(y, dtype=np.float64)
    alphas = np.asarray(alphas, dtype=np.float64)
    mean_y = float(y.mean())
    mu = _column_means(X)
    solve = _primal if X.shape[1] <= n else _dual
    coefs, sse = solve(X, y - mean_y, mu, alphas)
    best = int(np.argmin(sse))
    coef = coefs[:, best]
    return Ridge(coef, mean_y - float(mu @ coef), float(alphas[best]))


def fit_linear_rewards(
    X: Any, actions: np.ndarray, rewards: np.ndarray, n_actions: int
) -> LinearRewards:
    """The shared-plus-per-action ridge model of the module doc from the logged rows:
    contexts ``X`` (n, d), ``actions`` and ``rewards`` (n,). Actions with fewer than
    :data:`MIN_ACTION_ROWS` rows keep the shared model."""
    rewards = np.asarray(rewards, dtype=np.float64)
    shared = ridge_loo(X, rewards)
    residual = rewards - (times(X, shared.coef) + shared.intercept)
    weights = np.repeat(shared.coef[:, None], n_actions, axis=1)
    intercepts = np.full(n_actions, shared.intercept)
    alphas = np.full(n_actions + 1, np.nan)
    alphas[0] = shared.alpha
    for a in range(n_actions):
        rows = np.flatnonzero(actions == a)
        if len(rows) < MIN_ACTION_ROWS:
            continue
        own = ridge_loo(X[rows], residual[rows])
        weights[:, a] += own.coef
        intercepts[a] += own.intercept
        alphas[a + 1] = own.alpha
    return LinearRewards(weights, intercepts, alphas)
