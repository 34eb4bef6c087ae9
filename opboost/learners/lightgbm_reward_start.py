"""The reward-model start of a LightGBM policy: F_0 = s q(x, a), q a LightGBM reward model.

``Booster(warm_start="reward_model")`` starts boosting at the direct-method policy. For
``lightgbm_tree`` the reward model's own trees become the ensemble's first members, scaled by
s = 1 / tau, so F_0 IS the reward model (no distillation): q is a LightGBM least-squares
regression of r_i on the logged rows' designed features [x_i; a_i] (the same columns as the
policy's stacked rows, so its trees read the policy's rows), with the settings of the
``reward_regression`` policy learner. docs/defaults.md has the measurements behind it.
"""

from __future__ import annotations

from typing import Any

import lightgbm as lgb
import numpy as np
from lightgbm.basic import _LIB, _safe_call

from opboost.api.design import action_rows
from opboost.learners.lightgbm_model_text import leaf_values
from opboost.learners.lightgbm_rows import design_rows

__all__ = ["REWARD_MODEL_PARAMS", "fit_reward_trees", "merge_in_front", "scale_leaves"]

#: LightGBM settings of the reward model (those of ``RewardRegression``'s defaults).
REWARD_MODEL_PARAMS: dict[str, Any] = {
    "objective": "regression",
    "num_iterations": 200,
    "learning_rate": 0.05,
    "num_leaves": 31,
    "min_data_in_leaf": 20,
    "verbose": -1,
}
#: Contexts predicted per call when evaluating q on every training pair (bounds the designed
#: rows held at once to this many contexts times K).
_PREDICT_CHUNK = 20_000


def fit_reward_trees(
    X: Any,
    actions: np.ndarray,
    rewards: np.ndarray,
    n_actions: int,
    design: str,
    categorical: Any,
    seed: int,
    num_threads: int,
) -> tuple[lgb.Booster, np.ndarray]:
    """(reward model, q (n, K) on every pair of the contexts ``X`` (n, d)).

    ``design`` is the policy's "stacked" (action as one categorical column) or
    "stacked_onehot"; ``categorical`` the context columns LightGBM treats as categorical
    (a list, or "auto" for none). ``num_threads`` 0 means LightGBM's default.
    """
    n, d = X.shape
    onehot = design == "stacked_onehot"
    rows = action_rows(X, actions, n_actions, action_encoding="onehot" if onehot else "index")
    context_columns = [] if categorical == "auto" else list(categorical)
    params = dict(REWARD_MODEL_PARAMS, seed=seed, num_threads=num_threads)
    dataset = lgb.Dataset(
        rows,
        np.asarray(rewards, dtype=np.float64),
        feature_name=[f"Column_{j}" for j in range(rows.shape[1])],
        categorical_feature=context_columns if onehot else [*context_columns, d],
        params=params,
        free_raw_data=True,
    )
    model = lgb.train(params, dataset)
    # A predict without num_threads resets LightGBM's process-wide OpenMP threads to every
    # core, and the policy's rounds that follow would then spin on a busy machine.
    threads = {"num_threads": num_threads} if num_threads else {}
    q = np.empty((n, n_actions))
    for start in range(0, n, _PREDICT_CHUNK):
        part = X[start : start + _PREDICT_CHUNK]
        pairs = design_rows(part, n_actions, design)
        q[start : start + part.shape[0]] = np.asarray(
            model.predict(pairs, raw_score=True, **threads)
        ).reshape(-1, n_actions)
    return model, q


def scale_leaves(model: lgb.Booster, factor: float) -> lgb.Booster:
    """``model`` with every leaf output multiplied by ``factor`` (in place; returned)."""
    for tree, values in enumerate(leaf_values(model.model_to_string())):
        for leaf, value in enumerate(values):
            model.set_leaf_output(tree, leaf, value * factor)
    return model


def merge_in_front(booster: lgb.Booster, model: lgb.Booster) -> None:
    """Put ``model``'s trees in front of the empty ``booster`` (a fit's). LightGBM's cached
    training scores stay as they are, which is all ``LightGBMTree.fit_round`` needs (it
    reads their change)."""
    _safe_call(_LIB.LGBM_BoosterMerge(booster._handle, model._handle))
