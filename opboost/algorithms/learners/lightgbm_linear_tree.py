"""A per-action linear model as ONE LightGBM tree with linear leaves.

LightGBM's model text can hold linear trees (``is_linear=1``): each leaf outputs
``leaf_const + sum_j leaf_coeff[j] * x[leaf_features[j]]``. A tree whose splits send every
designed row (x, a) to the leaf of its action a therefore predicts q(x, a) = b_a + x . w_a
exactly, so a linear reward model can sit in front of a policy's ensemble and the policy stays
one ordinary LightGBM model (LightGBM text plus JSON, no pickle; predictions on dense and CSR
rows by LightGBM itself). A row with a NaN in one of the leaf's features gets the leaf's
``leaf_value``, set to b_a (LightGBM's rule for linear leaves).

Designs: ``"stacked"`` rows [x; a] with the action index in column d (a balanced tree of
numerical splits ``a <= k + 0.5``, depth ceil(log2 K)); ``"stacked_onehot"`` rows [x; e_a]
(a chain of splits on the indicator columns d + a); ``"per_action"``, K trees on the contexts
(tree a is action a's linear leaf).
"""

from __future__ import annotations

import lightgbm as lgb
import numpy as np

__all__ = ["column_tree_model", "linear_tree_model"]

#: decision_type of a numerical split, default left, no missing-value handling.
_NUMERICAL = 2


def _balanced_splits(n_actions: int, column: int) -> tuple[list, list, list, list]:
    """(split features, thresholds, left children, right children) of a balanced tree over
    the action index in ``column``; leaf a is action a (child code ~a)."""
    features: list[int] = []
    thresholds: list[float] = []
    left: list[int] = []
    right: list[int] = []

    def node(low: int, high: int) -> int:
        if low == high:
            return ~low
        index = len(features)
        middle = (low + high) // 2
        features.append(column)
        thresholds.append(middle + 0.5)
        left.append(0)
        right.append(0)
        left[index] = node(low, middle)
        right[index] = node(middle + 1, high)
        return index

    node(0, n_actions - 1)
    return features, thresholds, left, right


def _indicator_chain(n_actions: int, column: int) -> tuple[list, list, list, list]:
    """Node k tests indicator column ``column + k``: 1 -> leaf k, 0 -> node k + 1 (the last
    node's 0 -> leaf K - 1)."""
    last = n_actions - 2
    features = [column + k for k in range(n_actions - 1)]
    left = [k + 1 if k < last else ~(n_actions - 1) for k in range(n_actions - 1)]
    right = [~k for k in range(n_actions - 1)]
    return features, [0.5] * (n_actions - 1), left, right


def _numbers(values) -> str:
    return " ".join(repr(float(v)) for v in values)


def _tree_block(weights: np.ndarray, intercepts: np.ndarray, splits: tuple, index: int = 0) -> str:
    """The ``Tree=index`` block: leaf l = intercepts[l] + x . weights[:, l] (non-zero terms)."""
    features, thresholds, left, right = splits
    n_leaves, n_nodes = len(intercepts), len(features)
    used = [np.flatnonzero(weights[:, a]) for a in range(n_leaves)]
    ones = " ".join(["1"] * n_leaves)
    zeros = " ".join(["0"] * n_nodes)
    return "\n".join(
        [
            f"Tree={index}",
            f"num_leaves={n_leaves}",
            "num_cat=0",
            "split_feature=" + " ".join(map(str, features)),
            "split_gain=" + zeros,
            "threshold=" + _numbers(thresholds),
            "decision_type=" + " ".join([str(_NUMERICAL)] * n_nodes),
            "left_child=" + " ".join(map(str, left)),
            "right_child=" + " ".join(map(str, right)),
            "leaf_value=" + _numbers(intercepts),
            "leaf_weight=" + ones,
            "leaf_count=" + ones,
            "internal_value=" + zeros,
            "internal_weight=" + zeros,
            "internal_count=" + zeros,
            "is_linear=1",
            "leaf_const=" + _numbers(intercepts),
            "num_features=" + " ".join(str(len(u)) for u in used),
            "leaf_features=" + "".join(" ".join(map(str, u)) + "  " for u in used),
            "leaf_coeff=" + "".join(_numbers(weights[u, a]) + "  " for a, u in enumerate(used)),
            "shrinkage=1",
            "",
            "",
        ]
    )


def linear_tree_model(
    weights: np.ndarray, intercepts: np.ndarray, design: str, header: str
) -> lgb.Booster:
    """A LightGBM model of one linear tree predicting intercepts[a] + x . weights[:, a] on the
    designed rows of ``design`` ("stacked" or "stacked_onehot"), or as K trees, one per
    action, on the contexts (``"per_action"``: a ``num_class=K`` model; each tree's one split,
    on column 0 at 0, leads to two copies of its action's linear leaf); ``weights`` (d, K) over
    the context columns, ``intercepts`` (K,), K >= 2. ``header`` is the model text of an
    empty booster on the same designed columns (everything before its ``tree_sizes=`` line is
    used)."""
    d, n_actions = weights.shape
    if n_actions < 2 or intercepts.shape != (n_actions,):
        raise ValueError(f"linear_tree_model: need K >= 2 actions; got weights {weights.shape}")
    weights = np.asarray(weights, dtype=np.float64)
    head = header[: header.index("tree_sizes=")]
    if design == "per_action":
        split = ([0], [0.0], [~0], [~1])
        blocks = [
            _tree_block(weights[:, [a, a]], intercepts[[a, a]], split, index=a)
            for a in range(n_actions)
        ]
        return lgb.Booster(model_str=head + "".join(blocks) + "\nend of trees\n")
    if design == "stacked":
        splits = _balanced_splits(n_actions, d)
    elif design == "stacked_onehot":
        splits = _indicator_chain(n_actions, d)
    else:
        raise ValueError(f"linear_tree_model: no linear tree for action_design={design!r}")
    block = _tree_block(weights, intercepts, splits)
    return lgb.Booster(model_str=head + block + "\nend of trees\n")


def column_tree_model(column: int, header: str, coefficient: float = 1.0) -> lgb.Booster:
    """A LightGBM model of one linear tree that outputs ``coefficient`` times the value of
    designed column ``column`` (both leaves of its one split; a missing value gives 0).
    ``header``: as for :func:`linear_tree_model`."""
    weights = np.zeros((column + 1, 2))
    weights[column] = coefficient
    head = header[: header.index("tree_sizes=")]
    block = _tree_block(weights, np.zeros(2), ([column], [0.0], [~0], [~1]))
    return lgb.Booster(model_str=head + block + "\nend of trees\n")
