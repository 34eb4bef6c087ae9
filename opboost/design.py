"""Featurising (context, action) pairs: the paper's stacked design [x; onehot(a)].

London et al. appendix F.5: each example becomes K rows, one per action, whose features are
the context followed by a one-hot encoding of the action.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["action_rows", "stacked_design"]


def action_rows(X: Any, actions: np.ndarray, n_actions: int) -> Any:
    """[x_i; onehot(a_i)] for one action per row: (n, d + K), sparse if X is."""
    n = X.shape[0]
    onehot = np.zeros((n, n_actions))
    onehot[np.arange(n), np.asarray(actions, dtype=np.int64)] = 1.0
    if sp.issparse(X):
        return sp.hstack([X, sp.csr_matrix(onehot)], format="csr")
    return np.hstack([np.asarray(X, dtype=np.float64), onehot])


def stacked_design(X: Any, n_actions: int) -> Any:
    """All K (x, a) rows of every example, example-major: row i*K + a is [x_i; onehot(a)].

    Shape (n*K, d + K); sparse if X is. Reshape (n*K,) predictions to (n, K).
    """
    n = X.shape[0]
    repeated_actions = np.tile(np.arange(n_actions), n)
    if sp.issparse(X):
        repeated = sp.csr_matrix(X)[np.repeat(np.arange(n), n_actions)]
    else:
        repeated = np.repeat(np.asarray(X, dtype=np.float64), n_actions, axis=0)
    return action_rows(repeated, repeated_actions, n_actions)
