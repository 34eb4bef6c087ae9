"""Every action's prediction of a LightGBM model on [x; onehot(a)], without stacking every action.

A tree reads only the columns it splits on, so for an action whose one-hot column no tree splits
on the model predicts what it predicts with every one-hot column 0: one prediction per context
stands for all those actions. :func:`onehot_action_scores` predicts that shared value and each
split-on action's own, on CSR rows of d + 1 stored values each (a dense [x; onehot(a)] row holds
d + K), a block of rows at a time. With K = 10**6 actions and 60 contexts the stacked dense
design was 480 TB, predicted one action at a time (issue 52: PolicyChoice's doubly robust scores
ran past 600 s); the trees of such logs split on few or no action columns.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["onehot_action_scores", "split_actions"]

#: (context, action) rows predicted per LightGBM call (bounds the block's CSR and output).
_BLOCK = 1 << 18


def split_actions(booster: Any, n_features: int, n_actions: int) -> np.ndarray:
    """The actions (sorted int64) whose one-hot column of [x; onehot(a)] (column
    ``n_features + a``) some tree of the LightGBM ``booster`` splits on."""
    splits = np.asarray(booster.feature_importance(importance_type="split"))
    return np.flatnonzero(splits[n_features : n_features + n_actions] > 0).astype(np.int64)


def _rows(X: Any, rows: np.ndarray, actions: np.ndarray, n_actions: int) -> sp.csr_matrix:
    """CSR [x_rows[p]; onehot(actions[p])] (P, d + K); action -1: every one-hot column 0."""
    part = sp.csr_matrix(X[rows], dtype=np.float64)
    keep = actions >= 0
    onehot = sp.csr_matrix(
        (np.ones(int(keep.sum())), (np.flatnonzero(keep), actions[keep])),
        shape=(len(rows), n_actions),
    )
    return sp.hstack([part, onehot], format="csr")


def onehot_action_scores(
    model: Any, X: Any, n_actions: int, *, num_threads: int | None = None
) -> np.ndarray:
    """Predictions (m, K) of ``model`` (a fitted ``lightgbm.LGBMModel``) on [x_i; onehot(a)] for
    every context of ``X`` (m, d), dense or CSR, and action a: equal to predicting the stacked
    dense design, at the cost of (1 + the split-on actions) rows per context."""
    m, d = X.shape
    booster = model.booster_
    used = split_actions(booster, d, n_actions)
    options = {} if num_threads is None else {"num_threads": num_threads}
    # the shared value (action -1) then each split-on action, context-major
    actions = np.tile(np.concatenate([[-1], used]), m)
    rows = np.repeat(np.arange(m), len(used) + 1)
    values = np.empty(len(rows))
    for start in range(0, len(rows), _BLOCK):
        block = slice(start, start + _BLOCK)
        design = _rows(X, rows[block], actions[block], n_actions)
        values[block] = np.asarray(model.predict(design, **options), dtype=np.float64)
    values = values.reshape(m, len(used) + 1)
    scores = np.repeat(values[:, :1], n_actions, axis=1)
    scores[:, used] = values[:, 1:]
    return scores
