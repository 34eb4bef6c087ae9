"""Label-free model selection: score boosting rounds on held-out logs, and safe fallbacks.

The booster can hold out a slice of the logged data (``validation_fraction``), score the policy
after every round on it with an off-policy estimator and a confidence interval (the estimator on
those fixed logs, :meth:`opboost.api.estimator.Estimator.on_logs`), keep the round with the best
estimate, and -- with ``safe=True`` -- fall back to the best constant action when the selected
policy's lower confidence bound does not beat that action's estimated value
(:class:`opboost.api.policy.ConstantPolicy`: a full policy that saves and loads like any
other).

Estimators for selection (``selection``):

``"snips"``  self-normalised IPS with its delta-method interval (default; low variance,
             invariant to reward translation).
``"ips"``    IPS with a Student-t interval on the round values.
``"dr"``     doubly robust; its reward model is the fit's own reward-model start when there is
             one (fitted on the training rows only), else a cross-fitted model fitted ONCE on
             the held-out rows (not every round); each round only re-weights.
any other registered estimator name: what its ``on_logs`` scorer gives every round.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from opboost.api.data.logged import LoggedBandit
from opboost.api.estimator import ConfidenceInterval, Estimator, LogsScorer
from opboost.api.exceptions import InvalidParameterError
from opboost.api.numerics.arrays import one_hot
from opboost.api.numerics.softmax import softmax
from opboost.api.policy import ConstantPolicy, Policy
from opboost.core.registry import get_registry

__all__ = [
    "SELECTION_POLICIES",
    "RoundSelection",
    "SelectionSettings",
    "action_probs",
    "constant_action_values",
    "estimator_named",
    "logs_scorer",
]

#: The deployed policy a selection scores: the booster's ``predict`` (argmax) or softmax.
SELECTION_POLICIES = ("argmax", "softmax")


def constant_action_values(data: LoggedBandit) -> np.ndarray:
    """SNIPS value of every constant policy "always action a", shape (K,).

    V(a) = sum_{i: a_i = a} r_i / p_i / sum_{i: a_i = a} 1 / p_i; NaN for never-logged actions.
    With candidate sets it is the value of the policy as ``ConstantPolicy.predict(X,
    candidates=...)`` serves it: a where a is a candidate, the row's first candidate elsewhere
    (a row then counts when its logged action is that first candidate); still NaN for a
    never logged.
    """
    w = 1.0 / np.asarray(data.propensities, dtype=np.float64)
    k = data.n_actions
    num = np.bincount(data.actions, weights=w * data.rewards, minlength=k)
    den = np.bincount(data.actions, weights=w, minlength=k)
    logged = den > 0
    if data.candidates is not None:
        # rows whose logged action is their first candidate count for every a that is not a
        # candidate there (a falls back to it); rows where a is a candidate counted above
        first = _first_candidates(data.candidates) == data.actions
        for total, weights in ((num, w * data.rewards * first), (den, w * first)):
            total += weights.sum() - data.candidates.T @ weights
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(logged, num / np.where(den > 0, den, 1.0), np.nan)


def _first_candidates(candidates: Any) -> np.ndarray:
    """(n,) int64: each row's lowest-index candidate."""
    if sp.issparse(candidates):
        return candidates.indices[candidates.indptr[:-1]].astype(np.int64)
    return np.argmax(candidates, axis=1)


def action_probs(scores: np.ndarray, policy: str) -> np.ndarray:
    """(n, K) action probabilities of the argmax (one-hot) or softmax policy of ``scores``."""
    if policy == "softmax":
        return softmax(scores)
    return one_hot(np.argmax(scores, axis=1), scores.shape[1])


def logs_scorer(data: LoggedBandit, method: str, seed: int) -> LogsScorer:
    """The registered estimator ``method`` (seeded with ``seed`` when it takes a seed: DR's
    and DM's reward models) on the fixed logs ``data``: :meth:`Estimator.on_logs`."""
    return estimator_named(method, seed).on_logs(data)


def estimator_named(method: str, seed: int) -> Estimator:
    """A new registered estimator ``method``, seeded with ``seed`` if it takes one unset."""
    return get_registry().get("estimator", method)().seeded(seed)


@dataclass(frozen=True)
class SelectionSettings:
    """How a fit holds out logs and keeps its best round: the Booster's ``selection``
    (``method``), ``selection_policy`` (``policy``) and ``safe``, the seed of the hold-out
    split (the share held out is ``FitSettings.validation_fraction``) and the first round
    that is a candidate (``min_round``; 0: the start too). With ``refit`` (the Booster's) the
    selected rounds are refitted on every row, so the fit's own ensemble at the best round is
    not kept (no copy each time a round improves; round 0's is, as no refit follows it)."""

    seed: int
    method: str = "snips"
    policy: str = "argmax"
    safe: bool = False
    min_round: int = 0
    refit: bool = False


class RoundSelection:
    """Tracks the best round of a fit on held-out logs, then picks the policy (or the fallback).

    ``settings`` are the Booster's ``selection``, ``selection_policy`` and ``safe``; with a
    warm start round 0 (F_0) is a candidate too; ``safe`` falls back to the best constant
    action when the selected policy's lower bound does not beat it. Rounds before
    ``settings.min_round`` are no candidates (the last round is kept if the fit stops before
    it). An estimator that takes reward predictions (DR, DM) scores with the fit's
    reward-model start, q = F_0 / scale, when it has one: no second reward model.
    """

    def __init__(self, fit: Any, holdout: LoggedBandit, settings: SelectionSettings) -> None:
        method = settings.method
        estimator = estimator_named(method, fit.seed)
        if not fit.fixed_actions and estimator.needs_fixed_actions:
            raise InvalidParameterError(
                f"Booster.fit: selection={method!r} fits a reward model over fixed actions, "
                f"which logs with candidate sets or action features do not have; use "
                f"selection='snips' or 'ips'."
            )
        holdout = fit.view_of(holdout)  # slot logs for a fit on candidates
        self.holdout, self.method, self.policy = holdout, method, settings.policy
        self.safe, self.keeps_ensembles = settings.safe, not settings.refit
        self.inputs, self.min_round = fit.inputs_of(holdout), settings.min_round
        self.scores = fit.ensemble_scores(fit.learner.ensemble(), self.inputs)
        start = getattr(fit, "reward_start", None)
        if estimator.takes_reward_predictions and start and start.get("scale"):
            q = self.scores / float(start["scale"])  # F_0 = q * scale, new to these rows
            self.scorer = estimator.on_logs(holdout, reward_predictions=q)
        else:
            self.scorer = estimator.on_logs(holdout)
        self.initial = self.last = self.interval(self.scores)
        self.best = None
        if fit.settings.warm_start is not None and self.min_round == 0:  # round 0: F_0
            self.best = (0, self.initial, fit.learner.ensemble())

    def interval(self, scores: np.ndarray) -> ConfidenceInterval:
        """Estimated value of the deployed policy of ``scores`` (n_h, K), with its interval."""
        return self.scorer.interval(action_probs(scores, self.policy))

    def track(self, fit: Any, weight: float) -> dict[str, float]:
        """Score the round ``fit`` just committed; the held-out metrics of that round."""
        self.scores = fit.add_round(self.scores, self.inputs, weight)
        interval = self.last = self.interval(self.scores)
        if fit.round >= self.min_round and (
            self.best is None or interval.value > self.best[1].value
        ):
            ensemble = fit.learner.ensemble() if self.keeps_ensembles else None
            self.best = (fit.round, interval, ensemble)
        return {
            "select_value": interval.value,
            "select_low": interval.low,
            "select_high": interval.high,
        }

    def select(self, fit: Any) -> tuple[Policy, int, dict[str, Any], str | None]:
        """(policy, best round, report, fallback) at the end of the fit."""
        if self.best is None:  # no candidate round was run: the last one (0: the initial)
            self.best = (fit.round, self.last, fit.learner.ensemble())
        best_round, interval, ensemble = self.best
        if ensemble is None:  # refitted on every row (Booster._refit): the last round stands in
            ensemble = fit.learner.ensemble()
        n_actions = fit.data.n_actions
        meta = dict(fit.metadata(fit.round), n_rounds=best_round, selected_round=best_round)
        policy = fit.policy_of(ensemble, meta)
        action, constant_value = None, float("nan")
        if fit.fixed_actions:  # not for a fit on candidates: items come and go
            action = int(np.nanargmax(constant_action_values(fit.data)))
            constant_value = self.scorer.interval(
                one_hot(np.full(len(self.holdout), action), n_actions)
            ).value
        logging_value = float(np.mean(self.holdout.rewards))
        report = {
            "method": self.method,
            "round": best_round,
            "value": interval.value,
            "low": interval.low,
            "high": interval.high,
            "constant_action": action,
            "constant_value": constant_value,
            "logging_value": logging_value,
            "beats_logging": bool(interval.low > logging_value),
            "beats_constant": bool(interval.low > constant_value),
            "n_holdout": len(self.holdout),
        }
        fallback = None
        if self.safe and not report["beats_constant"]:
            fallback = "constant"
            policy = ConstantPolicy(
                action, n_actions, dict(meta, fallback=fallback, selection=report)
            )
        return policy, best_round, report, fallback
