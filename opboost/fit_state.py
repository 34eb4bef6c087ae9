"""The state of one Booster fit: scores, history, checkpoints and label-free round selection.

:class:`FitState` holds what changes from round to round (the ensemble scores F on the training
rows, the per-round history, the held-out selection state) so that ``Booster`` stays the
parameter holder and the loop, and a checkpoint can restore a fit exactly.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from opboost.api.callback import HistoryView, RoundEnv
from opboost.api.data import LoggedBandit
from opboost.api.exceptions import InvalidParameterError
from opboost.api.files import json_params
from opboost.api.numeric import dot
from opboost.api.objective import centre_rows, softmax
from opboost.api.validation import check_random_state
from opboost.booster_checks import check_f
from opboost.policy import Policy

__all__ = ["FitState", "policy_metadata", "policy_values"]


#: Least-squares members fitted to the logging policy's log-propensities (warm_start="logging").
LOGGING_WARM_MEMBERS = 10
#: Least-squares members distilling q / tau (warm_start="reward_model").
REWARD_WARM_MEMBERS = 30


def reward_temperature(q: np.ndarray, prob: float) -> float:
    """tau > 0 such that softmax(q_i / tau) gives its row's best action probability ``prob``
    on average over the rows of ``q`` (n, K); found by bisection on log tau (the average
    falls from 1 to 1/K as tau grows). Rows whose predictions are all equal do not count."""
    spread = q.max(axis=1) - q.min(axis=1)
    rows = q[spread > 0]
    if len(rows) == 0:
        return 1.0
    centred = rows - rows.max(axis=1, keepdims=True)

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


class FitState:
    """The state of one fit: scores, coefficients, history; what a checkpoint stores."""

    def __init__(self, booster, data, eval_data, objective, estimator, learner):
        self.booster, self.data, self.eval_data = booster, data, eval_data
        self.objective, self.estimator, self.learner = objective, estimator, learner
        shift = float(booster.reward_shift)
        self.train = data if shift == 0.0 else data.with_rewards(data.rewards + shift)
        self.seed = int(check_random_state(booster.random_state).integers(2**31 - 1))
        if estimator.get_params(deep=False).get("random_state", 0) is None:
            # an unseeded reward-model estimator (DR, DM) takes the fit's seed: same config,
            # same seed, same coefficients
            estimator.set_params(random_state=self.seed)
        coef = np.asarray(estimator.coefficients(self.train), dtype=np.float64)
        shapes = [(len(data),), (len(data), data.n_actions)]
        if coef.shape not in shapes or not np.all(np.isfinite(coef)):
            raise InvalidParameterError(
                f"Estimator {estimator.name!r} returned invalid training coefficients (shape "
                f"{coef.shape}, finite {bool(np.all(np.isfinite(coef)))}); expected finite "
                f"values of shape {shapes[0]} or, per action, {shapes[1]}."
            )
        self.coef = coef
        # Gamma is centred once here, not every round (the value estimate is unchanged).
        self._state_coef, self._state_options = coef, {}
        if coef.ndim == 2 and objective.supports_action_coefficients:
            self._state_coef, self._state_options = centre_rows(coef), {"centred": True}
        self.scores = np.zeros((len(data), data.n_actions))
        self.eval_scores = None if eval_data is None else np.zeros((len(eval_data), data.n_actions))
        self.round, self.stop_reason, self.ensemble_start = 0, None, None
        self.history: dict[str, list[float]] = {}

    @functools.cached_property
    def fingerprint(self) -> str:
        """Hash of the data and every setting that changes the trajectory (not n_rounds)."""
        h = hashlib.sha256()
        for d in (self.data, self.eval_data):
            if d is None:
                h.update(b"none")
                continue
            x = d.contexts
            for arr in (x.data, x.indices, x.indptr) if d.is_sparse else (x,):
                h.update(np.ascontiguousarray(arr).tobytes())
            for arr in (d.actions, d.propensities, d.rewards):
                h.update(np.ascontiguousarray(arr).tobytes())
        b = self.booster
        spec = {
            p: (type(c).__name__, c.get_params(deep=False))
            for p, c in (
                ("objective", self.objective),
                ("estimator", self.estimator),
                ("base_learner", self.learner),
            )
        }
        spec.update(reward_shift=b.reward_shift, scale=b.scale)
        # Only non-default regularisation enters the hash (older checkpoints stay valid).
        for key, default in (("learning_rate", 1.0), ("l2", 0.0), ("warm_start", None)):
            if getattr(b, key) != default:
                spec[key] = getattr(b, key)
        if b.warm_start is not None:
            spec["warm_start_prob"] = b.warm_start_prob
        h.update(json.dumps(json_params(spec), sort_keys=True).encode())
        return h.hexdigest()

    def restore(self, ckpt: Mapping[str, Any]) -> None:
        """Continue from a checkpoint written by :class:`opboost.callbacks.Checkpoint`."""
        if ckpt["fingerprint"] != self.fingerprint:
            raise InvalidParameterError(
                f"The checkpoint in {ckpt['directory']} was written by a fit with other data "
                f"or settings; delete that directory or checkpoint to a new one."
            )
        if not hasattr(self.learner, "warm_start"):
            raise InvalidParameterError(
                f"The base learner {self.learner.name!r} cannot resume from a checkpoint (it "
                f"has no warm_start method); delete {ckpt['directory']} to start afresh."
            )
        self.seed, self.round = int(ckpt["seed"]), int(ckpt["round"])
        self.scores = np.array(ckpt["scores"], dtype=np.float64)
        if self.eval_data is not None:
            self.eval_scores = np.array(ckpt["eval_scores"], dtype=np.float64)
        self.history = {k: list(v) for k, v in ckpt["history"].items()}
        stop = ckpt.get("stop_reason")
        self.stop_reason = stop if stop and stop != "n_rounds reached" else None
        self.ensemble_start = ckpt["ensemble"]

    def begin(self) -> None:
        init = self.scores if self.round else None
        self.learner.prepare(
            self.data.contexts, self.data.n_actions, random_state=self.seed, init_scores=init
        )
        if self.ensemble_start is not None:
            self.learner.warm_start(self.ensemble_start)
        elif self.booster.warm_start is not None:
            self._warm_start()
        self.state = self.objective.round_state(
            self.scores, self.train, self._state_coef, **self._state_options
        )

    def _warm_start(self) -> None:
        """Fit F_0 as the ensemble's first members: the best constant action, the logger or
        the reward model.

        "best_constant": one member, F_0 = b e_{a*}, b = log((K - 1) q / (1 - q)).
        "logging": ``LOGGING_WARM_MEMBERS`` least-squares members regress log p_i on the
        logged (x_i, a_i) pairs only (weight 1 there, 0 elsewhere; each member fits the
        residual), so F_0(x, a) estimates log pi_0(a|x) for every action (the softmax is
        invariant to the per-row normaliser).
        "reward_model": F_0 = q / tau with q (n, K) the cross-fitted reward predictions of the
        estimator (DR, DM) or of the "dm" estimator's default model, tau set so that the
        softmax puts on average 1/K + q (1 - 1/K) on each row's best action, q =
        ``warm_start_prob`` (the share of the way from uniform to certain;
        :func:`reward_temperature`); ``REWARD_WARM_MEMBERS`` members distil it (weight 1 on
        every action, each fitting the residual), so boosting starts at the direct-method
        policy and corrects it where the logs disagree.
        """
        from opboost.api.learner import BaseProblem
        from opboost.selection import constant_action_values

        n, K = len(self.data), self.data.n_actions
        targets, weights = np.zeros((n, K)), np.zeros((n, K))
        mode = self.booster.warm_start
        if mode == "logging":
            rows, members = (np.arange(n), self.data.actions), LOGGING_WARM_MEMBERS
            weights[rows] = 1.0
            goal = np.log(self.data.propensities)
        elif mode == "reward_model":
            q = self._reward_predictions()
            top = 1.0 / K + float(self.booster.warm_start_prob) * (1.0 - 1.0 / K)
            goal = q / reward_temperature(q, top)
            weights[:], members = 1.0, REWARD_WARM_MEMBERS
        else:
            best = int(np.nanargmax(constant_action_values(self.data)))
            q = float(self.booster.warm_start_prob)
            targets[:, best] = math.log((K - 1) * q / (1.0 - q))
            weights[:] = 1.0
            members = 1
        for _ in range(members):
            if mode == "logging":
                targets[rows] = goal - self.scores[rows]
            elif mode == "reward_model":
                np.subtract(goal, self.scores, out=targets)
            problem = BaseProblem("regression", targets, weights)
            f_values = check_f(self.learner.fit_round(problem), targets.shape, self.learner)
            self.learner.commit_round(1.0)
            self.scores += f_values
            if self.eval_data is not None:
                self.eval_scores = self._add_round(self.eval_scores, self.eval_data.contexts, 1.0)

    def _reward_predictions(self) -> np.ndarray:
        """Cross-fitted q(x_i, a) (n, K) on the training rows: the training estimator's own
        reward model when it has one (DR, DM), else the registered "dm" estimator's."""
        predict = getattr(self.estimator, "reward_predictions", None)
        if predict is None:
            from opboost.registry import make

            predict = make("estimator", "dm", random_state=self.seed).reward_predictions
        return np.asarray(predict(self.train), dtype=np.float64)

    def _add_round(self, current: np.ndarray, X: Any, weight: float) -> np.ndarray:
        """Scores on other rows X after the last committed round: current + weight f_t(X)."""
        predict_round = getattr(self.learner, "predict_round", None)
        if predict_round is not None:
            current += weight * predict_round(X)
            return current
        return self.learner.ensemble().decision_function(X)

    # --- label-free selection on held-out logs --------------------------------------------

    def begin_selection(self, holdout: LoggedBandit) -> None:
        """Score the initial policy on ``holdout`` and start tracking the best round."""
        from opboost.selection import HoldoutScorer

        b = self.booster
        self.holdout = holdout
        self.scorer = HoldoutScorer(
            holdout, b.selection, policy=b.selection_policy, random_state=self.seed
        )
        self.holdout_scores = self.learner.ensemble().decision_function(holdout.contexts)
        self.initial = self.scorer.interval(self.holdout_scores)
        self.best = None
        if b.warm_start is not None:  # round 0 is a real candidate only when warm-started
            self.best = (0, self.initial, self.learner.ensemble())

    def _track_selection(self, weight: float) -> dict[str, float]:
        self.holdout_scores = self._add_round(self.holdout_scores, self.holdout.contexts, weight)
        interval = self.scorer.interval(self.holdout_scores)
        if self.best is None or interval.value > self.best[1].value:
            self.best = (self.round, interval, self.learner.ensemble())
        return {
            "select_value": interval.value,
            "select_low": interval.low,
            "select_high": interval.high,
        }

    def select(self) -> tuple[Any, int, dict[str, Any], str | None]:
        """(policy, best round, report, fallback) at the end of a fit with a holdout."""
        from opboost.selection import ConstantPolicy, constant_action_values

        if self.best is None:  # no round was run: the initial (empty) ensemble
            self.best = (0, self.initial, self.learner.ensemble())
        best_round, interval, ensemble = self.best
        meta = dict(self.policy().metadata, n_rounds=best_round, selected_round=best_round)
        policy = Policy(ensemble, self.data.n_actions, meta)
        train_values = constant_action_values(self.data)
        action = int(np.nanargmax(train_values))
        holdout_const = self.scorer.interval_of_probs(
            np.eye(self.data.n_actions)[np.full(len(self.holdout), action)]
        )
        logging_value = float(np.mean(self.holdout.rewards))
        report = {
            "method": self.booster.selection,
            "round": best_round,
            "value": interval.value,
            "low": interval.low,
            "high": interval.high,
            "constant_action": action,
            "constant_value": holdout_const.value,
            "logging_value": logging_value,
            "beats_logging": bool(interval.low > logging_value),
            "beats_constant": bool(interval.low > holdout_const.value),
            "n_holdout": len(self.holdout),
        }
        fallback = None
        if self.booster.safe and not report["beats_constant"]:
            fallback = "constant"
            policy = ConstantPolicy(
                action, self.data.n_actions, dict(meta, fallback=fallback, selection=report)
            )
        return policy, best_round, report, fallback

    def advance(self, weight: float, f_values: np.ndarray, **metrics: float) -> None:
        """F <- F + weight f; recompute the round state once; record the metrics."""
        self.scores += weight * f_values
        self.round += 1
        self.state = self.objective.round_state(
            self.scores, self.train, self._state_coef, **self._state_options
        )
        self.train_metrics = {
            **metrics,
            "train_objective": self.objective.risk_at(self.state),
            "train_value": self._train_value(),
        }
        self.eval_metrics = {} if self.eval_data is None else self._evaluate(weight)
        if getattr(self, "holdout", None) is not None:
            self.eval_metrics.update(self._track_selection(weight))
        for key, value in {**self.train_metrics, **self.eval_metrics}.items():
            self.history.setdefault(key, []).append(float(value))

    def _train_value(self) -> float:
        """The estimator's value of the current softmax policy on the training logs; with
        per-action coefficients (1/n) sum_i <pi_i, Gamma_i>, without refitting a model."""
        if self.coef.ndim == 2:
            probs = self.state.probs
            value = float(np.einsum("ij,ij->", probs, self.coef)) / len(self.data)
            return value - float(self.booster.reward_shift)  # Gamma is of shifted rewards
        return self.estimator.estimate_value(self.data, self.state.probs)

    def _evaluate(self, weight: float) -> dict[str, float]:
        self.eval_scores = self._add_round(self.eval_scores, self.eval_data.contexts, weight)
        return policy_values(self.eval_data, self.eval_scores, prefix="eval_")

    def env(self, *, alpha: float) -> RoundEnv:
        return RoundEnv(
            booster=self.booster,
            round=self.round,
            n_rounds=self.booster.n_rounds,
            alpha=float(alpha),
            train_metrics=dict(getattr(self, "train_metrics", {})),
            eval_metrics=dict(getattr(self, "eval_metrics", {})),
            history=HistoryView(self.history),
            snapshot=self.snapshot,
        )

    def policy(self) -> Policy:
        learner = self.learner
        meta = policy_metadata(
            self.booster,
            self.objective,
            self.estimator,
            (learner.name, learner.get_params(deep=False)),
            n_rounds=self.round,
            n_actions=self.data.n_actions,
            n_features=self.data.n_features,
            stop_reason=self.stop_reason,
        )
        return Policy(learner.ensemble(), self.data.n_actions, meta)

    def snapshot(self) -> dict[str, Any]:
        """Everything :class:`~opboost.callbacks.Checkpoint` writes, as of the last round."""
        return {
            "round": self.round,
            "seed": self.seed,
            "fingerprint": self.fingerprint,
            "stop_reason": self.stop_reason,
            "history": self.history,
            "policy": self.policy(),
            "scores": self.scores,
            "eval_scores": self.eval_scores,
        }


def policy_values(data: LoggedBandit, scores: np.ndarray, *, prefix: str) -> dict[str, float]:
    """IPS and SNIPS values of the softmax and argmax policies of ``scores`` (n, K)."""
    rows = np.arange(len(data))
    ratio_soft = softmax(scores)[rows, data.actions] / data.propensities
    ratio_max = (np.argmax(scores, axis=1) == data.actions) / data.propensities
    out = {}
    for kind, ratio in (("softmax", ratio_soft), ("argmax", ratio_max)):
        total = float(np.sum(ratio))
        value = dot(ratio, data.rewards)
        out[f"{prefix}ips_{kind}"] = value / len(data)
        out[f"{prefix}snips_{kind}"] = value / total if total else 0.0
    return out


def policy_metadata(
    booster: Any,
    objective: Any,
    estimator: Any,
    learner: tuple[str, dict[str, Any]],
    *,
    n_rounds: int,
    n_actions: int,
    n_features: int,
    stop_reason: str | None,
) -> dict[str, Any]:
    """The metadata a fitted policy records: its components, the booster's settings and the
    fit's shape. ``learner`` is the (registry name, parameters) ``load_policy`` reads with."""
    return {
        "objective": objective.name,
        "estimator": estimator.name,
        "base_learner": learner[0],
        "base_learner_params": learner[1],
        "opboost_version": _version(),
        "n_rounds": n_rounds,
        "n_actions": n_actions,
        "n_features": n_features,
        "reward_shift": booster.reward_shift,
        "scale": booster.scale,
        "learning_rate": booster.learning_rate,
        "l2": booster.l2,
        "warm_start": booster.warm_start,
        "stop_reason": stop_reason,
    }


def _version() -> str:
    from opboost import __version__

    return __version__
