"""The category codes a LightGBM model's categorical splits use, read from its model text.

A split is categorical when bit 0 of its ``decision_type`` is set; its ``threshold`` t then
indexes the tree's bitsets: the ``cat_threshold`` words ``cat_boundaries[t] ..
cat_boundaries[t + 1]``, in which code c is bit ``c % 32`` of word ``c // 32``, and a row whose
code's bit is set goes left. :func:`categorical_split_codes` gives, per model column, every code
any of its categorical splits names, so that a loaded policy can check them against the
category lists in its metadata (:mod:`opboost.api.files.model_consistency`). It reads text that
:func:`~opboost.lgbm.model_text.check_model_text` accepted.
"""

from __future__ import annotations

import numpy as np

__all__ = ["categorical_split_codes"]

_FIELDS = ("num_cat", "split_feature", "threshold", "decision_type", "cat_boundaries")


def categorical_split_codes(model_text: str) -> dict[int, np.ndarray]:
    """{model column: sorted distinct category codes its categorical splits use} over every
    tree of LightGBM ``model_text``; columns without a categorical split are absent."""
    found: dict[int, list[np.ndarray]] = {}
    tree: dict[str, str] = {}
    for line in model_text.split("\n"):
        if line.startswith("Tree=") or line == "end of trees":
            _tree_codes(tree, found)
            tree = {}
            if line == "end of trees":
                break
            continue
        key, eq, value = line.partition("=")
        if eq and (key in _FIELDS or key == "cat_threshold"):
            tree[key] = value
    return {column: np.unique(np.concatenate(codes)) for column, codes in sorted(found.items())}


def _tree_codes(tree: dict[str, str], found: dict[int, list[np.ndarray]]) -> None:
    """Add the codes of one tree's categorical splits (its fields as text) to ``found``."""
    if int(tree.get("num_cat", "0")) == 0:
        return
    decision = np.array(tree["decision_type"].split(), dtype=np.int64)
    nodes = np.flatnonzero(decision & 1)
    features = np.array(tree["split_feature"].split(), dtype=np.int64)[nodes]
    thresholds = np.array(tree["threshold"].split(), dtype=np.float64)[nodes].astype(np.int64)
    bounds = np.array(tree["cat_boundaries"].split(), dtype=np.int64)
    words = np.array(tree["cat_threshold"].split(), dtype=np.uint64).astype("<u4")
    for feature, t in zip(features.tolist(), thresholds.tolist(), strict=True):
        bits = np.unpackbits(words[bounds[t] : bounds[t + 1]].view(np.uint8), bitorder="little")
        found.setdefault(feature, []).append(np.flatnonzero(bits))
