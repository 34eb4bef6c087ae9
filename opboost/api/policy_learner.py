"""Base class of whole-policy learners (kind "policy_learner").

A policy learner fits a complete policy from logged bandit feedback in one call, with no
boosting rounds: the baselines the boosters are compared against (reward regression, a
Vowpal Wabbit ``--cb_adf`` learner, ...). Studies run them on the same logged rows as the
boosters (``policy_learner = { name = ... }`` in a config).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np

from opboost.api.component import Component
from opboost.api.data.logged import LoggedBandit
from opboost.api.numerics.arrays import one_hot
from opboost.api.serving.exploration import ExplorationMixin, served_tie_order
from opboost.api.serving.masks import greedy, mask_scores, serving_mask

__all__ = ["PolicyLearner"]


class PolicyLearner(ExplorationMixin, Component, ABC):
    """``fit(LoggedBandit)`` then greedy ``predict``; scores from ``decision_function``; deployed
    with exploration by ``sample``
    ([`ExplorationMixin`][opboost.api.serving.exploration.ExplorationMixin]).

    ``predict`` and ``predict_proba`` take ``candidates=`` (each row's eligible actions) and
    never serve an action outside them; a learner fitted on logs with candidate sets must
    also fit and choose within them (``opboost.testing``'s candidate-set check).

    Equal scores go to the first action in the fitted attribute ``tie_order_`` (K,) when the
    learner records one (``opboost.api.serving.tie_order.constant_tie_order`` of its logs, as
    the built-in learners do), else to the lower index.
    """

    kind: ClassVar[str] = "policy_learner"

    @abstractmethod
    def fit(self, data: LoggedBandit) -> PolicyLearner:
        """Learn from the logged rows; return self."""

    @abstractmethod
    def decision_function(self, X: Any) -> np.ndarray:
        """Action scores, shape (m, K); the greedy policy takes their argmax."""

    def predict(self, X: Any, *, candidates: Any = None) -> np.ndarray:
        """Greedy actions, shape (m,): the best-scoring action, among each row's
        ``candidates`` when given (an (m, K) boolean mask, dense or sparse)."""
        return self._greedy(self._served_scores(X, candidates, "predict"))

    def predict_proba(self, X: Any, *, candidates: Any = None) -> np.ndarray:
        """The greedy policy as (m, K) one-hot probabilities (on a candidate, when given)."""
        return self._greedy_probs(self._served_scores(X, candidates, "predict_proba"))

    def _greedy(self, scores: Any) -> np.ndarray:
        """(m,) int64: each row's best action of ``scores`` (m, K), equal scores broken in the
        learner's ``tie_order_`` when it has one, else to the lower index."""
        scores = np.asarray(scores, dtype=np.float64)
        return greedy(scores, served_tie_order(self, scores.shape[1]))

    def _greedy_probs(self, scores: Any) -> np.ndarray:
        """(m, K) float64: the greedy policy of ``scores`` (m, K) as one-hot probabilities."""
        scores = np.asarray(scores, dtype=np.float64)
        return one_hot(self._greedy(scores), scores.shape[1])

    def _served_scores(self, X: Any, candidates: Any, method: str) -> np.ndarray:
        """``decision_function(X)``, -inf outside ``candidates`` when given."""
        scores = np.asarray(self.decision_function(X), dtype=np.float64)
        if candidates is None:
            return scores
        owner = f"{type(self).__name__}.{method}"
        return mask_scores(scores, serving_mask(candidates, scores.shape, owner))
