"""Which designed rows grow a round's trees: all of them, or LightGBM's gradient-based one-side
sampling (GOSS) on large stacked designs ("auto"), or on any design ("goss": the n*K stacked
rows, or the n contexts of K per-action trees, each tree's leaves then set from every row).

Once a policy is confident, most of the n*K stacked rows (context, action) carry almost no
gradient: pi(a | x) of the actions it does not choose is tiny, and so are their gradients and
hessians. GOSS grows each tree on the ``top_rate`` share of the rows with the largest
|gradient x hessian| plus a random ``other_rate`` share of the rest, whose gradients and
hessians it scales up by (1 - top_rate) / other_rate, so the histograms cost a fifth of the
rows'. The sample decides the splits only: each leaf is then set to its value on EVERY row
(:func:`full_row_leaves`, LightGBM's leaf without sampling), the tree's outputs are read on
every row and the step (alpha) is computed on all of them, as without sampling. The sample
is seeded, so a fit is reproducible.

Measured in docs/benchmarks/performance.md ("A round grown on a sample of the stacked rows"
and the section after it): at 1,000,000 to 10,000,000 stacked rows of 51 columns the default
fits in 0.84-0.92 of the time at the same test reward, BOPL-S from F_0 = 0 in 0.78-0.90;
below about 500,000 stacked rows of 50 features, or on narrow logs (21-41 columns), the
sampling's own cost was not repaid. The histograms' cost grows with rows x columns, the
sample's own with rows, hence the thresholds on cells and on columns. Column-wise histograms
are the leaner layout (no row-major copy of the bins) and as fast on 63-leaf trees; a user's
``force_row_wise`` wins (faster on Fashion-MNIST's trees of about 2,500 leaves).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import lightgbm as lgb
import numpy as np

from opboost.api.exceptions import InvalidParameterError
from opboost.api.numerics.row_blocks import row_blocks
from opboost.lgbm.layout import merge_in_front, stored_leaves
from opboost.lgbm.model_text import leaf_values
from opboost.lgbm.params import lightgbm_aliases

__all__ = [
    "GOSS_MIN_CELLS",
    "GOSS_MIN_COLUMNS",
    "GOSS_PARAMS",
    "MAX_LEAF_TABLE",
    "ROW_SAMPLINGS",
    "booster_without_sampling",
    "designed_shape",
    "full_row_leaves",
    "last_leaf_values",
    "leaf_sums",
    "leaves_from_sums",
    "row_sampling_params",
    "set_last_leaves",
    "set_leaf_outputs",
    "set_tree_leaves",
    "splits_on_actions",
    "use_full_row_leaves",
]

#: ``row_sampling`` values: "auto" (GOSS on large, wide stacked designs: :data:`GOSS_MIN_CELLS`,
#: :data:`GOSS_MIN_COLUMNS`), "none" (every row grows every tree), "goss" (always).
ROW_SAMPLINGS = ("auto", "none", "goss")
#: Designed cells (n*K stacked rows x their columns) from which ``row_sampling="auto"``
#: samples.
GOSS_MIN_CELLS = 20_000_000
#: Fewest designed columns (d + 1 stacked, d + K one-hot) from which
#: ``row_sampling="auto"`` samples: the sample saves histogram work (rows x columns) but
#: costs per row (LightGBM's choice of the sample, the rows left out, the full-row leaves).
#: One LightGBM thread, BOPL-S
#: from F_0 = 0, 20 rounds, sampled / every row: 1.12-1.24 at 5,000,000 stacked rows of 21
#: columns, 1.00 and 1.06 of 31 and 41, 0.90 at 3,000,000 of 51 (docs/benchmarks/performance.md).
GOSS_MIN_COLUMNS = 50
#: LightGBM's GOSS with a tenth of the rows by gradient and a tenth of the rest at random:
#: a twentieth each lost 0.005 of test reward at 100,000 x 10 (0.0017 with full-row leaves).
GOSS_PARAMS: dict[str, Any] = {"data_sample_strategy": "goss", "top_rate": 0.1, "other_rate": 0.1}

#: LightGBM settings (by main name) that decide the sampling; a user's ``params`` that set one
#: (or an alias) keep their own.
_SAMPLING_SETTINGS = frozenset(
    {
        "data_sample_strategy",
        "bagging_fraction",
        "pos_bagging_fraction",
        "neg_bagging_fraction",
        "bagging_freq",
        "top_rate",
        "other_rate",
    }
)


def designed_shape(n_rows: int, n_features: int, n_actions: int, design: str) -> tuple[int, int]:
    """(rows, columns) a round's trees are grown on, for ``n_rows`` contexts with
    ``n_features`` columns in ``design``: n*K stacked rows of d + 1 ("stacked") or d + K
    ("stacked_onehot") columns, or K trees on the n context rows of d columns, counted as n*K
    rows ("per_action"); what ``row_sampling="auto"`` and the thread choice weigh."""
    n, d, K = n_rows, n_features, n_actions
    width = {"stacked": d + 1, "stacked_onehot": d + K, "per_action": d}[design]
    return n * K, width


def _user_sampling(user: Mapping[str, Any]) -> list[str]:
    """The keys of ``user`` that set LightGBM's sampling (aliases included), sorted."""
    aliases = lightgbm_aliases()
    return sorted(k for k in user if aliases.get(k, k) in _SAMPLING_SETTINGS)


def row_sampling_params(
    row_sampling: str,
    shape: tuple[int, int],
    design: str,
    user_params: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The LightGBM parameters that ``row_sampling`` adds to a fit of designed rows of
    ``shape`` (rows, columns: :func:`designed_shape`) in ``design``: :data:`GOSS_PARAMS` plus
    column-wise histograms (unless ``user_params`` chose a layout) when it samples, else
    nothing. "auto" samples stacked designs ("stacked", "stacked_onehot") of at least
    :data:`GOSS_MIN_CELLS` cells and :data:`GOSS_MIN_COLUMNS` columns whose ``user_params``
    set no sampling of their own. Not "per_action": its sampled trees (each on a fifth of the
    contexts) lost -0.0134 +- 0.0080 of test reward at 100,000 x 10 x 50 after 20 rounds
    (docs/benchmarks/performance.md); "goss" samples them."""
    user = dict(user_params or {})
    own = _user_sampling(user)
    if row_sampling == "goss" and own:
        raise InvalidParameterError(
            f"The 'row_sampling' parameter of lightgbm_tree: 'goss' samples the rows itself, "
            f"but params also sets {own}; drop those params or use row_sampling='none' to "
            f"keep them."
        )
    if row_sampling == "none" or (row_sampling == "auto" and own):
        return {}
    rows, columns = shape
    small = rows * columns < GOSS_MIN_CELLS or columns < GOSS_MIN_COLUMNS
    if row_sampling == "auto" and (design == "per_action" or small):
        return {}
    params = dict(GOSS_PARAMS)
    if not {"force_col_wise", "force_row_wise"} & set(user):
        params["force_col_wise"] = True
    return params


#: Most cells of the table that finds each row's leaf from its output (16 bytes a cell); a
#: tree whose leaf values would need more is searched by bisection instead.
MAX_LEAF_TABLE = 1 << 20


class _LeafFinder:
    """Each output's nearest leaf value among a tree's sorted ``ordered`` (L,) leaf values.

    The outputs (a row's leaf value up to rounding) are read off a grid of cells half the
    smallest gap between two leaf values wide, so a cell holds at most one midpoint between
    neighbouring leaves: the leaf is the cell's count of midpoints below it plus one if its
    midpoint is below the output. Five passes over the rows, several times faster than a
    bisection (``searchsorted``) per row, which is the fallback when the grid would have more
    than :data:`MAX_LEAF_TABLE` cells."""

    def __init__(self, ordered: np.ndarray) -> None:
        self.mid = (ordered[1:] + ordered[:-1]) / 2
        self.lo, span = float(ordered[0]), float(ordered[-1] - ordered[0])
        width = float(np.min(np.diff(ordered))) / 2
        self.base = None
        if span / width + 2 <= MAX_LEAF_TABLE:
            self.per_cell = 1.0 / width
            size = int(span * self.per_cell) + 2
            # the midpoints' cells computed as the outputs' are: a midpoint in a lower cell
            # is below any output in a higher one, whatever the rounding at the cell edges
            cells = self._cells(self.mid, size)
            self.base = np.searchsorted(cells, np.arange(size))  # midpoints in lower cells
            self.inside = np.full(size, np.inf)  # the midpoint within each cell, if any
            self.inside[cells] = self.mid

    def _cells(self, values: np.ndarray, size: int) -> np.ndarray:
        cell = ((values - self.lo) * self.per_cell).astype(np.intp)
        return np.clip(cell, 0, size - 1, out=cell)

    def __call__(self, outputs: np.ndarray) -> np.ndarray:
        """The sorted position (0 .. L-1) of each output's nearest leaf value."""
        if self.base is None:
            return np.searchsorted(self.mid, outputs)
        cell = self._cells(outputs, len(self.base))
        return self.base[cell] + (self.inside[cell] < outputs)


def _sorted_leaves(values: np.ndarray) -> tuple[np.ndarray, _LeafFinder] | None:
    """(order, the finder of the sorted values) of a tree's leaf values (L,), or None when
    two are too close to tell their rows apart by output (or the tree has one leaf)."""
    values = np.asarray(values, dtype=np.float64)
    if len(values) < 2:
        return None
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    if not float(np.min(np.diff(ordered))) > 1e-9 * max(1.0, float(np.abs(ordered).max())):
        return None
    return order, _LeafFinder(ordered)


def leaf_sums(
    values: np.ndarray, outputs: np.ndarray, grad: np.ndarray, hess: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Each leaf's sums of the gradients and hessians over EVERY row a tree was grown from.

    ``values`` (L,) the tree's leaf values, ``outputs`` (rows,) its output on each row (its
    leaf's value up to the rounding of LightGBM's cached scores: the row's leaf is the one
    whose value is nearest), ``grad`` and ``hess`` (rows,) what the tree was grown from.
    Returns (G (L,), H (L,), each row's leaf (rows,) in the smallest unsigned integer type),
    or None when two leaves cannot be told apart. Runs over blocks of rows: no row-sized
    float temporary. A distributed fit sums G and H over the workers."""
    leaves = _sorted_leaves(values)
    if leaves is None:
        return None
    order, nearest = leaves
    L = len(values)
    leaf = np.empty(len(outputs), dtype=np.min_scalar_type(L - 1))
    G, H = np.zeros(L), np.zeros(L)  # in the order of the sorted leaf values
    for block in row_blocks(len(outputs), 1):
        index = nearest(outputs[block])
        leaf[block] = order[index]
        G += np.bincount(index, weights=grad[block], minlength=L)
        H += np.bincount(index, weights=hess[block], minlength=L)
    G[order], H[order] = G.copy(), H.copy()
    return G, H, leaf


def leaves_from_sums(
    values: np.ndarray, G: np.ndarray, H: np.ndarray, lambda_l2: float
) -> np.ndarray:
    """(L,) -G / (H + ``lambda_l2``) of each leaf (LightGBM's leaf without sampling); a leaf
    without hessian keeps its fitted value from ``values``."""
    H = H + float(lambda_l2)
    return np.where(H > 0, -G / np.where(H > 0, H, 1.0), values)


def full_row_leaves(
    values: np.ndarray,
    outputs: np.ndarray,
    grad: np.ndarray,
    hess: np.ndarray,
    lambda_l2: float,
) -> tuple[np.ndarray, np.ndarray] | None:
    """The leaf values a tree grown on sampled rows would have on EVERY row: -G / (H +
    ``lambda_l2``) of each leaf's gradients and hessians summed over all rows, so the sample
    decides the splits only. Arguments as :func:`leaf_sums`; ``values`` are kept for a leaf
    without hessian. Returns (the (L,) leaves, each row's leaf (rows,)), or None when two
    leaves cannot be told apart."""
    sums = leaf_sums(values, outputs, grad, hess)
    if sums is None:
        return None
    G, H, leaf = sums
    return leaves_from_sums(values, G, H, lambda_l2), leaf


def set_leaf_outputs(new: np.ndarray, leaf: np.ndarray, outputs: np.ndarray) -> None:
    """``outputs`` (rows,) <- ``new`` (L,) at each row's ``leaf`` (rows,), in place, over
    blocks of rows."""
    for block in row_blocks(len(outputs), 1):
        np.take(new, leaf[block], out=outputs[block])


def _last_round_text(booster: lgb.Booster, trees: int = 1) -> str:
    """The model text of ``booster``'s last round of ``trees`` trees (1, or K of a
    ``num_class=K`` model)."""
    iteration = booster.num_trees() // trees - 1
    return booster.model_to_string(start_iteration=iteration, num_iteration=1)


def last_leaf_values(booster: lgb.Booster) -> np.ndarray:
    """(L,) the leaf values of ``booster``'s last tree."""
    return _round_leaf_values(booster, 1)[0]


def _round_leaf_values(booster: lgb.Booster, trees: int) -> list[np.ndarray]:
    """The leaf values (L,) of each tree of ``booster``'s last round of ``trees`` trees, in
    tree order."""
    return [np.asarray(values) for values in leaf_values(_last_round_text(booster, trees))]


def splits_on_actions(booster: lgb.Booster, n_features: int) -> bool:
    """Whether ``booster``'s last tree splits on an action column of a stacked design (the
    columns from ``n_features``, the contexts' count, on).

    A tree that splits on context columns only puts every action of a context in one leaf,
    so it adds the same score to all of them: a softmax or argmax policy does not change.
    Grown on EVERY row it then has leaves of 0 (the softmax gradients of a context's actions
    sum to 0); grown on a sample of the rows (GOSS keeps some of a context's actions and not
    others) it can win on the sample and, once its leaves are every row's, do nothing: the
    fit would stop there (measured: 1,200 contexts x 4 actions, round 3)."""
    for line in _last_round_text(booster).splitlines():
        if line.startswith("split_feature="):
            return any(int(j) >= n_features for j in line[len("split_feature=") :].split())
    return False


def booster_without_sampling(booster: lgb.Booster) -> lgb.Booster:
    """A new Booster on ``booster``'s training Dataset with its parameters but the row
    sampling (:data:`GOSS_PARAMS`' keys), holding its trees in order; ``booster`` lets go of
    the Dataset (drop it to free its memory). Its cached training scores start at 0 (read
    their change, as ``fit_round`` does)."""
    params = {k: v for k, v in booster.params.items() if k not in GOSS_PARAMS}
    model = lgb.Booster(model_str=booster.model_to_string())
    dataset = booster.train_set
    booster.free_dataset()  # the Booster's hold on the Dataset, not the Dataset
    new = lgb.Booster(params, dataset)
    merge_in_front(new, model)
    return new


def set_tree_leaves(
    booster: lgb.Booster, tree: int, leaves: np.ndarray, leaf: np.ndarray, outputs: np.ndarray
) -> None:
    """Set the leaves of ``booster``'s tree ``tree`` to ``leaves`` (L,), as LightGBM stores
    them, and ``outputs`` (rows,), its outputs on the training rows, to them at each row's
    ``leaf``."""
    leaves = stored_leaves(leaves)
    for index, value in enumerate(leaves.tolist()):
        booster.set_leaf_output(tree, index, value)
    set_leaf_outputs(leaves, leaf, outputs)


def set_last_leaves(
    booster: lgb.Booster, leaves: np.ndarray, leaf: np.ndarray, outputs: np.ndarray
) -> None:
    """:func:`set_tree_leaves` of ``booster``'s last tree."""
    set_tree_leaves(booster, booster.num_trees() - 1, leaves, leaf, outputs)


def use_full_row_leaves(
    booster: lgb.Booster, outputs: np.ndarray, grad: np.ndarray, hess: np.ndarray
) -> None:
    """The last round of ``booster``, its trees grown on sampled rows from ``grad`` and
    ``hess`` (trees, rows), gets the leaves of all rows (:func:`full_row_leaves`): set in
    LightGBM's model and in ``outputs`` (trees, rows; a view may be strided), each tree's
    outputs on the training rows, in place. One tree a round on stacked rows; K of a
    ``num_class=K`` model (per action: the tree of class k grown from row k of ``grad``). A
    tree is left as it is when two of its leaves cannot be told apart."""
    lambda_l2 = float(booster.params.get("lambda_l2", 0.0))
    trees = len(outputs)
    first = booster.num_trees() - trees
    for k, values in enumerate(_round_leaf_values(booster, trees)):
        full = full_row_leaves(values, outputs[k], grad[k], hess[k], lambda_l2)
        if full is not None:
            set_tree_leaves(booster, first + k, *full, outputs[k])
