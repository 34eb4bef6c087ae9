"""LightGBM's histogram layout for a fit, chosen by timing both on the fit's own Dataset, and
the calls every custom-gradient LightGBM round goes through (grow, read the cached scores,
set the rounds' leaves).

LightGBM builds histograms column-wise or row-wise. Left alone it times both on the first
tree, which is not seeded (and was measured to pick the slower on Fashion-MNIST). The bin-count
rule of :func:`histogram_layout` picks row-wise for designs with few bins in all (measured
faster on every such data set); where it would pick column-wise, a large fit (at least
``PROBE_MIN_ROWS`` designed rows) times ``PROBE_ROUNDS`` tree of each layout on its own Dataset
with seeded random gradients and grows with the faster. The layout
changes only the speed: both give the same trees (tested), so the timing cannot change a
result. docs/benchmarks/performance.md has the measurements.
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable, Sequence
from typing import Any

import lightgbm as lgb
import numpy as np
from lightgbm.basic import _LIB, _safe_call

from opboost.api.numerics.row_blocks import row_blocks
from opboost.lgbm.model_text import leaf_values
from opboost.lgbm.process_threads import use_threads
from opboost.lgbm.rows import histogram_layout

__all__ = [
    "LAYOUTS",
    "PROBE_MIN_ROWS",
    "PROBE_ROUNDS",
    "fetch_scores",
    "fit_layout",
    "merge_in_front",
    "score_change",
    "set_round_leaves",
    "stored_leaves",
    "update_one_iter",
]

LAYOUTS = ("force_row_wise", "force_col_wise")
#: Designed rows (n*K stacked, or the candidate pairs) from which the layout is timed.
PROBE_MIN_ROWS = 200_000
#: Trees timed per layout (on a fresh Booster each; a tree's time varies little).
PROBE_ROUNDS = 1
#: LightGBM's kZeroThreshold (1e-35f): leaf values it stores as 0.
_ZERO_THRESHOLD = float(np.float32(1e-35))


def update_one_iter(booster: lgb.Booster, grad: np.ndarray, hess: np.ndarray) -> int:
    """Grow the next tree(s) from float32 ``grad`` and ``hess`` in LightGBM's row layout;
    the number of trees added: 0 when no split was possible (LightGBM dropped the round or,
    in its first round, kept a constant-0 tree that it never rolls back; harmless, it
    predicts 0). The tree grows with the Booster's own ``num_threads``, whatever LightGBM call
    came in between (:mod:`opboost.lgbm.process_threads`)."""
    use_threads(booster.params.get("num_threads", 0))
    before = booster.num_trees()
    finished = ctypes.c_int(0)
    _safe_call(
        _LIB.LGBM_BoosterUpdateOneIterCustom(
            booster._handle,
            grad.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
            hess.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
            ctypes.byref(finished),
        )
    )
    return 0 if finished.value else booster.num_trees() - before


def fetch_scores(booster: lgb.Booster, out: np.ndarray, data_idx: int = 0) -> None:
    """Copy LightGBM's cached scores of its training data (``data_idx`` 0) or of its
    ``data_idx``-th validation Dataset (num_data * trees per round float64, its layout)
    into the C-contiguous ``out``."""
    length = ctypes.c_int64(0)
    _safe_call(
        _LIB.LGBM_BoosterGetPredict(
            booster._handle,
            ctypes.c_int(data_idx),
            ctypes.byref(length),
            out.ctypes.data_as(ctypes.POINTER(ctypes.c_double)),
        )
    )


def score_change(booster: lgb.Booster, last: np.ndarray, out: np.ndarray) -> None:
    """``out`` <- LightGBM's cached training scores minus ``last`` (both (rows, cols) in
    LightGBM's layout, float64), and ``last`` <- those scores: the outputs of the trees grown
    since ``last`` was fetched. The scores are fetched into ``out`` and the difference taken
    in place a block of rows at a time (no second full-size buffer)."""
    fetch_scores(booster, out)
    for rows in row_blocks(*out.shape):
        new = out[rows].copy()
        out[rows] -= last[rows]
        last[rows] = new


def set_round_leaves(
    booster: lgb.Booster,
    rounds: Sequence[tuple[int, float]],
    per_round: int,
    output: Callable[[np.ndarray, float], np.ndarray],
) -> None:
    """Set every leaf of ``rounds`` ((first tree, alpha) each, in tree order; ``per_round``
    trees a round) to ``output(values, alpha)`` of the values LightGBM fitted, read from ONE
    model text of those rounds; its cached training scores are left as they are."""
    start, stop = rounds[0][0] // per_round, rounds[-1][0] // per_round + 1
    trees = leaf_values(booster.model_to_string(start_iteration=start, num_iteration=stop - start))
    for first, alpha in rounds:
        for tree in range(first, first + per_round):
            values = output(np.asarray(trees[tree - start * per_round]), alpha)
            for leaf, value in enumerate(values.tolist()):
                booster.set_leaf_output(tree, leaf, value)


def stored_leaves(values: np.ndarray) -> np.ndarray:
    """The leaf values LightGBM stores for ``values`` (``set_leaf_output``): those within
    +-1e-35 (LightGBM's kZeroThreshold, a float) become 0."""
    return np.where(np.abs(values) <= _ZERO_THRESHOLD, 0.0, values)


def fit_layout(dataset: lgb.Dataset, design: str, params: dict[str, Any]) -> str:
    """The layout a fit on the constructed ``dataset`` uses: :func:`histogram_layout`, unless
    that picks column-wise for a stacked design of at least ``PROBE_MIN_ROWS`` rows; then the
    faster of the two on this Dataset (one seeded tree each; creating a row-wise Booster
    costs about 3x a column-wise one, and the fit creates its own afterwards)."""
    rule = histogram_layout(dataset, design)
    if design == "per_action" or rule == "force_row_wise":
        return rule
    n_rows = dataset.num_data()
    if n_rows < PROBE_MIN_ROWS:
        return rule
    rng = np.random.default_rng(0)
    grad = rng.standard_normal(n_rows).astype(np.float32)
    hess = np.ones(n_rows, dtype=np.float32)
    seconds = {}
    for layout in LAYOUTS:
        probe = lgb.Booster({**params, layout: True}, dataset)
        start = time.perf_counter()
        for _ in range(PROBE_ROUNDS):
            update_one_iter(probe, grad, hess)
        seconds[layout] = time.perf_counter() - start
        del probe  # frees its LightGBM handle; the Dataset stays with the fit
    return min(LAYOUTS, key=seconds.__getitem__)


def merge_in_front(booster: lgb.Booster, model: lgb.Booster) -> None:
    """Put ``model``'s trees in front of ``booster``'s (an empty fit's, or a model being
    assembled). LightGBM's cached training scores stay as they are, which is all
    ``LightGBMTree.fit_round`` needs (it reads their change)."""
    _safe_call(_LIB.LGBM_BoosterMerge(booster._handle, model._handle))
