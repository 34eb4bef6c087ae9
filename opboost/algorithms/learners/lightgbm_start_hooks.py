"""``lightgbm_tree``'s reward-model start over fixed actions: the reward model that
:mod:`opboost.algorithms.learners.lightgbm_reward_start` fits, scaled and put in front of the
ensemble as its first trees (stacked designs), or read once per action (per-action trees,
:func:`opboost.lgbm.action_trees.per_action_model`).

:class:`RewardStartHooks` is the part of
:class:`~opboost.algorithms.learners.lightgbm_tree.LightGBMTree` behind
``Booster(warm_start="reward_model")`` and the default start; the start on candidate pairs is
:class:`~opboost.algorithms.learners.lightgbm_pairs.PairRounds`'.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from opboost.algorithms.learners.lightgbm_reward_start import (
    fit_reward_model,
    merge_in_front,
    refit_choice,
)
from opboost.api.exceptions import InvalidParameterError
from opboost.api.learner_toolkit import as_contexts
from opboost.lgbm.rows import categorical_columns

__all__ = ["SCALE_CONTEXTS", "RewardStartHooks"]

#: Most contexts whose q sets the scale of a start that no rounds follow
#: (``start_alone_from_rewards``): the scale makes the softmax's top probability a target on
#: average over the rows, an average 2,000 rows pin down (predicting q on 10,000 contexts of
#: 10 actions took 0.6 s, a quarter of a 100,000-row refit).
SCALE_CONTEXTS = 2_000


class RewardStartHooks:
    """Mixin of ``LightGBMTree``: the [`BaseLearner`][opboost.api.learner.BaseLearner] hooks of the
    reward-model start (``offers_reward_start``, ``prefers_reward_start``,
    ``start_from_rewards``, ``start_alone_from_rewards``, ``refit_params``)."""

    def offers_reward_start(self) -> bool:
        """True for regression trees (a joint (x, a) reward model, per action if need be)."""
        return self.reduction == "regression"

    def prefers_reward_start(self) -> bool:
        """Stacked designs only: per-action trees won from F_0 = 0 (docs/scaling.md)."""
        return self.offers_reward_start() and self.action_design != "per_action"

    def start_from_rewards(
        self,
        contexts: Any,
        actions: np.ndarray,
        rewards: np.ndarray,
        scale: Callable[[np.ndarray], float],
    ) -> np.ndarray | None:
        """F_0 = scale(q) q: a reward model chosen on held-out logs (LightGBM trees, or a
        per-action linear model and trees; ``lightgbm_reward_start``), scaled, in front of the
        ensemble (not a round); returns F_0 on the training rows (n, K) and records what was
        chosen in ``reward_start_``. Per-action trees get each tree of the model (fitted on
        stacked rows [x; a]) as K trees, one per action. None for classifier trees. With the
        ``reward_start`` parameter set, the family and trees it says."""
        self._check_prepared()
        if not self.offers_reward_start():
            return None
        model, factor = self._fit_start(contexts, actions, rewards, scale, None)
        return model.q * factor

    def start_alone_from_rewards(
        self,
        contexts: Any,
        actions: np.ndarray,
        rewards: np.ndarray,
        scale: Callable[[np.ndarray], float],
    ) -> bool:
        """``start_from_rewards`` for a fit that ends at its start: the n*K training pairs
        are not scored (in a default fit's refit of the start alone that was most of its
        time), and the scale is read off q on at most ``SCALE_CONTEXTS`` (2,000) contexts."""
        self._check_prepared()
        if not self.offers_reward_start():
            return False
        self._fit_start(contexts, actions, rewards, scale, SCALE_CONTEXTS)
        return True

    def _fit_start(self, contexts, actions, rewards, scale, q_sample) -> tuple[Any, float]:
        """Fit the reward model, put it in front of the ensemble scaled by ``scale(q)``:
        (the model, the factor). The callers checked that the learner is prepared."""
        booster = self.booster_
        if booster.num_trees() or self.n_rounds_:
            raise InvalidParameterError(
                "LightGBMTree.start_from_rewards: call it right after prepare, before rounds."
            )
        X = as_contexts(contexts, self.n_features_, missing=True)
        categorical = categorical_columns(self.categorical_features, self.n_features_)
        per_action = self.action_design == "per_action"
        design = (self.n_actions_, "stacked" if per_action else self.action_design, categorical)
        pairs = None if per_action else booster.train_set  # per-action: no stacked Dataset
        model = fit_reward_model(X, actions, rewards, *design, self._seed, self.num_threads,
                                 pairs=pairs, repeat=self.reward_start,
                                 q_sample=q_sample)  # fmt: skip
        factor = float(scale(model.q))
        merge_in_front(booster, model.start_model(factor, self._empty_text if per_action else None))
        self.reward_start_ = {**model.report, "scale": factor}
        self._start_choice = refit_choice(model.report)
        return model, factor

    def refit_params(self) -> dict[str, Any]:
        """``{"reward_start": {"family": "auto", "count": ...}}`` after
        ``start_from_rewards``: in a refit on every logged row the trees follow their held-out
        count where this start's did, and only there
        (``lightgbm_reward_start.refit_choice``); {} before."""
        choice = getattr(self, "_start_choice", None)
        return {} if choice is None else {"reward_start": dict(choice)}
