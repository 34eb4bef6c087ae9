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
from opboost.api.data import LoggedBandit
from opboost.api.exploration import ExplorationMixin

__all__ = ["PolicyLearner"]


class PolicyLearner(ExplorationMixin, Component, ABC):
    """``fit(LoggedBandit)`` then greedy ``predict``; scores from ``decision_function``;
    deployed with exploration by ``sample`` (:class:`~opboost.api.exploration.ExplorationMixin`)."""

    kind: ClassVar[str] = "policy_learner"

    @abstractmethod
    def fit(self, data: LoggedBandit) -> PolicyLearner:
        """Learn from the logged rows; return self."""

    @abstractmethod
    def decision_function(self, X: Any) -> np.ndarray:
        """Action scores, shape (m, K); the greedy policy takes their argmax."""

    def predict(self, X: Any) -> np.ndarray:
        """Greedy actions, shape (m,)."""
        return np.asarray(self.decision_function(X)).argmax(axis=1)

    def predict_proba(self, X: Any) -> np.ndarray:
        """The greedy policy as (m, K) one-hot probabilities."""
        scores = np.asarray(self.decision_function(X))
        probs = np.zeros_like(scores, dtype=np.float64)
        probs[np.arange(len(scores)), scores.argmax(axis=1)] = 1.0
        return probs
