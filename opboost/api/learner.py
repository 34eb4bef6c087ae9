"""Base learner contract: how the booster's rounds meet a concrete learner.

Per fit, the booster calls ``prepare`` once, then per round::

    f = learner.fit_round(problem)     # (n, K) predictions of the new f_t on training rows
    alpha = objective.step(...)        # closed-form step
    learner.commit_round(alpha)        # F <- F + alpha f_t (alpha 0: drop the round)

and at the end ``learner.ensemble()`` returns the fitted [`Ensemble`][opboost.api.learner.Ensemble],
a self-contained model F(x) = sum_t alpha_t f_t(x) that predicts, serialises to text and loads
without the training data (and without pickle).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import numpy as np

from opboost.api.component import Component
from opboost.api.numerics.problem import BaseProblem

__all__ = ["BaseLearner", "BaseProblem", "Ensemble"]


class Ensemble(ABC):
    """A fitted additive score model over K actions.

    ``format`` names the serialisation; ``dumps`` gives text (JSON or a model's own text
    format), ``loads`` rebuilds from it and must never execute code from the file.
    """

    format: ClassVar[str] = ""
    n_actions: int
    n_rounds: int

    @abstractmethod
    def decision_function(self, X: Any) -> np.ndarray:
        """Scores F(X), shape (m, K)."""

    def staged_decision_function(self, X: Any) -> Iterator[np.ndarray]:
        """Yield the cumulative scores (m, K) after each round (optional; for learning curves)."""
        raise NotImplementedError(f"{type(self).__name__} does not expose its rounds.")

    def score_pairs(self, pairs: Any) -> np.ndarray:
        """Scores F of the (context, action) pairs of a ``opboost.api.data.pairs.PairRows``,
        shape (P,); only ensembles fitted on candidate pairs (``prepare_pairs``) have it."""
        raise NotImplementedError(
            f"{type(self).__name__} scores a fixed set of actions, not (context, item) pairs."
        )

    @abstractmethod
    def dumps(self) -> str:
        """Text serialisation."""

    @classmethod
    @abstractmethod
    def loads(cls, text: str) -> Ensemble:
        """Inverse of ``dumps``; raises ValueError on foreign or corrupted text."""


class BaseLearner(Component, ABC):
    """Fits one base predictor per boosting round and accumulates the ensemble."""

    kind: ClassVar[str] = "base_learner"
    #: The reduction this learner solves: "regression" or "classification".
    reduction: ClassVar[str] = "regression"
    #: The Ensemble subclass this learner produces (used by ``load_policy``).
    ensemble_class: ClassVar[type[Ensemble]]
    #: Whether :meth:`prepare_pairs` is implemented (boosting over candidates and action
    #: features).
    supports_pairs: ClassVar[bool] = False
    #: Whether the learner and its ensemble take missing context values (NaN) and route them
    #: themselves, as LightGBM does; the Booster refuses logs with NaN for any other learner.
    accepts_missing: ClassVar[bool] = False

    @abstractmethod
    def prepare(
        self,
        contexts: Any,
        n_actions: int,
        *,
        random_state: Any = None,
        init_scores: np.ndarray | None = None,
    ) -> None:
        """Build per-fit structures once; ``contexts`` (n, d) dense or CSR."""

    @abstractmethod
    def fit_round(self, problem: BaseProblem) -> np.ndarray:
        """Fit f_t to ``problem``; return f_t on the prepared rows, shape (n, K)."""

    @abstractmethod
    def commit_round(self, alpha: float) -> None:
        """Add the last fitted f_t to the ensemble with weight ``alpha``."""

    @abstractmethod
    def ensemble(self) -> Ensemble:
        """The ensemble of committed rounds."""

    # --- optional: override when the learner can do better than these defaults -------------

    def prepare_pairs(self, pairs: Any, *, random_state: Any = None) -> None:
        """Build per-fit structures on the candidate pairs of a
        ``opboost.api.data.pairs.PairRows`` (rows [x_i; phi(a)]) instead of ``prepare``; the
        rounds' problems and ``fit_round``'s predictions are then (n, C) slot matrices
        (``opboost.api.data.slots.SlotView``), 0 in the invalid slots, and ``predict_round``
        takes a ``PairRows`` of other rows. Learners that cannot keep the default."""
        raise NotImplementedError(
            f"{type(self).__name__} cannot boost on candidate sets or action features."
        )

    def predict_round(self, X: Any) -> np.ndarray | None:
        """The last committed f_t (without its weight) on new contexts ``X`` (m, d), shape
        (m, K); None (the default) makes the caller re-predict the whole ensemble instead."""
        return None

    def warm_start(self, ensemble: Ensemble) -> None:
        """Continue from ``ensemble`` (a checkpoint's) after
        [`prepare`][opboost.api.learner.BaseLearner.prepare]; learners that cannot resume keep this
        default, and resuming them is refused."""
        raise NotImplementedError(f"{type(self).__name__} cannot resume from an ensemble.")

    def refit_params(self) -> dict[str, Any]:
        """Constructor parameters under which a new learner fitted on every logged row repeats
        what this fitted learner chose on part of them (``Booster(refit=True)``'s refit after
        its held-out choice of rounds passes them in ``base_learner_params``); {} (the
        default): nothing to repeat, the refit chooses again."""
        return {}

    def offers_reward_start(self) -> bool:
        """Whether [`start_from_rewards`][opboost.api.learner.BaseLearner.start_from_rewards] works
        for this configuration (False here); ``Booster(warm_start="auto")`` starts from the reward
        model only if it does (and
        [`prefers_reward_start`][opboost.api.learner.BaseLearner.prefers_reward_start]), and
        ``objective="auto"`` follows it."""
        return False

    def prefers_reward_start(self) -> bool:
        """Whether ``Booster(warm_start="auto")`` starts this configuration from its own reward
        model: by default whenever it offers one
        ([`offers_reward_start`][opboost.api.learner.BaseLearner.offers_reward_start]). A learner
        that does better from F_0 = 0 keeps the start for ``warm_start="reward_model"`` alone."""
        return self.offers_reward_start()

    def start_from_rewards(
        self,
        contexts: Any,
        actions: np.ndarray,
        rewards: np.ndarray,
        scale: Callable[[np.ndarray], float],
    ) -> np.ndarray | None:
        """Optional: fit a reward model q(x, a) on the logged pairs (x_i, a_i) -> r_i of the
        prepared ``contexts`` (n, d) (``actions``, ``rewards`` (n,)) and put F_0 = s q in front
        of the ensemble, s = ``scale(q)`` with q (n, K) on every training pair; F_0 is not a
        boosting round. Returns F_0 on the training rows (n, K). Call right after
        [`prepare`][opboost.api.learner.BaseLearner.prepare]. None (the default): not supported, and
        the booster distils a reward model into least-squares rounds instead
        (``Booster(warm_start="reward_model")``)."""
        return None

    def start_alone_from_rewards(
        self,
        contexts: Any,
        actions: np.ndarray,
        rewards: np.ndarray,
        scale: Callable[[np.ndarray], float],
    ) -> bool:
        """Optional: [`start_from_rewards`][opboost.api.learner.BaseLearner.start_from_rewards]
        for a fit that ends at its start (no rounds, no evaluation rows: nothing reads F_0 on
        the training rows), so the learner need not score every training pair; ``scale`` may
        be given q on a sample of the contexts. Returns True when F_0 is in front of the
        ensemble; False (the default): not offered, and the booster calls
        ``start_from_rewards``."""
        return False

    def offers_pair_reward_start(self) -> bool:
        """Whether
        [`start_from_pair_rewards`][opboost.api.learner.BaseLearner.start_from_pair_rewards] works
        for this configuration (False here); ``Booster(warm_start="auto")`` starts a fit on
        candidate pairs from the reward model only if it does."""
        return False

    def start_from_pair_rewards(
        self,
        pairs: Any,
        actions: np.ndarray,
        rewards: np.ndarray,
        scale: Callable[[np.ndarray], float],
        *,
        rows: np.ndarray | None = None,
    ) -> np.ndarray | None:
        """Optional, the candidate-pair form of
        [`start_from_rewards`][opboost.api.learner.BaseLearner.start_from_rewards]: fit a reward
        model q(x, a) on the logged pairs [x_i; phi(a_i)] -> r_i (``actions``: the logged items
        (n,), ``rewards`` (n,)) of every row of the ``opboost.api.data.pairs.PairRows`` ``pairs``,
        and put F_0 = s q in front of the ensemble, s = ``scale(q)`` with q a slot matrix of the
        prepared rows (NaN in the padded slots). ``rows`` (n,) bool: the rows of ``pairs`` that
        [`prepare_pairs`][opboost.api.learner.BaseLearner.prepare_pairs] received (None: all).
        Returns F_0 on those rows as a slot matrix, 0 in the padded slots. None (the default): not
        supported."""
        return None
