"""LightGBM's histogram layout for a fit, chosen by timing both on the fit's own Dataset, and
the one custom-gradient update every LightGBM round goes through.

LightGBM builds histograms column-wise or row-wise. Left alone it times both on the first
tree, which is not seeded (and was measured to pick the slower on Fashion-MNIST). Large fits
(at least ``PROBE_MIN_ROWS`` designed rows) time ``PROBE_ROUNDS`` trees of each layout on the
actual Dataset with seeded random gradients, the fastest first tree of each kept, and grow with
the faster; smaller fits follow the bin-count rule of :func:`histogram_layout`. The layout
changes only the speed: both give the same trees (tested), so the timing cannot change a
result. docs/performance.md has the measurements.
"""

from __future__ import annotations

import ctypes
import time
from typing import Any

import lightgbm as lgb
import numpy as np
from lightgbm.basic import _LIB, _safe_call

from opboost.learners.lightgbm_rows import histogram_layout

__all__ = ["LAYOUTS", "PROBE_MIN_ROWS", "PROBE_ROUNDS", "fit_layout", "update_one_iter"]

LAYOUTS = ("force_row_wise", "force_col_wise")
#: Designed rows (n*K stacked, or the candidate pairs) from which the layout is timed.
PROBE_MIN_ROWS = 200_000
#: Trees timed per layout (each on a fresh Booster; the fastest counts).
PROBE_ROUNDS = 2


def update_one_iter(booster: lgb.Booster, grad: np.ndarray, hess: np.ndarray) -> int:
    """Grow the next tree(s) from float32 ``grad`` and ``hess`` in LightGBM's row layout;
    the number of trees added: 0 when no split was possible (LightGBM dropped the round or,
    in its first round, kept a constant-0 tree that it never rolls back; harmless, it
    predicts 0)."""
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


def fit_layout(dataset: lgb.Dataset, design: str, params: dict[str, Any]) -> str:
    """The layout a fit on the constructed ``dataset`` uses: timed on it when it has at
    least ``PROBE_MIN_ROWS`` rows (stacked designs), else :func:`histogram_layout`."""
    if design == "per_action":
        return histogram_layout(dataset, design)
    n_rows = dataset.num_data()
    if n_rows < PROBE_MIN_ROWS:
        return histogram_layout(dataset, design)
    rng = np.random.default_rng(0)
    grad = rng.standard_normal(n_rows).astype(np.float32)
    hess = np.ones(n_rows, dtype=np.float32)
    seconds = {}
    for layout in LAYOUTS:
        probe = lgb.Booster({**params, layout: True}, dataset)
        times = []
        for _ in range(PROBE_ROUNDS):
            start = time.perf_counter()
            update_one_iter(probe, grad, hess)
            times.append(time.perf_counter() - start)
        seconds[layout] = min(times)
        del probe  # frees its LightGBM handle; the Dataset stays with the fit
    return min(LAYOUTS, key=seconds.__getitem__)
