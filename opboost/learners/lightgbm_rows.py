"""Designed rows for LightGBM: contexts expanded to (x, a) rows without materialising them.

``"stacked"`` rows are [x_i; a] with the action as ONE categorical column, ``"stacked_onehot"``
rows are the paper's [x_i; onehot(a)], ``"per_action"`` rows are the contexts themselves.
Stacked rows are example-major (row i*K + a) and are streamed to LightGBM in batches through
``lgb.Sequence``, never held as one float matrix.
"""

from __future__ import annotations

from typing import Any

import lightgbm as lgb
import numpy as np

from opboost.design import action_rows, stacked_design

__all__ = ["ACTION_DESIGNS", "StackedRows", "design_rows", "reference_rows"]

ACTION_DESIGNS = ("stacked", "stacked_onehot", "per_action")


class StackedRows(lgb.Sequence):
    """The n*K stacked rows [x_i; a] of dense contexts, produced in batches on demand.

    Row ``i*K + a`` is context i with action a, either as one trailing column holding ``a``
    (categorical) or as K trailing one-hot columns. Shape (n*K, d+1) or (n*K, d+K).
    """

    def __init__(self, X: np.ndarray, n_actions: int, onehot: bool) -> None:
        self.X, self.K, self.onehot = X, n_actions, onehot
        self.design = "stacked_onehot" if onehot else "stacked"
        self.encoding = "onehot" if onehot else "index"
        self.batch_size = n_actions * (1 << 14)  # whole examples per batch
        self.d = X.shape[1]
        self.width = self.d + (n_actions if onehot else 1)

    def __len__(self) -> int:
        return self.X.shape[0] * self.K

    def rows(self, start: int, stop: int) -> np.ndarray:
        """Stacked rows ``start:stop`` as a (stop - start, width) array."""
        if start % self.K == 0 and stop % self.K == 0:  # whole examples: a block repeat
            return design_rows(self.X[start // self.K : stop // self.K], self.K, self.design)
        i, a = np.divmod(np.arange(start, stop), self.K)
        return action_rows(self.X[i], a, self.K, dtype=self.X.dtype, action_encoding=self.encoding)

    def __getitem__(self, idx: Any) -> np.ndarray:
        if isinstance(idx, slice):
            start, stop, _ = idx.indices(len(self))
            return self.rows(start, stop)
        return self.rows(int(idx), int(idx) + 1)[0]


def design_rows(X: Any, n_actions: int, design: str) -> Any:
    """Designed rows of contexts ``X`` (m, d): (m*K, d+1 | d+K) for stacked, X itself else."""
    if design == "per_action":
        return X
    encoding = "onehot" if design == "stacked_onehot" else "index"
    dtype = X.dtype if X.dtype in (np.float32, np.float64) else np.float64
    return stacked_design(X, n_actions, dtype=dtype, action_encoding=encoding)


def reference_rows(
    X: Any, n_actions: int, design: str, rng: np.random.Generator, max_rows: int
) -> Any:
    """Up to ``max_rows`` contexts, each once, designed with action ``i % K``.

    LightGBM finds its bins on these rows rather than on a sample of the n*K stacked rows,
    where every context appears K times anyway (and, for a row sequence, sampling would go
    through Python row by row). Shape (m, d+1) or (m, d+K); dense or CSR like ``X``.
    """
    n = X.shape[0]
    idx = np.arange(n) if n <= max_rows else np.sort(rng.choice(n, max_rows, replace=False))
    if design == "per_action":
        return X[idx]
    X = X[idx]
    dtype = X.dtype if X.dtype in (np.float32, np.float64) else np.float64
    encoding = "onehot" if design == "stacked_onehot" else "index"
    return action_rows(X, idx % n_actions, n_actions, dtype=dtype, action_encoding=encoding)
