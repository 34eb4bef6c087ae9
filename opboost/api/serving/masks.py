"""Serving a policy over per-request candidate sets: scores masked to the eligible actions,
each row's best action and the top-k distinct actions of each row for slates.

Equal scores are broken by a policy's ``tie_order`` when it has one (a permutation of the
actions, preferred first: :mod:`opboost.api.serving.tie_order`), else by the lower index.

``candidates`` at prediction time is an (m, K) boolean mask (dense or scipy.sparse), True
where the action may be served in that row; every row needs at least one candidate. A
masked policy never returns, and gives no probability to, a non-candidate action.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from opboost.api.serving.tie_order import tie_ranks

__all__ = ["greedy", "mask_scores", "serving_mask", "top_k"]


def serving_mask(candidates: Any, shape: tuple[int, int], owner: str) -> np.ndarray:
    """``candidates`` as a dense (m, K) bool array; ValueError naming ``owner`` when its
    shape is not ``shape``, its values are not 0/1 or a row has no candidate."""
    mask = candidates.toarray() if sp.issparse(candidates) else np.asarray(candidates)
    if mask.shape != shape:
        raise ValueError(
            f"{owner}: candidates must have shape {shape} (rows of X x actions). Got shape "
            f"{mask.shape}."
        )
    if mask.dtype != bool:
        if mask.dtype.kind not in "iuf" or not np.isin(mask, (0, 1)).all():
            raise ValueError(
                f"{owner}: candidates must be a boolean mask (or 0/1 values), True where "
                f"the action may be served. Got dtype {mask.dtype}."
            )
        mask = mask.astype(bool)
    empty = ~mask.any(axis=1)
    if empty.any():
        row = int(np.flatnonzero(empty)[0])
        raise ValueError(
            f"{owner}: candidates row {row} has no candidate; every row needs at least one "
            f"action to serve."
        )
    return mask


def mask_scores(scores: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``scores`` (m, K) with -inf outside ``mask``: argmax and softmax then ignore them."""
    return np.where(mask, scores, -np.inf)


def greedy(scores: np.ndarray, tie_order: np.ndarray | None = None) -> np.ndarray:
    """(m,) int64: each row's highest-scoring action; equal scores go to the action first in
    ``tie_order`` (K,), else to the lower index."""
    if tie_order is None:
        return np.argmax(scores, axis=1)
    ranks = tie_ranks(tie_order)
    top = scores == scores.max(axis=1, keepdims=True)
    return np.argmin(np.where(top, ranks, len(ranks)), axis=1)


def top_k(scores: np.ndarray, k: int, tie_order: np.ndarray | None = None) -> np.ndarray:
    """(m, k) int64: each row's k highest-scoring actions, best first (equal scores in
    ``tie_order``, else to the lower index); -1 pads a row with fewer than k finite scores
    (fewer candidates than k)."""
    if not isinstance(k, int | np.integer) or isinstance(k, bool) or k < 1:
        raise ValueError(f"top_k: k must be an int >= 1. Got {k!r}.")
    k = min(int(k), scores.shape[1])
    if tie_order is None:
        order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    else:
        ranks = np.broadcast_to(tie_ranks(tie_order), scores.shape)
        order = np.lexsort((ranks, -scores), axis=1)[:, :k]
    ranked = np.take_along_axis(scores, order, axis=1)
    return np.where(np.isneginf(ranked), -1, order).astype(np.int64)
