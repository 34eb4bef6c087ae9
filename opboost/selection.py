"""Label-free model selection: score boosting rounds on held-out logs, and safe fallbacks.

The booster can hold out a slice of the logged data (``validation_fraction``), score the
policy after every round on it with an off-policy estimator and a confidence interval
(:class:`HoldoutScorer`), keep the round with the best estimate, and -- with ``safe=True`` --
fall back to the best constant action when the selected policy's lower confidence bound does
not beat that action's estimated value (:class:`ConstantPolicy`, defined in
:mod:`opboost.policy` and re-exported here: a full policy that saves and loads like any other).

Estimators for selection (``selection``):

``"snips"``  self-normalised IPS with its delta-method interval (default; low variance,
             invariant to reward translation).
``"ips"``    IPS with a Student-t interval on the round values.
``"dr"``     doubly robust; its reward model is the fit's own reward-model start when there is
             one (fitted on the training rows only), else a cross-fitted model fitted ONCE on
             the held-out rows (not every round); each round only re-weights.
any other registered estimator name: its own ``estimate_interval`` every round.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from opboost.api.data import LoggedBandit
from opboost.api.estimator import Interval, normal_interval
from opboost.api.exceptions import InvalidParameterError
from opboost.api.numeric import one_hot
from opboost.api.objective import softmax
from opboost.api.policy import ConstantPolicy, Policy

__all__ = ["ConstantPolicy", "HoldoutScorer", "RoundSelection", "constant_action_values"]

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


class HoldoutScorer:
    """Scores a policy's (n_h, K) scores on held-out logs: value with a (1 - alpha) interval.

    ``data`` the held-out :class:`LoggedBandit`; ``method`` "snips", "ips", "dr" or another
    registered estimator name; ``policy`` "argmax" or "softmax"; ``random_state`` seeds the
    DR reward model; ``reward_predictions`` (n_h, K), if given, is DR's reward model q on
    ``data`` (none is fitted).
    """

    def __init__(
        self,
        data: LoggedBandit,
        method: str = "snips",
        *,
        policy: str = "argmax",
        alpha: float = 0.05,
        random_state: int | None = None,
        reward_predictions: np.ndarray | None = None,
    ) -> None:
        from opboost.registry import get_registry

        self.data, self.method, self.policy, self.alpha = data, method, policy, alpha
        self.estimator = get_registry().get("estimator", method)(
            **({"random_state": random_state} if method in ("dr", "dm") else {})
        )
        self._q = None
        if method == "dr":
            self._q = reward_predictions
            if self._q is None:
                self._q = self.estimator.reward_predictions(data)
        self._rows = np.arange(len(data))
        self._w_logged = 1.0 / np.asarray(data.propensities, dtype=np.float64)

    def interval(self, scores: np.ndarray) -> Interval:
        """Estimated value of the policy of ``scores`` (n_h, K) with its interval."""
        return self.interval_of_probs(action_probs(scores, self.policy))

    def dr_values(self, probs: np.ndarray) -> np.ndarray:
        """Per-row DR values (n_h,) of the policy ``probs`` (n_h, K), whose mean is its
        estimate (``method="dr"`` only): paired comparisons of two policies use their
        differences."""
        d = self.data
        weights = probs[self._rows, d.actions] * self._w_logged
        residual = d.rewards - self._q[self._rows, d.actions]
        return np.einsum("ij,ij->i", probs, self._q) + weights * residual

    def interval_of_probs(self, probs: np.ndarray) -> Interval:
        """Estimated value of the policy with action probabilities ``probs`` (n_h, K)."""
        d = self.data
        if self.method == "dr":
            return normal_interval(self.dr_values(probs), 1 - self.alpha)
        if self.method == "snips":
            weights = probs[self._rows, d.actions] * self._w_logged
            if not weights.sum() > 0:  # no logged action is ever chosen: nothing is known
                return Interval(float("nan"), -np.inf, np.inf, 1 - self.alpha)
        return self.estimator.estimate_interval(d, probs, alpha=self.alpha)


class RoundSelection:
    """Tracks the best round of a fit on held-out logs, then picks the policy (or the fallback).

    ``choice`` the fit's :class:`opboost.resolve.RoundChoice` (its estimator ``selection`` as
    ``method``, and ``min_round``), ``policy`` the Booster's ``selection_policy``; with
    ``warm_started`` round 0 (F_0) is a candidate too; ``safe`` falls back to the best constant
    action when the selected policy's lower bound does not beat it. Rounds before
    ``min_round`` are no candidates (the last round is kept if the fit stops before it). DR
    scores with the fit's reward-model start, q = F_0 / scale, when it has one.
    """

    def __init__(
        self, fit: Any, holdout: LoggedBandit, choice: Any, policy: str, safe: bool
    ) -> None:
        method, min_round = choice.selection, choice.min_round
        if not fit.fixed_actions and method in ("dr", "dm"):
            raise InvalidParameterError(
                f"Booster.fit: selection={method!r} fits a reward model over fixed actions, "
                f"which logs with candidate sets or action features do not have; use "
                f"selection='snips' or 'ips'."
            )
        holdout = fit.view_of(holdout)  # slot logs for a fit on candidates
        self.holdout, self.method, self.safe = holdout, method, safe
        self.inputs, self.min_round = fit.inputs_of(holdout), min_round
        self.scores = fit.ensemble_scores(fit.learner.ensemble(), self.inputs)
        q = None
        start = getattr(fit, "reward_start", None)
        if method == "dr" and start and start.get("scale"):  # F_0 = q * scale
            q = self.scores / float(start["scale"])
        self.scorer = HoldoutScorer(
            holdout, method, policy=policy, random_state=fit.seed, reward_predictions=q
        )
        self.initial = self.last = self.scorer.interval(self.scores)
        self.best = None
        if fit.settings.warm_start is not None and min_round == 0:  # round 0: F_0
            self.best = (0, self.initial, fit.learner.ensemble())

    def track(self, fit: Any, weight: float) -> dict[str, float]:
        """Score the round ``fit`` just committed; the held-out metrics of that round."""
        self.scores = fit.add_round(self.scores, self.inputs, weight)
        interval = self.last = self.scorer.interval(self.scores)
        if fit.round >= self.min_round and (
            self.best is None or interval.value > self.best[1].value
        ):
            self.best = (fit.round, interval, fit.learner.ensemble())
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
        n_actions = fit.data.n_actions
        meta = dict(fit.metadata(fit.round), n_rounds=best_round, selected_round=best_round)
        policy = fit.policy_of(ensemble, meta)
        action, constant_value = None, float("nan")
        if fit.fixed_actions:  # not for a fit on candidates: items come and go
            action = int(np.nanargmax(constant_action_values(fit.data)))
            constant_value = self.scorer.interval_of_probs(
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
