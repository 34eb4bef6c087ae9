"""The distributed fit's model: the rounds' single trees merged into one LightGBM model."""

from __future__ import annotations

from collections.abc import Sequence

import lightgbm as lgb
import numpy as np
from lightgbm.basic import _LIB, _safe_call

from opboost.learners.lightgbm_model_text import leaf_values

__all__ = ["merge_rounds"]


def merge_rounds(
    trees: Sequence[str], weights: Sequence[float], *, n_columns: int, categorical: bool
) -> lgb.Booster:
    """One LightGBM model predicting sum_t weights[t] * tree_t from single-tree model texts.

    Each tree's leaves are scaled by its weight (``set_leaf_output``), then the models are
    merged with ``LGBM_BoosterMerge`` in round order. No trees: an empty model over
    ``n_columns`` columns (the last one categorical if ``categorical``).
    """
    if not trees:
        return _empty_model(n_columns, categorical)
    merged = None
    for text, weight in zip(trees, weights, strict=True):
        booster = lgb.Booster(model_str=text)
        if booster.num_trees() != 1:
            raise ValueError(
                f"merge_rounds: expected one tree per round, got {booster.num_trees()}"
            )
        for leaf, value in enumerate(leaf_values(text)[0]):
            booster.set_leaf_output(0, leaf, float(weight) * value)
        if merged is not None:  # puts merged's trees in front of this round's tree
            _safe_call(_LIB.LGBM_BoosterMerge(booster._handle, merged._handle))
        merged = booster
    return lgb.Booster(model_str=merged.model_to_string())


def _empty_model(n_columns: int, categorical: bool) -> lgb.Booster:
    params = {"objective": "none", "verbose": -1, "num_threads": 1}
    rows = np.zeros((2, n_columns))
    cats = [n_columns - 1] if categorical else "auto"
    dataset = lgb.Dataset(rows, params=params, categorical_feature=cats, free_raw_data=True)
    return lgb.Booster(model_str=lgb.Booster(params, dataset).model_to_string())
