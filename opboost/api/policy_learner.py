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
from opboost.api.serving.exploration import ExplorationMixin
from opboost.api.serving.masks import mask_scores, serving_mask

__all__ = ["PolicyLearner"]


class PolicyLearner(ExplorationMixin, Component, ABC):
    """``fit(LoggedBandit)`` then greedy ``predict``; scores from ``decision_function``; deployed
    with exploration by ``sample``
    ([`ExplorationMixin`][opboost.api.serving.exploration.ExplorationMixin]).

    ``predict`` and ``predict_proba`` take ``candidates=`` (each row's eligible actions) and
    never serve an action outside them; a learner fitted on logs with candidate sets must
    also fit and choose within them (``opboost.testing``'s candidate-set check).
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
        return self._served_scores(X, candidates, "predict").argmax(axis=1)

    def predict_proba(self, X: Any, *, candidates: Any = None) -> np.ndarray:
        """The greedy policy as (m, K) one-hot probabilities (on a candidate, when given)."""
        scores = self._served_scores(X, candidates, "predict_proba")
        probs = np.zeros_like(scores, dtype=np.float64)
        probs[np.arange(len(scores)), scores.argmax(axis=1)] = 1.0
        return probs

    def _served_scores(self, X: Any, candidates: Any, method: str) -> np.ndarray:
        """``decision_function(X)``, -inf outside ``candidates`` when given."""
        scores = np.asarray(self.decision_function(X), dtype=np.float64)
        if candidates is None:
            return scores
        owner = f"{type(self).__name__}.{method}"
        return mask_scores(scores, serving_mask(candidates, scores.shape, owner))
