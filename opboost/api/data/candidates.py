"""Candidate sets: which actions are eligible in each logged row (``LoggedBandit.candidates``).

A candidate mask is (n, K) boolean: ``candidates[i, a]`` is True when action ``a`` could be
played in row ``i`` (a recommender's retrieved items, the products in stock). It is stored
either as a dense read-only ``bool`` array (dense input) or as a read-only boolean CSR matrix
(scipy.sparse input): n * K bytes against about 12 bytes per candidate, so pass a sparse
matrix for large catalogues. The helpers here read both forms alike.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from opboost.api.data.field_checks import bad_entry, first_index

__all__ = [
    "Candidates",
    "candidate_pairs",
    "check_candidates",
    "count_candidates",
    "first_outside",
    "is_candidate",
]

Candidates = np.ndarray | sp.csr_matrix

FIX_VALUES = "Pass a boolean mask (or 0/1 values): True where the action is eligible."


def check_candidates(
    candidates: Any, n_actions: int, actions: np.ndarray, logging_probs: np.ndarray | None
) -> Candidates:
    """The (n, K) candidate mask, read-only (dense bool, or boolean CSR for sparse input).

    ValueError unless it has one row per logged row and one column per action, holds only
    booleans or 0/1, gives every row a candidate, contains each row's logged action and,
    when ``logging_probs`` is given, covers every action the logger gave probability > 0.
    """
    n = len(actions)
    mask = _sparse_mask(candidates) if sp.issparse(candidates) else _dense_mask(candidates)
    if mask.shape != (n, n_actions):
        raise ValueError(
            f"LoggedBandit: candidates must have shape ({n}, {n_actions}) (rows x actions), "
            f"a boolean mask of each row's eligible actions. Got shape {mask.shape}."
        )
    counts = count_candidates(mask)
    if (counts == 0).any():
        i = first_index(counts == 0)
        raise ValueError(
            f"LoggedBandit: candidates row {i} has no candidate; every row needs at least one "
            f"eligible action (its logged action). Drop the row or fix its candidate set."
        )
    outside = ~is_candidate(mask, np.arange(n), actions)
    if outside.any():
        i = first_index(outside)
        raise bad_entry(
            "actions",
            "must be candidates of their row",
            i,
            int(actions[i]),
            f"candidates[{i}, {int(actions[i])}] is False, but a logger can only play an "
            f"eligible action: fix the candidate set or the logged action.",
        )
    if logging_probs is not None:
        where = first_outside(mask, logging_probs)
        if where is not None:
            raise bad_entry(
                "logging_probs",
                "must be 0 outside the row's candidates",
                where,
                float(logging_probs[where]),
                "The logger can only play eligible actions: zero the others and renormalise.",
            )
    return mask


def _bad_dtype(dtype: np.dtype) -> ValueError:
    return ValueError(
        f"LoggedBandit: candidates must be a boolean mask. Got dtype {dtype}; pass bool or "
        f"0/1 values, True where the action is eligible."
    )


def _dense_mask(candidates: Any) -> np.ndarray:
    array = np.asarray(candidates)
    if array.dtype != bool:
        if array.dtype.kind not in "iuf":
            raise _bad_dtype(array.dtype)
        bad = (array != 0) & (array != 1)
        if bad.any():
            index = tuple(int(k) for k in np.argwhere(bad)[0])
            raise bad_entry(
                "candidates", "must be 0/1 or boolean", index, float(array[index]), FIX_VALUES
            )
    mask = np.array(array, dtype=bool, copy=True)
    mask.flags.writeable = False
    return mask


def _sparse_mask(candidates: Any) -> sp.csr_matrix:
    coo = sp.coo_matrix(candidates)
    if coo.dtype != bool:
        if coo.dtype.kind not in "iuf":
            raise _bad_dtype(coo.dtype)
        bad = (coo.data != 0) & (coo.data != 1)
        if bad.any():
            k = first_index(bad)
            index = (int(coo.row[k]), int(coo.col[k]))
            raise bad_entry(
                "candidates", "must be 0/1 or boolean", index, float(coo.data[k]), FIX_VALUES
            )
    mask = sp.csr_matrix(coo.astype(bool))  # duplicates are summed, i.e. OR-ed
    mask.eliminate_zeros()
    mask.sort_indices()
    for part in (mask.data, mask.indices, mask.indptr):
        part.flags.writeable = False
    return mask


def count_candidates(candidates: Candidates) -> np.ndarray:
    """(n,) int64: the number of candidates of each row."""
    if sp.issparse(candidates):
        return np.diff(candidates.indptr).astype(np.int64)
    return candidates.sum(axis=1, dtype=np.int64)


def candidate_pairs(candidates: Candidates) -> tuple[np.ndarray, np.ndarray]:
    """(rows, actions), both (n_pairs,) int64: every candidate, row by row, actions ascending."""
    if sp.issparse(candidates):
        rows = np.repeat(np.arange(candidates.shape[0]), np.diff(candidates.indptr))
        return rows.astype(np.int64), candidates.indices.astype(np.int64)
    rows, cols = np.nonzero(candidates)
    return rows.astype(np.int64), cols.astype(np.int64)


def is_candidate(candidates: Candidates, rows: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """(m,) bool: whether each (rows[j], actions[j]) is a candidate."""
    if not sp.issparse(candidates):
        return candidates[rows, actions]
    # Canonical CSR: the keys row * K + action of the stored entries are sorted.
    k = candidates.shape[1]
    stored_rows, stored_cols = candidate_pairs(candidates)
    keys = stored_rows * k + stored_cols
    query = np.asarray(rows, dtype=np.int64) * k + np.asarray(actions, dtype=np.int64)
    if len(keys) == 0:
        return np.zeros(len(query), dtype=bool)
    at = np.minimum(np.searchsorted(keys, query), len(keys) - 1)
    return keys[at] == query


def first_outside(candidates: Candidates, probs: np.ndarray) -> tuple[int, int] | None:
    """The first (row, action), in row order, where ``probs`` (n, K) is > 0 but the action is
    not a candidate; None when all the mass is on candidates."""
    if not sp.issparse(candidates):  # one vectorised pass, no index arrays (per-round path)
        outside = (probs > 0) & ~candidates
        if not outside.any():
            return None
        i, a = np.argwhere(outside)[0]
        return int(i), int(a)
    rows, cols = np.nonzero(probs > 0)
    outside = ~is_candidate(candidates, rows, cols)
    if not outside.any():
        return None
    k = first_index(outside)
    return int(rows[k]), int(cols[k])
