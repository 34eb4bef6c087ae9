"""The warm start: F_0 fitted as the ensemble's first members, through the engine loop.

"best_constant": one member, F_0 = b e_{a*}, b = log((K - 1) q / (1 - q)).
"logging": ``LOGGING_WARM_MEMBERS`` least-squares members regress log p_i on the logged
(x_i, a_i) pairs only (weight 1 there, 0 elsewhere), so F_0(x, a) estimates log pi_0(a|x)
for every action (the softmax is invariant to the per-row normaliser).
"reward_model": F_0 = q / tau, tau set so that the softmax puts on average 1/K + q (1 - 1/K)
on each row's best action, q = ``warm_start_prob`` (:func:`reward_temperature`): boosting
starts at the direct-method policy and corrects it where the logs disagree. A learner that
fits its own reward model (``BaseLearner.start_from_rewards``: ``lightgbm_tree``) puts that
model's trees, scaled, in front of the ensemble, so F_0 is exactly q / tau; for any other,
``REWARD_WARM_MEMBERS`` members distil the cross-fitted q (n, K) of the estimator (DR, DM)
or of the "dm" estimator's default model.

Every member fits the residual goal - F by weighted least squares and enters with weight 1:
:class:`WarmStartFit` is an :class:`opboost.api.engine.Engine` whose step is always 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from opboost.api.data.logged import LoggedBandit
from opboost.api.engine import Components, FitSettings, Fitted, StepSettings
from opboost.api.estimator import Estimator
from opboost.api.learner import BaseLearner, BaseProblem
from opboost.api.serving.tie_order import constant_action_values
from opboost.core.booster_checks import check_f
from opboost.core.loop import run_rounds
from opboost.core.registry import make

__all__ = [
    "LOGGING_WARM_MEMBERS",
    "REWARD_WARM_MEMBERS",
    "AddRound",
    "Start",
    "WarmStartFit",
    "fit_warm_start",
    "reward_predictions",
    "reward_scale",
    "reward_temperature",
    "warm_start_goal",
]

#: Least-squares members fitted to the logging policy's log-propensities (warm_start="logging").
LOGGING_WARM_MEMBERS = 10
#: Least-squares members distilling q / tau (warm_start="reward_model").
REWARD_WARM_MEMBERS = 30

#: ``add_round(current, X, weight)``: scores on the rows X after the learner's last committed
#: round, current + weight f_t(X) (:meth:`opboost.core.fit.memory.InMemoryFit.add_round`).
AddRound = Callable[[np.ndarray, Any, float], np.ndarray]


def reward_temperature(q: np.ndarray, prob: float) -> float:
    """tau > 0 such that softmax(q_i / tau) gives its row's best action probability ``prob``
    on average over the rows of ``q`` (n, K); found by bisection on log tau (the average
    falls from 1 to 1/K as tau grows). Rows whose predictions are all equal do not count.
    NaN entries (the padded slots of candidate sets) are not actions of their row."""
    padded = np.isnan(q).any()
    top, low_ = (np.nanmax, np.nanmin) if padded else (np.max, np.min)
    spread = top(q, axis=1) - low_(q, axis=1)
    rows = q[spread > 0]
    if len(rows) == 0:
        return 1.0
    centred = rows - top(rows, axis=1, keepdims=True)
    if padded:
        centred = np.where(np.isnan(centred), -np.inf, centred)  # exp(-inf) = 0

    def top_prob(log_tau: float) -> float:
        weights = np.exp(centred / math.exp(log_tau))
        return float(np.mean(1.0 / weights.sum(axis=1)))

    low = math.log(float(spread[spread > 0].min())) - 12.0
    high = math.log(float(spread.max())) + 12.0
    for _ in range(60):
        middle = 0.5 * (low + high)
        if top_prob(middle) > prob:
            low = middle
        else:
            high = middle
    return math.exp(0.5 * (low + high))


class WarmStartFit:
    """Distils ``goal`` (n, K) into ``learner``'s first members: least squares on the cells
    with ``weights`` > 0 (each member fits the residual goal - F), unit steps.

    ``scores`` is F (n, K) before the start, to which the members are added in place; with
    ``held_out`` (the evaluation rows' inputs X and their scores), those scores follow
    through ``add_round`` (the fit's :meth:`~opboost.core.fit.memory.InMemoryFit.add_round`).
    """

    def __init__(
        self,
        learner: BaseLearner,
        goal: np.ndarray,
        weights: np.ndarray,
        scores: np.ndarray,
        held_out: tuple[Any, np.ndarray] | None = None,
        add_round: AddRound | None = None,
    ) -> None:
        self.learner, self.goal, self.weights = learner, goal, weights
        self.scores, self.add_round = scores, add_round
        self.eval_inputs, self.eval_scores = (None, None) if held_out is None else held_out
        self.fitted_cells = weights > 0
        self.targets = np.zeros_like(goal)
        self.round, self.stop_reason, self.n = 0, None, len(goal)
        self.train_metrics: dict[str, float] = {}
        self.eval_metrics: dict[str, float] = {}
        self.history: dict[str, list[float]] = {}

    def gradient_norm(self) -> float:
        return math.inf  # the members are fixed in number, never stopped by a gradient

    def fit_direction(self) -> Fitted:
        np.subtract(self.goal, self.scores, out=self.targets, where=self.fitted_cells)
        problem = BaseProblem("regression", self.targets, self.weights)
        learner = self.learner
        values = check_f(learner.fit_round(problem), self.targets.shape, learner)
        return Fitted(values, max(float(values.max()), -float(values.min())))

    def step_denominator(self, direction: Fitted) -> float:
        return 1.0

    def step(self, direction: Fitted, factor: float, l2: float) -> float:
        return 1.0

    def discard(self, direction: Fitted) -> None:
        self.learner.commit_round(0.0)

    def commit(self, direction: Fitted, weight: float, **metrics: float) -> None:
        self.learner.commit_round(weight)
        self.scores += direction.values
        if self.eval_scores is not None:
            self.eval_scores = self.add_round(self.eval_scores, self.eval_inputs, weight)
        self.round += 1

    def snapshot(self) -> dict[str, Any]:
        raise NotImplementedError("the warm start is not checkpointed; the fit after it is")


def reward_scale(data: LoggedBandit, prob: float) -> Callable[[np.ndarray], float]:
    """q (n, K) -> 1 / tau, so that softmax(q / tau) puts on average 1/K + p (1 - 1/K) on each
    row's best action, p = ``prob`` (the fit's ``warm_start_prob``,
    :func:`reward_temperature`). With candidate sets in ``data`` (slot logs), K is each
    row's number of candidates C_i, averaged over the rows of q, which has NaN in the
    padded slots."""
    prob = float(prob)
    if data.candidates is None:
        K = data.n_actions
        top = 1.0 / K + prob * (1.0 - 1.0 / K)
        return lambda q: 1.0 / reward_temperature(q, top)

    def scale(q: np.ndarray) -> float:
        share = 1.0 / np.count_nonzero(~np.isnan(q), axis=1)
        return 1.0 / reward_temperature(q, float(np.mean(share + prob * (1.0 - share))))

    return scale


def warm_start_goal(
    data: LoggedBandit, settings: FitSettings, q: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, int]:
    """(goal (n, K), weights (n, K), number of members) of ``settings.warm_start`` on
    ``data``; ``q`` (n, K) are the cross-fitted reward predictions warm_start="reward_model"
    distils (:func:`reward_predictions`)."""
    n, K = len(data), data.n_actions
    goal, weights = np.zeros((n, K)), np.zeros((n, K))
    if settings.warm_start == "logging":
        rows = (np.arange(n), data.actions)
        weights[rows], goal[rows] = 1.0, np.log(data.propensities)
        return goal, weights, LOGGING_WARM_MEMBERS
    weights[:] = 1.0
    if settings.warm_start == "reward_model":
        if q is None:
            raise ValueError("warm_start_goal: warm_start='reward_model' distils q; pass q.")
        return q * reward_scale(data, settings.warm_start_prob)(q), weights, REWARD_WARM_MEMBERS
    best = int(np.nanargmax(constant_action_values(data)))
    prob = float(settings.warm_start_prob)
    goal[:, best] = math.log((K - 1) * prob / (1.0 - prob))
    return goal, weights, 1


def reward_predictions(estimator: Estimator, train: LoggedBandit, seed: int) -> np.ndarray:
    """Cross-fitted q(x_i, a) (n, K) on the training rows ``train``: ``estimator``'s own
    reward model when it has one (DR, DM), else the registered "dm" estimator's, seeded
    with ``seed``."""
    predict = getattr(estimator, "reward_predictions", None)
    if predict is None:
        predict = make("estimator", "dm", random_state=seed).reward_predictions
    return np.asarray(predict(train), dtype=np.float64)


@dataclass(frozen=True, eq=False)
class Start:
    """F_0, what a warm start gives the fit: on the training rows (n, K; zeros, not computed,
    in a fit that ends at its start: :func:`fit_warm_start`'s ``start_only``), on the
    evaluation rows (None without them), and what a learner's own reward-model start chose
    (``reward_start_``, else None)."""

    scores: np.ndarray
    eval_scores: np.ndarray | None
    reward_start: dict[str, Any] | None = None


def fit_warm_start(
    settings: FitSettings,
    components: Components,
    data: LoggedBandit,
    train: LoggedBandit,
    eval_data: LoggedBandit | None,
    *,
    scores: np.ndarray,
    eval_scores: np.ndarray | None,
    add_round: AddRound,
    start_only: bool = False,
) -> Start:
    """F_0 of ``settings.warm_start`` as ``components.learner``'s first ensemble members (not
    counted as boosting rounds), the learner prepared on ``data``; ``train`` is ``data`` with
    its rewards shifted by ``settings.reward_shift``.

    ``scores`` and ``eval_scores`` are F on the training rows and on ``eval_data``'s (None
    without them) before the start (zeros); the members are added to them in place, the
    held-out ones through ``add_round`` (:data:`AddRound`). A reward model the estimator
    does not have is seeded with ``settings.seed``. ``start_only``: the fit ends at its start
    and nothing reads F_0 on the training rows; a learner that offers
    ``start_alone_from_rewards`` then fits its reward model without scoring them, and the
    returned ``Start.scores`` stay zeros.
    """
    learner = components.learner
    if settings.warm_start == "reward_model":
        scale = reward_scale(data, settings.warm_start_prob)
        if start_only and learner.start_alone_from_rewards(
            train.contexts, train.actions, train.rewards, scale
        ):
            return Start(scores, None, getattr(learner, "reward_start_", None))
        start = _start_from_rewards(learner, train, scale, scores, eval_data)
        if start is not None:
            return start
    q = None
    if settings.warm_start == "reward_model":
        q = reward_predictions(components.estimator, train, settings.seed)
    goal, weights, members = warm_start_goal(data, settings, q)
    held_out = None if eval_data is None else (eval_data.contexts, eval_scores)
    distil = WarmStartFit(learner, goal, weights, scores, held_out, add_round)
    run_rounds(distil, members, StepSettings())
    return Start(distil.scores, distil.eval_scores)


def _start_from_rewards(
    learner: BaseLearner,
    train: LoggedBandit,
    scale: Callable[[np.ndarray], float],
    scores: np.ndarray,
    eval_data: LoggedBandit | None,
) -> Start | None:
    """F_0 = q / tau as the learner's own reward model, when the learner offers one
    (:meth:`opboost.api.learner.BaseLearner.start_from_rewards`); None if it does not.
    ``scores`` (F before the start, zeros) takes F_0 in place."""
    start = learner.start_from_rewards(train.contexts, train.actions, train.rewards, scale)
    if start is None:
        return None
    scores += check_f(start, scores.shape, learner)
    eval_scores = None
    if eval_data is not None:
        eval_scores = learner.ensemble().decision_function(eval_data.contexts)
    return Start(scores, eval_scores, getattr(learner, "reward_start_", None))
