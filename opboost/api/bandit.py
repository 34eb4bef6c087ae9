"""The contextual-bandit online protocol: act on one context, learn from one reward.

A [`BanditLearner`][opboost.api.bandit.BanditLearner] sees a context ``x`` (a dense ``(d,)`` float
array), samples an action from its own exploration distribution (with its own seeded generator), and
then learns from the reward of that action only; the label and the rewards of the other
actions are never shown. River style::

    action = learner.predict_one(x)        # samples; remembers p_t, the (K,) distribution
    learner.learn_one(x, action, reward)   # reward of ``action`` only

``n_actions`` (K) is a constructor parameter of every bandit learner: the action set must
be known before the first prediction (an online learner cannot infer K from rewards it
has not seen). ``d`` is inferred from the first context.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, ClassVar

import numpy as np

from opboost.api.exceptions import InvalidParameterError
from opboost.api.online import OnlineLearner, as_context
from opboost.api.validation import check_scalar

__all__ = ["BanditLearner", "as_context"]


class BanditLearner(OnlineLearner):
    """Base of learners that see only the reward of the action they chose.

    Subclasses implement [`action_probs_one`][opboost.api.bandit.BanditLearner.action_probs_one],
    [`predict_one`][opboost.api.bandit.BanditLearner.predict_one] and
    [`learn_one`][opboost.api.bandit.BanditLearner.learn_one]. ``predict_one`` stores the
    distribution it sampled from, so that ``learn_one`` for the same context can importance-weight
    with the exact probability.

    Parameters common to all bandit learners: ``n_actions`` (K >= 2) and ``random_state``.
    """

    feedback: ClassVar[str] = "bandit"

    # --- protocol -------------------------------------------------------------------------

    @abstractmethod
    def action_probs_one(self, x: np.ndarray) -> np.ndarray:
        """The (K,) distribution ``predict_one`` would sample from for context ``x`` (d,)."""

    @abstractmethod
    def predict_one(self, x: np.ndarray) -> int:
        """Sample an action in ``{0..K-1}`` for context ``x`` (d,); remember its distribution."""

    @abstractmethod
    def learn_one(self, x: np.ndarray, action: int, reward: float) -> None:
        """Learn from the reward of ``action`` on context ``x`` (d,); nothing else is seen."""

    def greedy_action_one(self) -> int | None:
        """The exploitation action behind the last ``predict_one`` (before exploration).

        Runners use it for the greedy error rate (the error of the learner's prediction
        rather than of the explored action it played). None if the learner does not
        separate the two.
        """
        return None

    def predict_many(self, X: np.ndarray) -> np.ndarray:
        """Sample one action per row of ``X`` (n, d) with the current model; (n,) ints.

        The model is not updated between rows (a mini-batch of predictions).
        """
        return np.array([self.predict_one(row) for row in np.asarray(X)], dtype=np.int64)

    def action_probs_many(self, X: np.ndarray) -> np.ndarray:
        """The (n, K) action distributions for the rows of ``X`` (n, d)."""
        return np.stack([self.action_probs_one(row) for row in np.asarray(X)])

    def learn_many(self, X: np.ndarray, actions: np.ndarray, rewards: np.ndarray) -> None:
        """Learn from rows ``X`` (n, d), chosen ``actions`` (n,) and their ``rewards`` (n,)."""
        X = np.asarray(X)
        actions = np.asarray(actions)
        rewards = np.asarray(rewards, dtype=np.float64)
        if not (len(X) == len(actions) == len(rewards)):
            raise InvalidParameterError(
                f"{type(self).__name__}.learn_many: X, actions and rewards must have the same "
                f"length. Got {len(X)}, {len(actions)} and {len(rewards)}."
            )
        for row, action, reward in zip(X, actions, rewards, strict=True):
            self.learn_one(row, int(action), float(reward))

    # --- helpers for subclasses -----------------------------------------------------------

    def _check_n_actions(self) -> int:
        return int(
            check_scalar(
                self.n_actions,
                "n_actions",
                type(self).__name__,
                kind=int,
                low=2,
                fix="pass the number of actions K, e.g. n_actions=10 for digits",
            )
        )

    def _check_action(self, action: Any, n_actions: int) -> int:
        if not (isinstance(action, int | np.integer) and 0 <= action < n_actions):
            raise InvalidParameterError(
                f"{type(self).__name__}.learn_one: action must be an int in [0, {n_actions}). "
                f"Got {action!r}; pass the action returned by predict_one."
            )
        return int(action)
