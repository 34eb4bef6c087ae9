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

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from opboost.api.data.logged import LoggedBandit
from opboost.api.engine import FitSettings
from opboost.api.estimator import ConfidenceInterval, Estimator, LogsScorer, normal_interval
from opboost.api.exceptions import InsufficientMemoryError, InvalidParameterError
from opboost.api.learner import BaseLearner
from opboost.api.numerics.arrays import one_hot
from opboost.api.numerics.softmax import softmax
from opboost.api.policy import ConstantPolicy, Policy
from opboost.api.serving.masks import greedy
from opboost.api.serving.tie_order import record_tie_order
from opboost.core.registry import get_registry

__all__ = [
    "SELECTION_POLICIES",
    "RoundSelection",
    "SelectedFit",
    "SelectionSettings",
    "action_probs",
    "challenger_policy",
    "estimator_named",
    "logs_scorer",
]

#: The deployed policy a selection scores: the booster's ``predict`` (argmax) or softmax.
SELECTION_POLICIES = ("argmax", "softmax")


def challenger_policy(learner: Any, tie_order: np.ndarray | None) -> Policy:
    """The saveable policy of a fitted challenger (a policy learner's ``to_policy()``), its
    equal scores broken in ``tie_order`` (K,) as the boosted policy's are (None: as it has
    them)."""
    policy = learner.to_policy()
    record_tie_order(policy.metadata, tie_order)
    return policy


def action_probs(
    scores: np.ndarray, policy: str, tie_order: np.ndarray | None = None
) -> np.ndarray:
    """(n, K) action probabilities of the argmax (one-hot; equal scores broken in
    ``tie_order``, else to the lower index) or softmax policy of ``scores``."""
    if policy == "softmax":
        return softmax(scores)
    return one_hot(greedy(scores, tie_order), scores.shape[1])


def logs_scorer(data: LoggedBandit, method: str, seed: int) -> LogsScorer:
    """The registered estimator ``method`` (seeded with ``seed`` when it takes a seed: DR's
    and DM's reward models) on the fixed logs ``data``: :meth:`Estimator.on_logs`."""
    return estimator_named(method, seed).on_logs(data)


def estimator_named(method: str, seed: int) -> Estimator:
    """A new registered estimator ``method``, seeded with ``seed`` if it takes one unset."""
    return get_registry().get("estimator", method)().seeded(seed)


class SelectedFit(Protocol):
    """What a held-out selection reads of the in-memory fit it scores (the fit owns it all;
    the selection writes none of it): the training logs, their seed and settings, the
    learner, the round just committed, and how the fit scores other logs."""

    data: LoggedBandit
    seed: int
    settings: FitSettings
    learner: BaseLearner
    round: int
    fixed_actions: bool
    reward_start: dict[str, Any] | None
    tie_order: np.ndarray | None

    def view_of(self, data: LoggedBandit) -> LoggedBandit: ...

    def inputs_of(self, data: LoggedBandit) -> Any: ...

    def ensemble_scores(self, ensemble: Any, X: Any) -> np.ndarray: ...

    def add_round(self, current: np.ndarray, X: Any, weight: float) -> np.ndarray: ...

    def metadata(self, n_rounds: int) -> dict[str, Any]: ...

    def policy_of(self, ensemble: Any, metadata: dict[str, Any]) -> Policy: ...


@dataclass(frozen=True)
class SelectionSettings:
    """How a fit holds out logs and keeps its best round: the Booster's ``selection``
    (``method``), ``selection_policy`` (``policy``) and ``safe``, the seed of the hold-out
    split (the share held out is ``FitSettings.validation_fraction``). With ``refit`` (the
    Booster's) the selected rounds are refitted on every row, so the fit's own ensemble at the
    best round is not kept (no copy each time a round improves; round 0's is).

    ``paired`` (a one-sided confidence in (0.5, 1); None: off) makes the choice the paired
    rule of ``validation_fraction="auto"`` (:class:`RoundSelection`), with
    ``rounds_confidence`` the confidence the rounds need over the start (None: ``paired``,
    which the constant action and the challengers need); ``patience`` (None:
    off) stops the fit after that many rounds without a higher held-out value;
    ``challengers`` are registered policy learners (names) fitted on the training rows that
    the paired rule lets replace the kept policy at ``challenger_confidence`` (None:
    ``paired``)."""

    seed: int
    method: str = "snips"
    policy: str = "argmax"
    safe: bool = False
    refit: bool = False
    paired: float | None = None
    rounds_confidence: float | None = None
    patience: int | None = None
    challengers: tuple[str, ...] = ()
    challenger_confidence: float | None = None


class RoundSelection:
    """Tracks the best round of a fit on held-out logs, then picks the policy (or the fallback).

    ``settings`` are the Booster's ``selection``, ``selection_policy`` and ``safe``; with a
    warm start round 0 (F_0, the start alone) is a candidate too; ``safe`` falls back to the
    best constant action when the selected policy's lower bound does not beat it. An
    estimator that takes reward predictions (DR, DM) scores with the fit's reward-model start,
    q = F_0 / scale, when it has one: no second reward model.

    With ``settings.paired`` the choice is paired, on the same held-out rows: each row's
    value under a candidate minus its value under the start (round 0), so the noise the two
    share cancels. The round with the highest held-out value replaces the start only when the
    lower one-sided ``rounds_confidence`` bound of that mean difference is above 0; then the
    best constant action (chosen by SNIPS on the training rows) replaces the kept policy only
    when its own paired difference to it is clear at ``paired``, and so does each of
    ``settings.challengers`` in turn (a policy learner fitted on the training rows; the
    fallback is then its name). ``settings.patience`` stops the rounds once that many have
    passed without a higher held-out value.
    """

    def __init__(
        self,
        fit: SelectedFit,
        holdout: LoggedBandit,
        settings: SelectionSettings,
        restored: Mapping[str, Any] | None = None,
    ) -> None:
        """``restored``: the :meth:`state` of this choice at a checkpoint, to go on from there
        (the fit's ensemble then holds the checkpoint's rounds, not round 0's)."""
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
        self.paired, self.patience = settings.paired, settings.patience
        self.rounds_confidence = settings.rounds_confidence or settings.paired
        self.challengers = settings.challengers if fit.fixed_actions else ()
        self.challenger_confidence = settings.challenger_confidence or settings.paired
        self.tie_order = fit.tie_order  # the policy's: held-out rows are scored as served
        self.inputs = fit.inputs_of(holdout)
        self.scores = fit.ensemble_scores(fit.learner.ensemble(), self.inputs)
        if restored is not None:  # the start's scores, not the restored rounds'
            if restored["start_scores"].shape != self.scores.shape:
                raise InvalidParameterError(
                    f"Booster.fit: the checkpoint's held-out scores have shape "
                    f"{restored['start_scores'].shape}, not {self.scores.shape} (this fit's "
                    f"held-out rows x actions); delete the checkpoint directory to start afresh."
                )
            self.scores = np.array(restored["start_scores"], dtype=np.float64)
        self._start_scores = self.scores.copy()  # F_0 on the held-out rows, for checkpoints
        start = fit.reward_start
        if estimator.takes_reward_predictions and start and start.get("scale"):
            q = self.scores / float(start["scale"])  # F_0 = q * scale, new to these rows
            self.scorer = estimator.on_logs(holdout, reward_predictions=q)
        else:
            self.scorer = estimator.on_logs(holdout)
        self.initial = self.last = self.interval(self.scores)
        self.best = None
        # per-row held-out values of round 0 and of the best round (the paired rule's)
        self.start_rows = self.best_rows = self.row_values(self.scores) if self.paired else None
        self._start_ensemble = None
        if fit.settings.warm_start is not None:  # round 0: F_0
            self._start_ensemble = None if restored else fit.learner.ensemble()
            self.best = (0, self.initial, self._start_ensemble)
        if restored is not None:
            self._go_on_from(restored)

    def state(self) -> dict[str, Any]:
        """What a checkpoint stores of this choice: the held-out scores at round 0
        (``start_scores``) and now (``scores``), each (n_h, K), the best round's per-row values
        (``best_rows``, (n_h,), with the paired rule), the best round and the (value, low,
        high) of its estimate and of the last round's."""
        best_round, best, _ = self.best if self.best is not None else (None, None, None)
        out: dict[str, Any] = {
            "start_scores": self._start_scores,
            "scores": self.scores,
            "best_round": best_round,
            "best": None if best is None else [best.value, best.low, best.high, best.level],
            "last": [self.last.value, self.last.low, self.last.high, self.last.level],
        }
        if self.best_rows is not None:
            out["best_rows"] = self.best_rows
        return out

    def _go_on_from(self, state: Mapping[str, Any]) -> None:
        """Take the held-out scores, best round and estimates of a checkpoint's :meth:`state`;
        round 0's are recomputed from its start scores, as they were."""
        self.scores = np.array(state["scores"], dtype=np.float64)
        self.last = ConfidenceInterval(*state["last"])
        if state["best_round"] is not None:
            best_round = int(state["best_round"])
            ensemble = self._start_ensemble if best_round == 0 else None
            self.best = (best_round, ConfidenceInterval(*state["best"]), ensemble)
        if self.paired and "best_rows" in state:
            self.best_rows = np.array(state["best_rows"], dtype=np.float64)

    def interval(self, scores: np.ndarray) -> ConfidenceInterval:
        """Estimated value of the deployed policy of ``scores`` (n_h, K), with its interval."""
        return self.scorer.interval(action_probs(scores, self.policy, self.tie_order))

    def row_values(self, scores: np.ndarray) -> np.ndarray:
        """Per-row held-out values (n_h,) of the deployed policy of ``scores`` (n_h, K)."""
        return self.scorer.row_values(action_probs(scores, self.policy, self.tie_order))

    def track(self, fit: SelectedFit, weight: float) -> tuple[dict[str, float], str | None]:
        """Score the round ``fit`` just committed: (its held-out metrics, why the rounds stop
        here or None)."""
        self.scores = fit.add_round(self.scores, self.inputs, weight)
        probs = action_probs(self.scores, self.policy, self.tie_order)  # (n_h, K) once a round
        interval = self.last = self.scorer.interval(probs)
        if self.best is None or interval.value > self.best[1].value:
            ensemble = fit.learner.ensemble() if self.keeps_ensembles else None
            self.best = (fit.round, interval, ensemble)
            if self.paired:
                self.best_rows = self.scorer.row_values(probs)
        metrics = {
            "select_value": interval.value,
            "select_low": interval.low,
            "select_high": interval.high,
        }
        stop = None
        if self.patience is not None and fit.round - self.best[0] >= self.patience:
            stop = (
                f"no higher held-out value for {self.patience} rounds "
                f"(the best at round {self.best[0]})"
            )
        return metrics, stop

    def select(self, fit: SelectedFit) -> tuple[Policy, int, dict[str, Any], str | None]:
        """(policy, best round, report, fallback) at the end of the fit: the best round (with
        ``paired``, the start unless the rounds' gain is clear), then the constant action,
        then each challenger, each replacing what is kept when the rule says so."""
        if self.best is None:  # no candidate round was run: the last one (0: the initial)
            self.best = (fit.round, self.last, fit.learner.ensemble())
        paired = self._paired_rounds(fit) if self.paired else {}
        best_round, interval, ensemble = self.best
        if ensemble is None:  # refitted on every row (Booster._refit): the last round stands in
            ensemble = fit.learner.ensemble()
        n_actions = fit.data.n_actions
        meta = dict(fit.metadata(fit.round), n_rounds=best_round, selected_round=best_round)
        policy = fit.policy_of(ensemble, meta)
        action, constant_rows = None, None
        report = self._report(best_round, interval)
        if self.tie_order is not None:  # fixed actions, not candidates: items come and go
            action = int(self.tie_order[0])  # the best constant action
            probs = one_hot(np.full(len(self.holdout), action), n_actions)
            report["constant_value"] = self.scorer.interval(probs).value
            constant_rows = self.scorer.row_values(probs) if self.paired else None
        report.update(constant_action=action, **paired)
        report["beats_constant"] = bool(interval.low > report["constant_value"])
        kept = self.start_rows if best_round == 0 else self.best_rows
        fallback = None
        if constant_rows is not None:
            gain = report["constant_gain"], report["constant_gain_low"] = self._gain(
                constant_rows - kept
            )
            if gain[1] > 0:
                fallback, kept = "constant", constant_rows
        if self.safe and not report["beats_constant"]:
            fallback = "constant"
        if fallback == "constant":
            policy = ConstantPolicy(
                action, n_actions, dict(meta, fallback=fallback, selection=report)
            )
        for name in self.challengers:
            learner, rows = self._challenge(name, fit, report)
            if rows is None:
                continue
            gain = self._gain(rows - kept, self.challenger_confidence)
            report[f"{name}_gain"], report[f"{name}_gain_low"] = gain
            if gain[1] > 0:
                fallback, policy, kept = name, challenger_policy(learner, self.tie_order), rows
        return policy, best_round, report, fallback

    def _report(self, best_round: int, interval: ConfidenceInterval) -> dict[str, Any]:
        """The selection report's estimates of the kept round and of the logging policy."""
        logging_value = float(np.mean(self.holdout.rewards))
        return {
            "method": self.method,
            "round": best_round,
            "value": interval.value,
            "low": interval.low,
            "high": interval.high,
            "constant_action": None,
            "constant_value": float("nan"),
            "logging_value": logging_value,
            "beats_logging": bool(interval.low > logging_value),
            "n_holdout": len(self.holdout),
        }

    def _challenge(
        self, name: str, fit: SelectedFit, report: dict[str, Any]
    ) -> tuple[Any, np.ndarray | None]:
        """The challenger ``name`` fitted on the training rows and its held-out row values
        (None, and why in ``report``, when its fit would not fit in memory); its paired gain
        over the kept policy is the caller's, reported here."""
        learner = self.new_challenger(name, fit.seed)
        try:
            learner.check_fit_memory(fit.data, f"Booster.fit's challenger {name!r}")
        except InsufficientMemoryError as exc:  # the boosted policy stands
            report[f"{name}_skipped"] = str(exc)
            return learner, None
        learner.fit(fit.data)
        scores = np.asarray(learner.decision_function(self.holdout.contexts), dtype=np.float64)
        probs = action_probs(scores, "argmax", self.tie_order)  # as challenger_policy serves it
        return learner, self.scorer.row_values(probs)

    @staticmethod
    def new_challenger(name: str, seed: int) -> Any:
        """A new registered policy learner ``name`` seeded with ``seed``."""
        return get_registry().get("policy_learner", name)(random_state=seed)

    def _gain(
        self, differences: np.ndarray, confidence: float | None = None
    ) -> tuple[float, float]:
        """(mean, lower one-sided ``confidence`` bound; default ``paired``) of per-row value
        differences."""
        paired = normal_interval(differences, 2 * float(confidence or self.paired) - 1)
        return paired.value, paired.low

    def _paired_rounds(self, fit: SelectedFit) -> dict[str, Any]:
        """Keep the best round only if its paired gain over the start is clear, else the start
        (round 0); the report's ``rounds_gain`` and ``rounds_gain_low``."""
        best_round = self.best[0]
        if best_round == 0 or fit.settings.warm_start is None:
            return {"rounds_gain": 0.0, "rounds_gain_low": 0.0, "best_tried": best_round}
        gain, low = self._gain(self.best_rows - self.start_rows, self.rounds_confidence)
        if low <= 0:
            self.best = (0, self.initial, self._start_ensemble)
        return {"rounds_gain": gain, "rounds_gain_low": low, "best_tried": best_round}
