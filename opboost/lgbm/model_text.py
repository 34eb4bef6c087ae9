"""Structural validation of LightGBM model text, before LightGBM parses it.

LightGBM aborts the process on some malformed model text instead of raising, and a checksum
proves only that a file was not damaged by accident. :func:`check_model_text` checks every
part LightGBM or its Python package reads: the header fields, ``tree_sizes`` against the
``Tree=`` blocks, every tree's array lengths, child indices forming one tree, feature
indices, categorical bitsets and finite numbers, and (:mod:`.lightgbm_model_fields`) the
feature names and infos and the sections after the trees, ``parameters:`` included; it raises
``ValueError`` naming what is wrong.
"""

from __future__ import annotations

import itertools
import math
import re

from opboost.lgbm.model_fields import FLOAT_RE, check_features, check_tail

__all__ = ["check_model_text", "leaf_values"]

_INT_RE = re.compile(r"-?[0-9]{1,10}")
_INT32 = 2**31 - 1
# Header keys LightGBM requires before the trees.
_HEADER_KEYS = (
    "version",
    "num_class",
    "num_tree_per_iteration",
    "label_index",
    "max_feature_idx",
    "feature_names",
    "feature_infos",
    "tree_sizes",
)
# Per-tree arrays: (name, per leaf (else per internal node), int (else float), required).
_TREE_ARRAYS = (
    ("split_feature", False, True, True),
    ("split_gain", False, False, False),
    ("threshold", False, False, True),
    ("decision_type", False, True, True),
    ("left_child", False, True, True),
    ("right_child", False, True, True),
    ("leaf_value", True, False, True),
    ("leaf_weight", True, False, False),
    ("leaf_count", True, True, False),
    ("internal_value", False, False, False),
    ("internal_weight", False, False, False),
    ("internal_count", False, True, False),
)
_TREE_KEYS = {name for name, *_ in _TREE_ARRAYS} | {
    "num_leaves",
    "num_cat",
    "cat_boundaries",
    "cat_threshold",
    "is_linear",
    "shrinkage",
    "leaf_const",
    "num_features",
    "leaf_features",
    "leaf_coeff",
}


def _int(value: str, what: str, low: int = -_INT32 - 1, high: int = _INT32) -> int:
    if not _INT_RE.fullmatch(value) or not low <= int(value) <= high:
        raise ValueError(f"{what} must be an integer in {low} .. {high}; got {value[:40]!r}")
    return int(value)


#: How LightGBM writes an infinite split threshold (a split of the missing values, NaN, from
#: every number: ``x <= inf``).
_INFINITE = ("inf", "-inf")


def _numbers(
    value: str, what: str, *, integer: bool, sep: str | None = " ", infinite: bool = False
) -> list:
    """The space-separated numbers of a model line (empty -> []), all finite (or, with
    ``infinite``, "inf" and "-inf" too)."""
    tokens = value.split(sep) if value.strip() else []
    out: list = []
    for i, token in enumerate(tokens):
        if integer:
            out.append(_int(token, f"{what}[{i}]"))
        elif infinite and token in _INFINITE:
            out.append(float(token))
        else:
            number = float(token) if FLOAT_RE.fullmatch(token) else math.nan
            if not math.isfinite(number):
                kind = "a finite number or inf" if infinite else "a finite number"
                raise ValueError(f"{what}[{i}] must be {kind}; got {token[:40]!r}")
            out.append(number)
    return out


def _key_values(lines: list[str], where: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in lines:
        key, eq, value = line.partition("=")
        if not eq:
            if line == "average_output":  # a flag line of random-forest models
                out[line] = ""
                continue
            raise ValueError(f"{where}: expected key=value, got {line[:60]!r}")
        if key in out:
            raise ValueError(f"{where}: duplicate key {key!r}")
        out[key] = value
    return out


def _check_tree(block: str, index: int, n_features: int) -> None:
    """One ``Tree=`` block: the arrays LightGBM's parser reads, with the right lengths and
    values, and child links that form a single binary tree."""
    where = f"tree {index}"
    head, _, rest = block.partition("\n")
    if head != f"Tree={index}":
        raise ValueError(f"{where}: the block starts with {head[:40]!r}, not 'Tree={index}'")
    body, _, tail = rest.partition("\n\n")
    if tail.strip("\n"):
        raise ValueError(f"{where}: unexpected text after the tree: {tail.strip()[:60]!r}")
    kv = _key_values(body.split("\n"), where)
    unknown = sorted(set(kv) - _TREE_KEYS)
    if unknown:
        raise ValueError(f"{where}: unknown field {unknown[0]!r}")
    for key in ("num_leaves", "num_cat", "leaf_value"):
        if key not in kv:
            raise ValueError(f"{where}: missing {key}")
    n_leaves = _int(kv["num_leaves"], f"{where}: num_leaves", 1, _INT32)
    n_cat = _int(kv["num_cat"], f"{where}: num_cat", 0, _INT32)
    n_nodes = n_leaves - 1
    arrays: dict[str, list] = {}
    for name, per_leaf, integer, required in _TREE_ARRAYS:
        if name not in kv:
            if required and n_nodes > 0:
                raise ValueError(f"{where}: missing {name}")
            continue
        infinite = name == "threshold"  # numerical splits of missing values: x <= inf
        values = _numbers(kv[name], f"{where}: {name}", integer=integer, infinite=infinite)
        expected = n_leaves if per_leaf else n_nodes
        # LightGBM writes a one-leaf tree's optional leaf arrays empty and does not read them.
        optional_empty = n_nodes == 0 and per_leaf and not required and not values
        if len(values) != expected and not optional_empty:
            raise ValueError(
                f"{where}: {name} has {len(values)} values but num_leaves={n_leaves} needs "
                f"{expected}"
            )
        arrays[name] = values
    shrinkage = _numbers(kv.get("shrinkage", "1"), f"{where}: shrinkage", integer=False)
    if len(shrinkage) != 1:
        raise ValueError(f"{where}: shrinkage must be one number")
    for name in ("leaf_count", "internal_count"):
        if any(v < 0 for v in arrays.get(name, ())):
            raise ValueError(f"{where}: {name} must be >= 0")
    is_linear = _int(kv.get("is_linear", "0"), f"{where}: is_linear", 0, 1)
    if n_nodes > 0:
        _check_links(arrays["left_child"], arrays["right_child"], n_leaves, where)
        for node, feature in enumerate(arrays["split_feature"]):
            if not 0 <= feature < n_features:
                raise ValueError(
                    f"{where}: split_feature[{node}]={feature} is outside 0 .. "
                    f"{n_features - 1} (max_feature_idx)"
                )
    _check_categorical(kv, arrays, n_cat, n_nodes, where)
    if is_linear:
        _check_linear(kv, n_leaves, n_features, where)


def _check_links(left: list[int], right: list[int], n_leaves: int, where: str) -> None:
    """Internal nodes 0 .. n-2 and leaves ~0 .. ~(n-1): each reached exactly once from the
    root, so prediction follows a finite path and indexes only existing arrays."""
    n_nodes = n_leaves - 1
    seen_nodes, seen_leaves = {0}, set()
    stack = [0]
    while stack:
        node = stack.pop()
        for side, child in (("left_child", left[node]), ("right_child", right[node])):
            if child >= 0:
                if child >= n_nodes or child in seen_nodes:
                    raise ValueError(
                        f"{where}: {side}[{node}]={child} is not an unused internal node "
                        f"0 .. {n_nodes - 1}"
                    )
                seen_nodes.add(child)
                stack.append(child)
            else:
                leaf = ~child
                if leaf >= n_leaves or leaf in seen_leaves:
                    raise ValueError(
                        f"{where}: {side}[{node}]={child} is not an unused leaf (-1 .. -{n_leaves})"
                    )
                seen_leaves.add(leaf)
    if len(seen_nodes) != n_nodes or len(seen_leaves) != n_leaves:
        raise ValueError(f"{where}: left_child/right_child do not link all nodes into one tree")


def _check_categorical(kv: dict, arrays: dict, n_cat: int, n_nodes: int, where: str) -> None:
    decision = arrays.get("decision_type", [])
    for node, value in enumerate(decision):
        if not 0 <= value <= 15 or (value >> 2) & 3 == 3:
            raise ValueError(f"{where}: decision_type[{node}]={value} is not a valid split type")
    categorical = [node for node, value in enumerate(decision) if value & 1]
    if len(categorical) != n_cat or n_cat > n_nodes:
        raise ValueError(f"{where}: num_cat={n_cat} but {len(categorical)} categorical splits")
    if n_cat == 0:
        return
    if "cat_boundaries" not in kv or "cat_threshold" not in kv:
        raise ValueError(f"{where}: num_cat={n_cat} needs cat_boundaries and cat_threshold")
    bounds = _numbers(kv["cat_boundaries"], f"{where}: cat_boundaries", integer=True)
    bitsets = _numbers(kv["cat_threshold"], f"{where}: cat_threshold", integer=True)
    if len(bounds) != n_cat + 1 or bounds[0] != 0 or bounds[-1] != len(bitsets):
        raise ValueError(
            f"{where}: cat_boundaries must be {n_cat + 1} offsets from 0 to "
            f"{len(bitsets)} (the cat_threshold words)"
        )
    if any(b > a for b, a in itertools.pairwise(bounds)):
        raise ValueError(f"{where}: cat_boundaries must not decrease")
    if any(not 0 <= word < 2**32 for word in bitsets):
        raise ValueError(f"{where}: cat_threshold words must be 32-bit unsigned integers")
    thresholds = arrays["threshold"]
    for node in categorical:
        t = thresholds[node]
        if not math.isfinite(t) or t != int(t) or not 0 <= t < n_cat:
            raise ValueError(
                f"{where}: threshold[{node}]={t} of a categorical split must index "
                f"0 .. {n_cat - 1} (num_cat)"
            )


def _check_linear(kv: dict, n_leaves: int, n_features: int, where: str) -> None:
    for key in ("leaf_const", "num_features", "leaf_features", "leaf_coeff"):
        if key not in kv:
            raise ValueError(f"{where}: a linear tree needs {key}")
    const = _numbers(kv["leaf_const"], f"{where}: leaf_const", integer=False)
    counts = _numbers(kv["num_features"], f"{where}: num_features", integer=True)
    if len(const) != n_leaves or len(counts) != n_leaves or min(counts) < 0:
        raise ValueError(f"{where}: leaf_const/num_features need {n_leaves} values (>= 0)")
    features = _numbers(kv["leaf_features"], f"{where}: leaf_features", integer=True, sep=None)
    coeffs = _numbers(kv["leaf_coeff"], f"{where}: leaf_coeff", integer=False, sep=None)
    if len(features) != sum(counts) or len(coeffs) != sum(counts):
        raise ValueError(f"{where}: leaf_features/leaf_coeff need {sum(counts)} values")
    if any(not 0 <= f < n_features for f in features):
        raise ValueError(f"{where}: leaf_features outside 0 .. {n_features - 1}")


def check_model_text(model: str, *, n_features: int, trees_per_round: int) -> None:
    """Validate LightGBM model text before LightGBM parses it; ``ValueError`` naming the
    first problem. ``n_features`` is the number of columns the model must read (the action
    design's width) and ``trees_per_round`` its ``num_tree_per_iteration``."""
    if "\r" in model or "\x00" in model:
        raise ValueError("carriage returns or NUL bytes in the model text")
    head, sep, rest = model.partition("\n\n")
    lines = head.split("\n")
    if not sep or lines[0] != "tree":
        raise ValueError("the model text must start with a 'tree' header block")
    kv = _key_values(lines[1:], "header")
    for key in _HEADER_KEYS:
        if key not in kv:
            raise ValueError(f"header: missing {key}")
    if not re.fullmatch(r"v[0-9]{1,3}", kv["version"]):
        raise ValueError(f"header: bad version {kv['version'][:20]!r}")
    n_class = _int(kv["num_class"], "header: num_class", 1, 1 << 16)
    per_iter = _int(kv["num_tree_per_iteration"], "header: num_tree_per_iteration", 1, 1 << 16)
    _int(kv["label_index"], "header: label_index", 0, _INT32)
    max_idx = _int(kv["max_feature_idx"], "header: max_feature_idx", 0, _INT32)
    if max_idx != n_features - 1:
        raise ValueError(
            f"header: max_feature_idx={max_idx} but the action design has {n_features} "
            f"columns (max_feature_idx={n_features - 1})"
        )
    if per_iter != trees_per_round or n_class not in (1, per_iter):
        raise ValueError(
            f"header: num_tree_per_iteration={per_iter}, num_class={n_class} but the action "
            f"design has {trees_per_round} trees per round"
        )
    for key in ("feature_names", "feature_infos"):
        if len(kv[key].split(" ")) != n_features:
            raise ValueError(f"header: {key} must list {n_features} features")
    check_features(kv["feature_names"].split(" "), kv["feature_infos"].split(" "))
    if "monotone_constraints" in kv:
        values = _numbers(kv["monotone_constraints"], "header: monotone_constraints", integer=True)
        if len(values) != n_features or any(not -1 <= v <= 1 for v in values):
            raise ValueError(f"header: monotone_constraints must be {n_features} of -1, 0, 1")
    if "objective" in kv and not re.fullmatch(r"[a-z_]+( [a-z_]+:[0-9.eE+-]+)*", kv["objective"]):
        raise ValueError(f"header: bad objective {kv['objective'][:60]!r}")
    sizes = _numbers(kv["tree_sizes"], "header: tree_sizes", integer=True)
    if len(sizes) % per_iter:
        raise ValueError(
            f"header: {len(sizes)} trees is not a multiple of num_tree_per_iteration={per_iter}"
        )
    blocks = len(re.findall(r"(?m)^Tree=", rest))
    if blocks != len(sizes):
        raise ValueError(f"header: tree_sizes lists {len(sizes)} trees but there are {blocks}")
    start = 0
    for index, size in enumerate(sizes):
        if size < 1 or start + size > len(rest):
            raise ValueError(f"header: tree_sizes[{index}]={size} runs past the model text")
        _check_tree(rest[start : start + size], index, n_features)
        start += size
    if not rest[start:].startswith("end of trees\n"):
        raise ValueError(
            f"tree_sizes do not match the Tree= blocks, or 'end of trees' is missing "
            f"(found {rest[start : start + 40]!r})"
        )
    check_tail(rest[start + len("end of trees\n") :])


def leaf_values(model_text: str) -> list[list[float]]:
    """Leaf values of every tree in LightGBM model text, in tree order."""
    trees = []
    for line in model_text.splitlines():
        if line.startswith("leaf_value="):
            trees.append([float(v) for v in line[len("leaf_value=") :].split()])
    return trees
