"""The LightGBM parameters of the LightGBM base learners: the settings the learners control
(which ``params`` may not set, nor their aliases), the named parameters, and the declared
constraints ``lightgbm_tree`` and ``lightgbm_dask_tree`` share."""

from __future__ import annotations

import difflib
import functools
from collections.abc import Mapping
from numbers import Integral, Real
from typing import Any

import lightgbm as lgb

from opboost.api.constraints import InstanceOf, Interval, Options, Rule, Satisfies
from opboost.api.exceptions import InvalidParameterError
from opboost.api.learner_toolkit import HESSIAN_UNITS
from opboost.lgbm.rows import ACTION_DESIGNS
from opboost.lgbm.threads import NUM_THREADS

__all__ = [
    "CATEGORICAL_FEATURES",
    "LIGHTGBM_PARAMS",
    "LIGHTGBM_TREE_CONSTRAINTS",
    "TREE_ONLY_DEFAULTS",
    "check_lightgbm_params",
    "lightgbm_aliases",
    "lightgbm_params_problem",
    "tree_params",
]

#: LightGBM settings the learner controls; ``params`` may not set them (or their aliases).
_RESERVED = frozenset(
    {
        "objective",
        "objective_type",
        "app",
        "application",
        "loss",
        "learning_rate",
        "shrinkage_rate",
        "eta",
        "num_class",
        "num_classes",
        "boosting",
        "boosting_type",
        "boost",
        "linear_tree",
        "linear_trees",
        "num_iterations",
        "num_iteration",
        "n_iter",
        "num_tree",
        "num_trees",
        "num_round",
        "num_rounds",
        "nrounds",
        "num_boost_round",
        "n_estimators",
        "max_iter",
        "init_score",
        "categorical_feature",
        "cat_feature",
        "categorical_column",
        "cat_column",
        "categorical_features",
        "cat_l2",
        "weight",
        "label",
    }
)


#: The learner's named parameters that are LightGBM parameters (LightGBM's name -> ours).
_NAMED = {
    "num_leaves": "num_leaves",
    "max_depth": "max_depth",
    "min_data_in_leaf": "min_data_in_leaf",
    "min_sum_hessian_in_leaf": "min_sum_hessian_in_leaf",
    "lambda_l2": "lambda_l2",
    "feature_fraction": "feature_fraction",
    "max_bin": "max_bin",
    "num_threads": "num_threads",
    "seed": "random_state",
}


@functools.cache
def lightgbm_aliases() -> dict[str, str]:
    """Every LightGBM parameter name and alias -> its main name ({} if LightGBM hides it)."""
    try:
        table = lgb.basic._ConfigAliases._get_all_param_aliases()
    except Exception:
        return {}
    out: dict[str, str] = {}
    for main, aliases in table.items():
        out[main] = main
        for alias in aliases:
            out.setdefault(alias, main)
    return out


def lightgbm_params_problem(extra: Mapping[str, Any]) -> str | None:
    """What is wrong with ``params`` (after "The 'params' parameter of <learner>"), or None:
    settings the learner controls (and their aliases), aliases of its named parameters, and
    names LightGBM does not know (with a "did you mean")."""
    aliases = lightgbm_aliases()
    reserved = {aliases.get(k, k) for k in _RESERVED}
    bad = sorted(k for k in extra if k in _RESERVED or aliases.get(k) in reserved)
    if bad:
        return (
            f"may not set {bad}: the learner controls them (objective, learning rate 1, trees "
            f"per round)."
        )
    for key, value in extra.items():
        main = aliases.get(key, key)
        if key in _NAMED or main in _NAMED:
            ours = _NAMED.get(key) or _NAMED[main]
            what = "" if key == main else f" ({key!r} is LightGBM's alias of {main!r})"
            return (
                f"may not set {key!r}{what}, one of the named parameters: use {ours}={value!r} "
                f"(named parameter) instead."
            )
        if aliases and key not in aliases:
            close = difflib.get_close_matches(str(key), list(aliases), n=3, cutoff=0.6)
            hint = " Did you mean " + " or ".join(map(repr, close)) + "?" if close else ""
            return (
                f"has {key!r}, which is not a LightGBM parameter (LightGBM would ignore it).{hint}"
            )
    return None


def check_lightgbm_params(extra: Mapping[str, Any], owner: str) -> None:
    """Raise :func:`lightgbm_params_problem`'s problem with ``params`` as an error."""
    problem = lightgbm_params_problem(extra)
    if problem is not None:
        raise InvalidParameterError(f"The 'params' parameter of {owner} {problem}")


#: ``params``: extra LightGBM settings, checked by :func:`lightgbm_params_problem`.
LIGHTGBM_PARAMS = [
    InstanceOf(dict, "a dict"),
    None,
    Rule(lambda p: lightgbm_params_problem(p["params"] or {})),
]

#: ``categorical_features``: None or a list of context column indices.
CATEGORICAL_FEATURES = [
    None,
    Satisfies(
        lambda v: (
            isinstance(v, list | tuple)
            and all(isinstance(j, Integral) and not isinstance(j, bool) and j >= 0 for j in v)
        ),
        "a list of context column indices (ints >= 0)",
    ),
]

#: Constraints of the LightGBM tree parameters shared with ``lightgbm_dask_tree``.
LIGHTGBM_TREE_CONSTRAINTS: dict[str, list[Any]] = {
    "num_leaves": [Interval(Integral, 2, 131072)],
    "max_depth": [Interval(Integral, -1, None, fix="use -1 for no depth limit")],
    "min_data_in_leaf": [Interval(Integral, 1, None)],
    "min_sum_hessian_in_leaf": [Interval(Real, 0.0, None)],
    "lambda_l2": [Interval(Real, 0.0, None)],
    "feature_fraction": [Interval(Real, 0.0, 1.0, closed="right")],
    "max_bin": [Interval(Integral, 2, None)],
    "num_threads": NUM_THREADS,
    "hessian_units": [Options(HESSIAN_UNITS)],
    "action_design": [Options(ACTION_DESIGNS)],
    "random_state": ["random_state"],
    "params": LIGHTGBM_PARAMS,
}

#: ``lightgbm_tree``'s parameters that ``lightgbm_dask_tree`` lacks, at their defaults: a
#: policy fitted on Dask records the equivalent ``lightgbm_tree`` (it loads without Dask).
TREE_ONLY_DEFAULTS: dict[str, Any] = {
    "categorical_features": None,
    "hessian_units": "mean",
    "reward_start": None,
}


def tree_params(learner: Any, seed: int) -> dict[str, Any]:
    """The validated LightGBM parameters of a fit of the tree learner ``learner`` (its
    ``num_leaves``, ``max_depth``, ..., ``num_threads`` and extra ``params``): no objective of
    LightGBM's (the gradients are given) and learning rate 1, so every leaf is the weighted
    mean of its targets; deterministic, so the trees are the same at any thread count."""
    learner.validate_params()
    extra = {} if learner.params is None else learner.params
    params = {
        "objective": "none",
        "learning_rate": 1.0,
        "boosting": "gbdt",
        "verbose": -1,
        "num_leaves": learner.num_leaves,
        "max_depth": learner.max_depth,
        "min_data_in_leaf": learner.min_data_in_leaf,
        "min_sum_hessian_in_leaf": learner.min_sum_hessian_in_leaf,
        "lambda_l2": learner.lambda_l2,
        "feature_fraction": learner.feature_fraction,
        "max_bin": learner.max_bin,
        "num_threads": learner.num_threads,  # "auto" resolved by the learner's prepare
        "seed": seed,
        "deterministic": True,  # the same trees at any thread count
        # Categorical splits add cat_l2 to the leaf denominator; 0 keeps leaves exact
        # weighted means (lambda_l2 still applies).
        "cat_l2": 0.0,
    }
    params.update(extra)
    return params
