"""A round's (n, K) arithmetic over blocks of rows: the same values, no (n, K) temporaries.

A boosting round on n logged rows and K actions works on (n, K) float64 arrays (the policy,
the gradient g = e_{a_i} - pi(x_i), the regression targets and weights, the learner's
gradients). Done over blocks of rows small enough for the CPU cache, every elementwise numpy
operation and every per-row ``einsum`` gives bit for bit the value it gives on the whole
array (a ufunc computes each element alone, ``einsum("ij,ij->i")`` each row alone; tested),
while only block-sized temporaries exist: at 1M rows x 10 actions each (n, K) temporary
avoided is 80 MB.

:class:`RowWeightedProblem` is the regression problem of the built-in objectives in this
form: one weight per row, targets built a block at a time
(:func:`opboost.api.learner_toolkit.wls_gradients` feeds it to a learner without building
its (n, K) arrays).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator

import numpy as np

from opboost.api.numerics.problem import BaseProblem

__all__ = [
    "BLOCK_VALUES",
    "RowWeightedProblem",
    "add_scaled",
    "gradient_products",
    "logged_gradient",
    "row_blocks",
]

#: float64 values per block (256 KiB): small enough to stay in a core's L2 cache.
BLOCK_VALUES = 1 << 15


def row_blocks(n_rows: int, n_cols: int) -> Iterator[slice]:
    """Consecutive slices of ``n_rows`` rows, about ``BLOCK_VALUES`` values of
    ``n_cols`` columns each (at least one row)."""
    step = max(1, BLOCK_VALUES // max(1, n_cols))
    for start in range(0, n_rows, step):
        yield slice(start, min(start + step, n_rows))


def logged_gradient(probs: np.ndarray, actions: np.ndarray, rows: slice = slice(None)):
    """g = e_{a_i} - pi(x_i) on ``rows`` of the policy ``probs`` (n, K) and logged
    ``actions`` (n,): a new (m, K) float64 array (-pi, and 1 - pi at the logged action)."""
    g = np.negative(probs[rows])
    m, k = g.shape
    g.ravel()[np.arange(m) * k + actions[rows]] += 1.0
    return g


def gradient_products(
    probs: np.ndarray, actions: np.ndarray, other: np.ndarray | None = None
) -> np.ndarray:
    """sum_a g_{i,a} other_{i,a} per row, (n,), with g = :func:`logged_gradient`; ``other``
    (n, K), or None for ||g_i||^2. g is built a block of rows at a time."""
    n, k = probs.shape
    out = np.empty(n)
    for rows in row_blocks(n, k):
        g = logged_gradient(probs, actions, rows)
        np.einsum("ij,ij->i", g, g if other is None else other[rows], out=out[rows])
    return out


def add_scaled(out: np.ndarray, weight: float, values: np.ndarray) -> None:
    """``out += weight * values`` for (n, K) arrays, in place, a block of rows at a time."""
    for rows in row_blocks(*out.shape):
        out[rows] += weight * values[rows]


class RowWeightedProblem(BaseProblem):
    """A regression problem in which every action of row i weighs ``row_weights[i]``.

    ``row_weights`` (n,) >= 0; ``target_rows(rows)`` returns the (m, K) targets of a slice of
    rows. ``targets`` and ``weights`` are the (n, K) arrays of :class:`BaseProblem`, built on
    first use; a learner that reads the problem a block of rows at a time never builds them.
    """

    def __init__(
        self,
        row_weights: np.ndarray,
        n_actions: int,
        target_rows: Callable[[slice], np.ndarray],
    ) -> None:
        object.__setattr__(self, "reduction", "regression")
        object.__setattr__(self, "row_weights", row_weights)
        object.__setattr__(self, "shape", (len(row_weights), int(n_actions)))
        object.__setattr__(self, "target_rows", target_rows)

    @functools.cached_property
    def targets(self) -> np.ndarray:  # type: ignore[override]
        out = np.empty(self.shape)
        for rows in row_blocks(*self.shape):
            out[rows] = self.target_rows(rows)
        return out

    @functools.cached_property
    def weights(self) -> np.ndarray:  # type: ignore[override]
        return np.ascontiguousarray(np.broadcast_to(self.row_weights[:, None], self.shape))

    def weights_into(self, out: np.ndarray) -> np.ndarray:
        """The (n, K) weights written into ``out`` (float64, C order); returns ``out``."""
        np.copyto(out, self.row_weights[:, None])
        return out

    def __repr__(self) -> str:
        return f"RowWeightedProblem(reduction='regression', shape={self.shape})"
