"""Which designed rows grow a round's tree: all of them, or LightGBM's gradient-based one-side
sampling (GOSS) on large stacked designs.

Once a policy is confident, most of the n*K stacked rows (context, action) carry almost no
gradient: pi(a | x) of the actions it does not choose is tiny, and so are their gradients and
hessians. GOSS grows each tree on the ``top_rate`` share of the rows with the largest
|gradient x hessian| plus a random ``other_rate`` share of the rest, whose gradients and
hessians it scales up by (1 - top_rate) / other_rate, so the histograms cost a fifth of the
rows'. The sample decides the splits only: each leaf is then set to its value on EVERY row
(:func:`full_row_leaves`, LightGBM's leaf without sampling), the tree's outputs are read on
every row and the step (alpha) is computed on all of them, as without sampling. The sample
is seeded, so a fit is reproducible.

Measured in docs/benchmarks/performance.md ("A round on a tenth of the stacked rows"): from
about 25 million designed cells (stacked rows x columns: 500,000 stacked rows of 50 features)
a round is faster, from twice that it takes half the time or less; below, the sampling's own
cost is not repaid. The histograms' cost grows with the columns, hence the threshold on cells,
not rows. Column-wise histograms are then the faster layout
and the leaner one (no row-major copy of the bins).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from opboost.api.exceptions import InvalidParameterError
from opboost.api.lgbm.layout import stored_leaves
from opboost.api.lgbm.model_text import leaf_values
from opboost.api.numerics.row_blocks import row_blocks

if TYPE_CHECKING:
    import lightgbm as lgb

__all__ = [
    "GOSS_MIN_CELLS",
    "GOSS_PARAMS",
    "ROW_SAMPLINGS",
    "full_row_leaves",
    "leaf_of_rows",
    "row_sampling_params",
    "set_leaf_outputs",
    "use_full_row_leaves",
]

#: ``row_sampling`` values: "auto" (GOSS from :data:`GOSS_MIN_CELLS` designed cells on),
#: "none" (every row grows every tree), "goss" (always).
ROW_SAMPLINGS = ("auto", "none", "goss")
#: Designed cells (stacked rows n*K x their columns) from which ``row_sampling="auto"``
#: samples.
GOSS_MIN_CELLS = 20_000_000
#: LightGBM's GOSS with a tenth of the rows by gradient and a tenth of the rest at random:
#: a twentieth each lost 0.005 of test reward at 100,000 x 10 (0.0017 with full-row leaves).
GOSS_PARAMS: dict[str, Any] = {"data_sample_strategy": "goss", "top_rate": 0.1, "other_rate": 0.1}

#: LightGBM settings a user's ``params`` may give that decide the sampling themselves.
_USER_SAMPLING = frozenset(
    {
        "data_sample_strategy",
        "bagging_fraction",
        "sub_row",
        "subsample",
        "bagging",
        "bagging_freq",
        "subsample_freq",
        "top_rate",
        "other_rate",
    }
)


def row_sampling_params(
    row_sampling: str, cells: int, design: str, user_params: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The LightGBM parameters that ``row_sampling`` adds to a fit of ``cells`` designed
    cells (rows x columns) in ``design``: :data:`GOSS_PARAMS` plus column-wise histograms
    (unless ``user_params`` chose a layout) when it samples, else nothing. "auto" samples
    stacked designs ("stacked", "stacked_onehot") of at least :data:`GOSS_MIN_CELLS` cells
    whose ``user_params`` set no sampling of their own."""
    user = dict(user_params or {})
    if row_sampling == "goss" and _USER_SAMPLING & set(user):
        raise InvalidParameterError(
            f"The 'row_sampling' parameter of lightgbm_tree: 'goss' samples the rows itself, "
            f"but params also sets {sorted(_USER_SAMPLING & set(user))}; drop those params or "
            f"use row_sampling='none' to keep them."
        )
    if row_sampling == "none" or (row_sampling == "auto" and _USER_SAMPLING & set(user)):
        return {}
    if row_sampling == "auto" and (design == "per_action" or cells < GOSS_MIN_CELLS):
        return {}
    params = dict(GOSS_PARAMS)
    if not {"force_col_wise", "force_row_wise"} & set(user):
        params["force_col_wise"] = True
    return params


def _sorted_leaves(values: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(order, sorted values) of a tree's leaf values (L,), or None when two are too close
    to tell their rows apart by output (or the tree has one leaf)."""
    values = np.asarray(values, dtype=np.float64)
    if len(values) < 2:
        return None
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    if not float(np.min(np.diff(ordered))) > 1e-9 * max(1.0, float(np.abs(ordered).max())):
        return None
    return order, ordered


def _nearest(leaves: tuple[np.ndarray, np.ndarray], outputs: np.ndarray) -> np.ndarray:
    order, ordered = leaves
    right = np.clip(np.searchsorted(ordered, outputs), 1, len(ordered) - 1)
    right -= (outputs - ordered[right - 1]) < (ordered[right] - outputs)
    return order[right]


def leaf_of_rows(values: np.ndarray, outputs: np.ndarray) -> np.ndarray | None:
    """(rows,) the leaf of each training row of a tree: the index in ``values`` (L,) of the
    leaf value nearest the row's output in ``outputs`` (rows,) (its leaf's value up to the
    rounding of LightGBM's cached scores); None when two leaves are too close to tell apart."""
    leaves = _sorted_leaves(values)
    return None if leaves is None else _nearest(leaves, np.asarray(outputs))


def full_row_leaves(
    values: np.ndarray,
    outputs: np.ndarray,
    grad: np.ndarray,
    hess: np.ndarray,
    lambda_l2: float,
) -> tuple[np.ndarray, np.ndarray] | None:
    """The leaf values a tree grown on sampled rows would have on EVERY row: -G / (H +
    ``lambda_l2``) of each leaf's gradients and hessians summed over all rows (LightGBM's leaf
    without sampling), so the sample decides the splits only.

    ``values`` (L,) the leaves LightGBM fitted (kept for a leaf without hessian), ``outputs``
    (rows,) the tree's output on each training row (:func:`leaf_of_rows` finds its leaf),
    ``grad`` and ``hess`` (rows,) what the tree was grown from. Returns (the (L,) leaves, each
    row's leaf (rows,) in the smallest unsigned integer type), or None when two leaves cannot
    be told apart. Runs over blocks of rows: no row-sized float temporary."""
    leaves = _sorted_leaves(values)
    if leaves is None:
        return None
    L = len(values)
    leaf = np.empty(len(outputs), dtype=np.min_scalar_type(L - 1))
    G, H = np.zeros(L), np.full(L, float(lambda_l2))
    for block in row_blocks(len(outputs), 1):
        leaf[block] = index = _nearest(leaves, outputs[block])
        G += np.bincount(index, weights=grad[block], minlength=L)
        H += np.bincount(index, weights=hess[block], minlength=L)
    return np.where(H > 0, -G / np.where(H > 0, H, 1.0), values), leaf


def set_leaf_outputs(new: np.ndarray, leaf: np.ndarray, outputs: np.ndarray) -> None:
    """``outputs`` (rows,) <- ``new`` (L,) at each row's ``leaf`` (rows,), in place, over
    blocks of rows."""
    for block in row_blocks(len(outputs), 1):
        np.take(new, leaf[block], out=outputs[block])


def use_full_row_leaves(
    booster: lgb.Booster, outputs: np.ndarray, grad: np.ndarray, hess: np.ndarray
) -> None:
    """The last tree of ``booster``, grown on sampled rows from ``grad`` and ``hess``
    (rows,), gets the leaves of all rows (:func:`full_row_leaves`): set in LightGBM's model
    and in ``outputs`` (rows,), its outputs on the training rows, in place. Left as it is
    when two of its leaves cannot be told apart."""
    tree = booster.num_trees() - 1
    text = booster.model_to_string(start_iteration=tree, num_iteration=1)
    values = np.asarray(leaf_values(text)[0])
    lambda_l2 = float(booster.params.get("lambda_l2", 0.0))
    full = full_row_leaves(values, outputs, grad, hess, lambda_l2)
    if full is None:
        return
    leaves, leaf = stored_leaves(full[0]), full[1]
    for index, value in enumerate(leaves.tolist()):
        booster.set_leaf_output(tree, index, value)
    set_leaf_outputs(leaves, leaf, outputs)
