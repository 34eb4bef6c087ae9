"""One trial of a study on the user's own logs (the trial kind ``"logs"``): fit on the
training logs, judge on the held-out logs by IPS, SNIPS and DR, each with its confidence
interval (no labels needed).

offline
    the :class:`~opboost.core.booster.Booster` fitted on the training logs; its argmax policy
    is judged (``info``: rounds, stop reason, start, fallback as in labelled studies).
policy
    a policy learner fitted on the training logs; its ``predict_proba`` is judged.
baseline
    uniform, best constant action (chosen on the training logs), reward regression; the
    logging policy's value is the mean held-out reward (its importance weights are all 1), for
    IPS and SNIPS, with a Student-t interval (DR needs its whole action distribution).

Metrics: ``heldout_<e>``, ``heldout_<e>_low`` and ``heldout_<e>_high`` for e in ips, snips,
dr at ``[experiment] confidence``; DR's cross-fitted reward model is seeded by the trial seed,
so every algorithm of a seed is judged with the same one.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from opboost.api.estimator import ConfidenceInterval, normal_interval
from opboost.api.numerics.arrays import one_hot
from opboost.compose.trial.logs_data import LogsTrialData
from opboost.compose.trial.plan import ResolvedTrial
from opboost.compose.trial.result import TrialResult, best_constant, start_of
from opboost.core.registry import get_registry, make

__all__ = ["HELDOUT_ESTIMATORS", "heldout_intervals", "run_logs_trial"]

#: The estimators that judge every policy on the held-out logs.
HELDOUT_ESTIMATORS = ("ips", "snips", "dr")


def heldout_intervals(
    holdout: Any, probs: np.ndarray, confidence: float, seed: int
) -> dict[str, ConfidenceInterval]:
    """{estimator: value with its ``confidence`` interval} of the policy ``probs`` (n, K) on
    the held-out logs, for every estimator of :data:`HELDOUT_ESTIMATORS`."""
    out = {}
    for name in HELDOUT_ESTIMATORS:
        params = {"random_state": seed} if name == "dr" else {}
        scorer = make("estimator", name, **params).on_logs(holdout)
        out[name] = scorer.interval(probs, alpha=1.0 - confidence)
    return out


def _record(result: TrialResult, intervals: dict[str, ConfidenceInterval]) -> None:
    for name, ci in intervals.items():
        result.metrics[f"heldout_{name}"] = ci.value
        result.metrics[f"heldout_{name}_low"] = ci.low
        result.metrics[f"heldout_{name}_high"] = ci.high


def _offline(algo: Any, data: LogsTrialData, seed: int, result: TrialResult) -> np.ndarray:
    booster = algo.make_booster(random_state=seed)
    booster.fit(data.logged, callbacks=algo.make_callbacks())
    policy = booster.policy_
    result.info.update(n_rounds=int(booster.n_rounds_), stop_reason=booster.stop_reason_)
    result.info["start"] = start_of(policy.metadata)
    result.fallback = getattr(booster, "fallback_", None)
    curves = {"round": list(range(booster.n_rounds_ + 1))}
    curves.update({key: [None, *map(float, val)] for key, val in booster.history_.items()})
    result.curves.update(curves)
    return one_hot(policy.predict(data.holdout.contexts), data.n_actions)


def _baseline(algo: Any, data: LogsTrialData, seed: int, result: TrialResult) -> np.ndarray:
    n, k = len(data.holdout), data.n_actions
    if algo.baseline == "uniform":
        return np.full((n, k), 1.0 / k)
    if algo.baseline == "best_constant":
        best, values = best_constant(data.logged, algo.params.get("estimator", "snips"))
        result.info.update(action=best, logged_values=values)
        return one_hot(np.full(n, best), k)
    model = make("policy_learner", "reward_regression", **algo.params, random_state=seed)
    return model.fit(data.logged).predict_proba(data.holdout.contexts)


def _policy(algo: Any, data: LogsTrialData, seed: int) -> np.ndarray:
    spec = algo.policy_learner
    cls = get_registry().get("policy_learner", spec.name)
    extra = {"random_state": seed} if "random_state" in cls._get_param_names() else {}
    return spec.build(**extra).fit(data.logged).predict_proba(data.holdout.contexts)


def run_logs_trial(trial: ResolvedTrial, data: LogsTrialData, result: TrialResult) -> None:
    """Fit the trial's algorithm on ``data.logged`` and record its held-out IPS, SNIPS and DR
    values with their ``[experiment] confidence`` intervals in ``result.metrics`` (see the
    module docstring)."""
    algo, confidence = trial.algorithm, trial.settings["confidence"]
    start = time.perf_counter()
    if algo.family == "baseline" and algo.baseline == "logging":
        ci = normal_interval(data.holdout.rewards, confidence)
        result.timings["fit_seconds"] = time.perf_counter() - start
        _record(result, {"ips": ci, "snips": ci})
        return
    if algo.family == "offline":
        probs = _offline(algo, data, data.seed, result)
    elif algo.family == "policy":
        probs = _policy(algo, data, data.seed)
    elif algo.family == "baseline":
        probs = _baseline(algo, data, data.seed, result)
    else:  # refused when the config is read; a config built by hand ends here
        raise ValueError(
            f"algorithm {algo.label!r} is {algo.family}: a study on logs runs offline "
            f"algorithms, policy learners and baselines only."
        )
    result.timings["fit_seconds"] = time.perf_counter() - start
    _record(result, heldout_intervals(data.holdout, probs, confidence, data.seed))
