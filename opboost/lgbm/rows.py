"""Designed rows for LightGBM: contexts expanded to (x, a) rows without materialising them,
their histogram layout and the action tilt that keeps context features splittable.

``"stacked"`` rows are [x_i; a] with the action as ONE categorical column, ``"stacked_onehot"``
rows are the paper's [x_i; onehot(a)], ``"per_action"`` rows are the contexts themselves.
Stacked rows are example-major (row i*K + a). ``stacked_dataset`` builds their binned LightGBM
Dataset from the binned contexts, so the float matrix of n*K rows is never held.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import lightgbm as lgb
import numpy as np
import scipy.sparse as sp

from opboost.api.numerics.contexts import as_contexts
from opboost.api.numerics.design import stacked_design

__all__ = [
    "ACTION_DESIGNS",
    "ROW_WISE_MAX_BINS",
    "DesignedRowsCache",
    "action_tilt",
    "categorical_columns",
    "context_rows_cache",
    "design_rows",
    "histogram_layout",
    "missing_categories_as_nan",
    "pairs_dataset",
    "repeated_rows",
    "stacked_dataset",
]

ACTION_DESIGNS = ("stacked", "stacked_onehot", "per_action")
#: The design of a fit on candidate pairs [x_i; phi(a)] (``LightGBMTree.prepare_pairs``).
PAIRS_DESIGN = "pairs"


def design_rows(X: Any, n_actions: int, design: str) -> Any:
    """Designed rows of contexts ``X`` (m, d): (m*K, d+1 | d+K) for stacked, X itself else."""
    if design == "per_action":
        return X
    encoding = "onehot" if design == "stacked_onehot" else "index"
    dtype = X.dtype if X.dtype in (np.float32, np.float64) else np.float64
    if isinstance(X, np.ndarray) and X.ndim == 2:
        return _dense_stacked_rows(X, n_actions, dtype, encoding == "onehot")
    return stacked_design(X, n_actions, dtype=dtype, action_encoding=encoding)


class DesignedRowsCache:
    """Designed rows of inputs a fit predicts every round (eval_data, the held-out logs or
    their candidate pairs), built once by ``design`` and kept for the two most recent inputs
    that ``keep`` accepts; anything else is designed afresh on every call."""

    def __init__(
        self, design: Callable[[Any], Any], keep: Callable[[Any], bool] = lambda X: True
    ) -> None:
        self.design, self.keep = design, keep
        self._rows: dict[int, tuple[Any, Any]] = {}  # id(input) -> (input, rows)

    def rows(self, X: Any) -> Any:
        """``design(X)``, from the cache when ``X`` is one of the two kept inputs."""
        hit = self._rows.get(id(X))
        if hit is not None and hit[0] is X:
            return hit[1]
        rows = self.design(X)
        if self.keep(X):
            if len(self._rows) >= 2:
                self._rows.pop(next(iter(self._rows)))
            self._rows[id(X)] = (X, rows)
        return rows


def _read_only(X: Any) -> bool:
    values = X.data if sp.issparse(X) else X
    return isinstance(values, np.ndarray) and not values.flags.writeable


def context_rows_cache(n_features: int, n_actions: int, design: str) -> DesignedRowsCache:
    """The cache of :func:`design_rows` for contexts (m, d): kept only for read-only contexts
    (a LoggedBandit's), so an in-place edit of writable contexts is never served stale."""

    def rows(X: Any) -> Any:
        return design_rows(as_contexts(X, n_features, missing=True), n_actions, design)

    return DesignedRowsCache(rows, _read_only)


def _dense_stacked_rows(X: np.ndarray, n_actions: int, dtype: Any, onehot: bool) -> np.ndarray:
    """The rows of :func:`opboost.api.numerics.design.stacked_design` for dense ``X``, written
    straight into one preallocated (m, K, width) array (no index arrays, no scipy): the same values,
    faster (about 5x for one context, where it is a large part of serving one prediction)."""
    m, d = X.shape
    K = n_actions
    width = d + (K if onehot else 1)
    rows = np.empty((m, K, width), dtype=dtype)
    rows[:, :, :d] = X[:, None, :]
    if onehot:
        rows[:, :, d:] = np.eye(K, dtype=dtype)
    else:
        rows[:, :, d] = np.arange(K, dtype=dtype)
    return rows.reshape(m * K, width)


def categorical_columns(columns: Any, n_features: int) -> Any:
    """LightGBM's ``categorical_feature`` for context columns ``columns`` (None: "auto",
    which for arrays is none), checked to be columns of the ``n_features`` contexts."""
    if not columns:
        return "auto"
    columns = sorted({int(j) for j in columns})
    if columns[0] < 0 or columns[-1] >= n_features:
        raise ValueError(
            f"categorical_features {columns} must be context column indices in "
            f"[0, {n_features}); the contexts have {n_features} columns."
        )
    return columns


def missing_categories_as_nan(X: Any, categorical: Any) -> Any:
    """``X`` (n, d), dense or CSR, with the negative codes of its ``categorical`` columns
    (LightGBM's ``categorical_feature``: a list of indices, or "auto" for none) as NaN: a
    copy where there are any, else ``X`` itself. opboost codes a missing or unseen category
    -1 (``opboost.api.data.tabular``), which LightGBM reads as its missing category, as it
    reads NaN: the same bins and the same branches, so the models are the same. But its bin
    finder warns on every negative code, and ``verbose=-1`` silences only the calling thread
    (LightGBM keeps its log level per thread): a Dataset binned on two threads printed "Met
    negative value in categorical features" from the other one, straight to stdout."""
    if isinstance(categorical, str) or not len(categorical):
        return X
    columns = np.asarray(categorical, dtype=np.intp)
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        negative = np.isin(X.indices, columns) & (X.data < 0)
        if not negative.any():
            return X
        X = X.astype(np.result_type(X.dtype, np.float32), copy=True)  # float32 stays float32
        X.data[negative] = np.nan
        return X
    block = np.asarray(X)[:, columns]
    negative = block < 0
    if not negative.any():
        return X
    X = np.array(X, dtype=np.result_type(np.asarray(X).dtype, np.float32), copy=True)
    X[:, columns] = np.where(negative, np.nan, block)
    return X


def stacked_dataset(
    X: Any, n_actions: int, design: str, params: dict[str, Any], categorical: Any = "auto"
) -> lgb.Dataset:
    """Constructed LightGBM Dataset of the n*K stacked rows of contexts ``X`` (n, d).

    LightGBM bins the n contexts once (its bins for a context feature are the same whichever
    action a row carries), repeats the binned rows K times inside LightGBM (``subset`` with
    every index K times: example-major, row i*K + a) and appends the binned action column(s)
    (``add_features_from``): one categorical column for ``"stacked"``, K 0/1 columns for
    ``"stacked_onehot"``. Neither the float (n*K, d) matrix nor any row passes through Python.
    Feature names are ``Column_0 .. Column_{width-1}``, as for a matrix of the stacked rows.
    ``categorical`` (LightGBM's ``categorical_feature`` of the contexts) keeps its indices:
    the context columns come first in the stacked rows.
    """
    n, d = X.shape
    K = n_actions
    onehot = design == "stacked_onehot"
    names = [f"Column_{j}" for j in range(d + (K if onehot else 1))]
    contexts = lgb.Dataset(
        missing_categories_as_nan(X, categorical),
        params=params,
        feature_name=names[:d],
        categorical_feature=categorical,
        free_raw_data=True,
    )
    rows = repeated_rows(contexts, np.repeat(np.arange(n, dtype=np.int32), K))
    if onehot:  # K 0/1 columns: row i*K + a is e_a
        columns = np.tile(np.eye(K, dtype=np.float32), (n, 1))
    else:  # the action 0..K-1, exact in float32 (binned as LightGBM bins the float64 values)
        columns = np.tile(np.arange(K, dtype=np.float32), n)[:, None]
    actions = lgb.Dataset(
        columns,
        params=params,
        feature_name=names[d:],
        categorical_feature="auto" if onehot else [0],
        free_raw_data=True,
    ).construct()
    del columns
    return _append_columns(rows, actions)


def repeated_rows(dataset: lgb.Dataset, indices: np.ndarray) -> lgb.Dataset:
    """The constructed Dataset of rows ``indices`` (sorted int32, repeats allowed) of
    ``dataset``, binned with its bins: LightGBM's ``subset``, given the indices as an int32
    array. ``subset`` itself takes a list (36 bytes of Python ints per row, 360 MB at 10M
    designed rows) and sorts it; LightGBM converts the list to this array anyway.
    """
    rows = dataset.construct().subset([])
    rows.used_indices = indices  # what construct() passes to LGBM_DatasetGetSubset
    return rows.construct()


def _append_columns(rows: lgb.Dataset, columns: lgb.Dataset) -> lgb.Dataset:
    """``rows`` (a constructed subset) with the binned ``columns`` appended, in place."""
    with warnings.catch_warnings():  # LightGBM warns that Python-side raw data and
        warnings.simplefilter("ignore")  # categorical names are dropped; both are unused
        rows = rows.add_features_from(columns)
    # subset() keeps its row indices (and the Dataset it was taken from) to rebuild a freed
    # Dataset; these are never rebuilt (their raw data is freed anyway). Dropping the
    # reference frees the binned n context rows (the subset holds its own copy).
    rows.used_indices = None
    rows.reference = None
    return rows


def pairs_dataset(pairs: Any, params: dict[str, Any], categorical: Any = "auto") -> lgb.Dataset:
    """Constructed LightGBM Dataset of the candidate pairs [x_i; phi(a)] of ``pairs`` (a
    :class:`opboost.api.data.pairs.PairRows`), in pair order (row-major, slots ascending).

    As :func:`stacked_dataset`: the n contexts are binned once and repeated inside LightGBM
    (``subset`` with row i listed C_i times), then the binned phi columns of the pairs are
    appended (one categorical column for the action index; the interaction column last,
    when the pairs have one). Only the (P, d_a) phi block passes through Python. Feature names
    are ``Column_0 .. Column_{width-1}``.
    """
    X = pairs.contexts
    d = X.shape[1]
    names = [f"Column_{j}" for j in range(pairs.width)]
    contexts = lgb.Dataset(
        missing_categories_as_nan(X, categorical), params=params, feature_name=names[:d],
        categorical_feature=categorical, free_raw_data=True,
    )  # fmt: skip
    rows = repeated_rows(contexts, np.asarray(pairs.view.rows, dtype=np.int32))
    phi = lgb.Dataset(
        pairs.item_block(),
        params=params,
        feature_name=names[d:],
        categorical_feature=list(pairs.categorical) or "auto",
        free_raw_data=True,
    ).construct()
    return _append_columns(rows, phi)


#: Relative weight tilt per action index on stacked rows (see :func:`action_tilt`).
_ACTION_TILT = 1e-6


#: Stacked designs with at most this many histogram bins over all features grow row-wise.
ROW_WISE_MAX_BINS = 100_000


def action_tilt(n_actions: int) -> np.ndarray:
    """Factors 1 + 1e-6 a (K,) multiplying gradient and hessian of action a's stacked rows.

    Softmax targets sum to 0 over the actions of every row, so on stacked rows every context
    feature has exactly zero gain at the root; LightGBM then marks it unsplittable for the
    whole tree, which grows on the action column alone (K = 2 always; K = 4, 8, ... in
    round 1). The tilt breaks the exact cancellation; a leaf holding one action keeps its
    exact weighted mean (the factor cancels). docs/benchmarks/performance.md has the measurement.
    """
    return 1.0 + _ACTION_TILT * np.arange(n_actions)


def histogram_layout(dataset: lgb.Dataset, design: str) -> str:
    """LightGBM's histogram layout for this fit: "force_row_wise" or "force_col_wise".

    Fixed rather than left to LightGBM, which times both on the first tree (not seeded, and
    measured to pick the slower on Fashion-MNIST). Following LightGBM's own advice (row-wise
    for many rows and few bins in all), stacked designs with at most ``ROW_WISE_MAX_BINS``
    bins over all features go row-wise; docs/benchmarks/performance.md has the measurements. The
    choice changes only the speed: both layouts give the same trees (tested).
    """
    if design == "per_action":
        return "force_col_wise"
    n_bins = sum(dataset.feature_num_bin(j) for j in range(dataset.num_feature()))
    return "force_row_wise" if n_bins <= ROW_WISE_MAX_BINS else "force_col_wise"
