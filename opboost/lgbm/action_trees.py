"""Stacked trees read as per-action trees: a LightGBM tree on designed rows [x; a] (or
[x; e_a]) whose action splits are decided for one action a is a tree on the contexts x alone.

So a joint reward model q(x, a), fitted on stacked rows, can sit in front of per-action rounds
(``action_design="per_action"``, a ``num_class=K`` model): each of its trees becomes K trees,
the one of class a being the tree with every split on the action column(s) replaced by the
branch action a takes. Leaf values are copied as LightGBM wrote them, and each class sums its
trees in the stacked order, so the per-action model predicts q(x, a) bit for bit (tested).

K separate regressors on the contexts become such a model the same way (``class_model``):
their trees interleaved as the classes' (``dr_reduction``'s saveable policy).
"""

from __future__ import annotations

from collections.abc import Sequence

import lightgbm as lgb

__all__ = ["class_model", "per_action_model"]

#: The fields of a tree block, in LightGBM's order (cat_* only when the tree has categorical
#: splits).
_NODE_FIELDS = ("split_feature", "split_gain", "threshold", "decision_type")
_INTERNAL_FIELDS = ("internal_value", "internal_weight", "internal_count")
_LEAF_FIELDS = ("leaf_value", "leaf_weight", "leaf_count")
#: LightGBM's kZeroThreshold: |value| at most this is zero for a "zero as missing" split.
_ZERO = 1e-35


def _tree_fields(block: str) -> dict[str, list[str]]:
    """The ``key=value`` lines of one tree block, values split into tokens."""
    fields = {}
    for line in block.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            fields[key] = value.split()
    return fields


def _goes_left(tree: dict[str, list[str]], node: int, value: float) -> bool:
    """Whether LightGBM sends a row whose split feature is ``value`` (an action index or a
    0/1 indicator: never NaN) to the left child of ``node``."""
    decision = int(tree["decision_type"][node])
    if decision & 1:  # categorical: left iff the category is in the node's bitset
        index = int(float(tree["threshold"][node]))
        low, high = (int(b) for b in tree["cat_boundaries"][index : index + 2])
        category = int(value)
        word = category // 32
        if category < 0 or word >= high - low:
            return False
        return bool((int(tree["cat_threshold"][low + word]) >> (category % 32)) & 1)
    if (decision >> 2) & 3 == 1 and abs(value) <= _ZERO:  # zero as missing: default side
        return bool(decision & 2)
    return value <= float(tree["threshold"][node])


def _resolved_block(tree: dict[str, list[str]], action_value, index: int) -> str:
    """Tree block ``Tree=index``: ``tree`` with every split on an action column decided by
    ``action_value(feature)`` (None for a context column), nodes renumbered depth first."""
    features = [int(f) for f in tree["split_feature"]]
    left = [int(c) for c in tree["left_child"]]
    right = [int(c) for c in tree["right_child"]]
    nodes: list[list[int]] = []  # [old node, new left code, new right code]
    leaves: list[int] = []  # old leaf indices
    stack = [(0 if features else -1, -1, 0)]  # (old code, new parent, side 1 left / 2 right)
    while stack:
        code, parent, side = stack.pop()
        while code >= 0 and (value := action_value(features[code])) is not None:
            code = left[code] if _goes_left(tree, code, value) else right[code]
        if code < 0:
            new = ~len(leaves)
            leaves.append(~code)
        else:
            new = len(nodes)
            nodes.append([code, 0, 0])
            stack += [(right[code], new, 2), (left[code], new, 1)]
        if parent >= 0:
            nodes[parent][side] = new
    kept = [node[0] for node in nodes]
    out = {key: [tree[key][i] for i in kept] for key in _NODE_FIELDS + _INTERNAL_FIELDS}
    out["left_child"] = [str(node[1]) for node in nodes]
    out["right_child"] = [str(node[2]) for node in nodes]
    boundaries, bits = [0], []
    for position, old in enumerate(kept):
        if int(tree["decision_type"][old]) & 1:  # a context category split: its own bitset
            at = int(float(tree["threshold"][old]))
            low, high = (int(b) for b in tree["cat_boundaries"][at : at + 2])
            out["threshold"][position] = str(len(boundaries) - 1)
            bits += tree["cat_threshold"][low:high]
            boundaries.append(len(bits))
    for key in _LEAF_FIELDS:  # LightGBM writes a one-leaf tree's leaf_weight empty
        out[key] = [tree[key][i] for i in leaves] if tree[key] else []
    lines = [f"Tree={index}", f"num_leaves={len(leaves)}", f"num_cat={len(boundaries) - 1}"]
    order = (*_NODE_FIELDS, "left_child", "right_child", *_LEAF_FIELDS, *_INTERNAL_FIELDS)
    lines += [f"{key}={' '.join(out[key])}" for key in order]
    if len(boundaries) > 1:
        lines += [f"cat_boundaries={' '.join(map(str, boundaries))}"]
        lines += [f"cat_threshold={' '.join(bits)}"]
    lines += ["is_linear=0", f"shrinkage={' '.join(tree.get('shrinkage', ['1']))}", "", ""]
    return "\n".join(lines)


def per_action_model(model: lgb.Booster, design: str, header: str) -> lgb.Booster:
    """The ``num_class=K`` model of ``model``'s trees (no linear ones) on the stacked rows of
    ``design`` ("stacked": the action index in column d; "stacked_onehot": indicators in
    columns d .. d+K-1) read per action: tree t of ``model`` becomes trees t*K + a, a < K,
    on the d context columns. ``header``: the model text of an empty ``num_class=K`` booster
    on those d columns (K and d are read from it; everything before its ``tree_sizes=`` line
    is used)."""
    head = header[: header.index("tree_sizes=")]
    fields = _tree_fields(head)
    n_actions, d = int(fields["num_class"][0]), int(fields["max_feature_idx"][0]) + 1
    if design == "stacked":
        values = [lambda f, a=a: float(a) if f == d else None for a in range(n_actions)]
    elif design == "stacked_onehot":
        values = [lambda f, a=a: (1.0 if f - d == a else 0.0) if f >= d else None
                  for a in range(n_actions)]  # fmt: skip
    else:
        raise ValueError(f"per_action_model: no action columns in design {design!r}")
    text = model.model_to_string()
    blocks = text[text.index("Tree=") : text.index("end of trees")].split("Tree=")[1:]
    out = []
    for t, block in enumerate(blocks):
        tree = _tree_fields("Tree=" + block)
        if tree.get("is_linear", ["0"])[0] != "0":
            raise ValueError(f"per_action_model: tree {t} is linear; read linear trees apart")
        out += [_resolved_block(tree, values[a], t * n_actions + a) for a in range(n_actions)]
    return lgb.Booster(model_str=head + "".join(out) + "end of trees\n")


#: A tree of one leaf of value 0 (a class with fewer trees than the others is padded so).
_ZERO_TREE = (
    "num_leaves=1\nnum_cat=0\nsplit_feature=\nsplit_gain=\nthreshold=\ndecision_type=\n"
    "left_child=\nright_child=\nleaf_value=0\nleaf_weight=\nleaf_count=\ninternal_value=\n"
    "internal_weight=\ninternal_count=\nis_linear=0\nshrinkage=1\n\n\n"
)


def class_model(models: Sequence[lgb.Booster | None], header: str) -> lgb.Booster:
    """The ``num_class=K`` model whose class a scores as ``models[a]`` (K regressors on the
    same d context columns; None scores 0): tree t of model a becomes tree t*K + a, and a
    model with fewer trees than the longest is padded with one-leaf trees of value 0, so the
    class sums its own trees in order (raw scores equal the regressors' predictions).
    ``header``: the model text of an empty ``num_class=K`` booster on the d columns."""
    head = header[: header.index("tree_sizes=")]
    n_classes = int(_tree_fields(head)["num_class"][0])
    if len(models) != n_classes:
        raise ValueError(f"class_model: {len(models)} models for num_class={n_classes}")
    blocks = []
    for model in models:
        if model is None:
            blocks.append([])
            continue
        text = model.model_to_string()
        trees = text[text.index("Tree=") : text.index("end of trees")].split("Tree=")[1:]
        blocks.append([tree[tree.index("\n") + 1 :] for tree in trees])  # without "Tree=t"
    n_rounds = max(1, *(len(b) for b in blocks))
    out = [
        f"Tree={t * n_classes + a}\n" + (blocks[a][t] if t < len(blocks[a]) else _ZERO_TREE)
        for t in range(n_rounds)
        for a in range(n_classes)
    ]
    return lgb.Booster(model_str=head + "".join(out) + "end of trees\n")
