"""Featurising (context, action) pairs: the paper's stacked design [x; onehot(a)].

London et al. appendix F.5: each example becomes K rows, one per action, whose features are
the context followed by a one-hot encoding of the action (``action_encoding="onehot"``, K
columns) or, for learners with categorical splits, the action index (``"index"``, 1 column).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["ENCODINGS", "action_rows", "stacked_design"]


ENCODINGS = ("onehot", "index")


def _action_csr(actions: np.ndarray, n_actions: int, encoding: str, dtype: Any) -> sp.csr_matrix:
    n = len(actions)
    if encoding == "onehot":
        return sp.csr_matrix(
            (np.ones(n, dtype), (np.arange(n), actions)), shape=(n, n_actions), dtype=dtype
        )
    return sp.csr_matrix(actions.astype(dtype)[:, None])


def action_rows(
    X: Any,
    actions: np.ndarray,
    n_actions: int,
    *,
    dtype: Any = np.float64,
    action_encoding: str = "onehot",
) -> Any:
    """[x_i; a_i] for one action per row: (n, d + K) one-hot or (n, d + 1) index; CSR if X is."""
    if action_encoding not in ENCODINGS:
        raise ValueError(f"action_encoding must be one of {ENCODINGS}; got {action_encoding!r}.")
    actions = np.asarray(actions, dtype=np.int64)
    if sp.issparse(X):
        extra = _action_csr(actions, n_actions, action_encoding, dtype)
        return sp.hstack([sp.csr_matrix(X, dtype=dtype), extra], format="csr")
    X = np.asarray(X)
    n, d = X.shape
    onehot = action_encoding == "onehot"
    rows = np.zeros((n, d + (n_actions if onehot else 1)), dtype=dtype)
    rows[:, :d] = X
    if onehot:
        rows[np.arange(n), d + actions] = 1.0
    else:
        rows[:, d] = actions
    return rows


def stacked_design(
    X: Any, n_actions: int, *, dtype: Any = np.float64, action_encoding: str = "onehot"
) -> Any:
    """All K (x, a) rows of every example, example-major: row i*K + a is [x_i; a].

    Shape (n*K, d + K) one-hot or (n*K, d + 1) index; CSR if X is sparse. Reshape (n*K,)
    predictions to (n, K).
    """
    n = X.shape[0]
    repeated = np.repeat(np.arange(n), n_actions)
    actions = np.tile(np.arange(n_actions), n)
    X = sp.csr_matrix(X) if sp.issparse(X) else np.asarray(X)
    return action_rows(
        X[repeated], actions, n_actions, dtype=dtype, action_encoding=action_encoding
    )
