"""One trial on a data set's labelled logs (the trial kind ``"labelled"``): one algorithm, one
seed, scored by its TRUE expected reward on test rows.

:func:`run_labelled_trial` takes the :class:`~opboost.compose.trial.trial_data.TrialData` of a
seed (identical for every algorithm of that seed) and runs the trial's algorithm by family:

offline
    fit the :class:`~opboost.core.booster.Booster` on the logged training rows (``eval_data`` = the
    logged validation rows when there are any); score the argmax policy (and the softmax
    policy) on test; test reward at the start (round 0) and after every boosting round from
    the ensemble's staged scores; ``info["start"]`` says which start ran (:func:`start_of`).
    In an offline-vs-online study also the learning curve over the logged rows
    (:func:`learning_curve`: ``n_logged_used``, ``test_reward_n``), on the online axis.
    When a ``Booster(validation_fraction=..., safe=True)`` falls back to its best constant
    action, the trial records ``fallback = "constant"``, the constant policy's metrics, the
    action and the selection report in ``info``, and a flat ``test_reward_round`` curve at the
    constant's test reward (rounds 0 to the last round run).
online
    stream the logged training rows, in an order seeded by the trial seed, through
    :func:`opboost.algorithms.online.run_bandit` (labels hidden); progressive reward per
    interaction; test reward of the learner's greedy policy (its action distribution without
    exploration) at 0 interactions (the untrained learner), at ``online_eval_points`` evenly
    spaced interactions and at the end.
policy
    a whole-policy learner fitted on the logged training rows, its ``predict_proba`` scored.
baseline
    logging policy (stochastic), uniform, best constant action (chosen on the logged
    training rows by IPS or SNIPS), reward regression (LightGBM, argmax).

Every trial also reports ``valid_reward`` (true reward on the validation rows) and
``valid_snips`` (SNIPS estimate on the logged validation rows) when a validation split exists.
"""

from __future__ import annotations

import copy
import time
from typing import Any

import numpy as np

from opboost.api.numerics.arrays import one_hot
from opboost.api.serving.exploration import served_tie_order
from opboost.api.serving.masks import greedy
from opboost.compose.trial.plan import ResolvedTrial
from opboost.compose.trial.result import (
    TrialResult,
    best_constant,
    greedy_probs,
    score_policy,
    start_of,
    validation_metrics,
)
from opboost.compose.trial.trial_data import TrialData, dense
from opboost.core.registry import get_registry, make
from opboost.simulation.supervised import expected_reward

__all__ = ["learning_curve", "run_labelled_trial", "staged_rewards"]


def staged_rewards(policy: Any, X: Any, y: Any, reward: Any) -> list[float] | None:
    """True reward of the argmax policy at the start (round 0) and after each boosting round,
    (rounds + 1,), or None when the policy has no ensemble or the ensemble exposes no stages.

    The ensemble's ``staged_decision_function(X)`` yields the start's members first (a reward
    model's trees, a warm start's members), then one stage per boosting round: the last
    ``metadata["n_rounds"]`` stages are the rounds and the stage before them is round 0 (F_0 = 0
    without a start, where ``predict``'s argmax plays the first action of its ``tie_order``,
    else action 0). The last value is the
    policy's own (``decision_function``, which the final stage must match, or None); a policy of
    no stages, such as a :class:`~opboost.api.policy.ConstantPolicy`, gives that one value.
    """
    ensemble = getattr(policy, "ensemble", None)
    stages = None if ensemble is None else _stages(ensemble, X)
    if stages is None:
        return None
    k = policy.n_actions

    tie_order = served_tie_order(policy, k)  # as predict breaks equal scores

    def value(scores: np.ndarray) -> float:
        return expected_reward(one_hot(greedy(scores, tie_order), k), y, reward)

    final = policy.decision_function(X)
    scores = np.zeros((X.shape[0], k))
    out = [value(scores)]  # F = 0, before any member
    for scores in stages:
        out.append(value(scores))
    if len(out) > 1 and not np.allclose(scores, final, atol=1e-6):
        return None
    rounds = int(policy.metadata.get("n_rounds", policy.n_rounds))
    out[-1] = value(final)
    return out[max(0, len(out) - rounds - 1) :]


def _stages(ensemble: Any, X: Any):
    """The ensemble's cumulative (m, K) scores after each round, or None if it has no rounds."""
    try:
        return ensemble.staged_decision_function(X)
    except (AttributeError, NotImplementedError):
        return None


# --- scoring ----------------------------------------------------------------------------------


def _fit_offline(algo: Any, logged: Any, data: TrialData, seed: int, *, curve: bool = False) -> Any:
    """``algo``'s booster fitted on ``logged``; a ``curve`` fit scores the validation rows
    only when a callback stops on them (elsewhere they only fill the history: the fit is the
    same without them, and faster)."""
    callbacks = algo.make_callbacks()
    needs_eval = any(str(getattr(c, "metric", "")).startswith("eval_") for c in callbacks)
    booster = algo.make_booster(random_state=seed)
    eval_data = data.valid_logged if needs_eval or not curve else None
    booster.fit(logged, eval_data=eval_data, callbacks=callbacks)
    return booster


def _argmax_reward(policy: Any, data: TrialData) -> float:
    """True test reward of ``policy``'s argmax actions."""
    argmax = one_hot(policy.predict(data.X_test), data.n_actions)
    return expected_reward(argmax, data.y_test, data.reward)


def learning_curve(
    algo: Any, data: TrialData, seed: int, points: int, final: float
) -> tuple[dict[str, list], dict[int, str]]:
    """The offline learning curve over the logged rows, and the prefixes that could not be fitted.

    ``n_logged_used``: 0, then ``points`` counts doubling up to every logged row (n/8, n/4,
    n/2, n for 4); ``test_reward_n``: the true test reward of the argmax policy fitted on the
    first n logged rows (at 0 the uniform policy's, the value before any data; at the end
    ``final``, the trial's own fit). Doubling sizes cost less than one more fit on every row
    and place the points where a learning curve rises. A prefix the booster refuses (too few
    rows for its settings) gets None, and its error is returned ({n: message})."""
    n, k = len(data.logged), data.n_actions
    halvings = 2.0 ** -np.arange(points - 1, -1, -1)
    counts = sorted({int(c) for c in np.round(n * halvings) if c > 0})
    rewards = [expected_reward(np.full((len(data.y_test), k), 1.0 / k), data.y_test, data.reward)]
    errors: dict[int, str] = {}
    for count in counts[:-1]:
        rows = data.logged.subset(np.arange(count))
        try:
            booster = _fit_offline(algo, rows, data, seed, curve=True)
        except ValueError as exc:  # a plot point is not worth the trial
            errors[count] = f"{type(exc).__name__}: {exc}"
            rewards.append(None)
            continue
        rewards.append(_argmax_reward(booster.policy_, data))
    return {"n_logged_used": [0, *counts], "test_reward_n": [*rewards, final]}, errors


def _run_offline(
    algo: Any, data: TrialData, seed: int, result: TrialResult, curve_points: int = 0
) -> None:
    start = time.perf_counter()
    booster = _fit_offline(algo, data.logged, data, seed)
    result.timings["fit_seconds"] = time.perf_counter() - start
    k = data.n_actions
    policy = booster.policy_
    result.metrics["test_reward"] = _argmax_reward(policy, data)
    result.metrics["test_reward_softmax"] = expected_reward(
        policy.predict_proba(data.X_test), data.y_test, data.reward
    )
    result.metrics.update(validation_metrics(data, lambda X: one_hot(policy.predict(X), k)))
    result.info.update(n_rounds=int(booster.n_rounds_), stop_reason=booster.stop_reason_)
    selection = getattr(booster, "selection_", None)
    if selection is not None:
        result.info["selection"] = dict(selection)
    result.info["start"] = start_of(policy.metadata)
    result.fallback = getattr(booster, "fallback_", None)
    # round 0 is the start: the per-round history begins at round 1
    curves = {"round": list(range(booster.n_rounds_ + 1))}
    curves.update({key: [None, *map(float, val)] for key, val in booster.history_.items()})
    # the deployed policy after every round: a fallback (the constant, a challenger) after
    # each; else the kept rounds', then (after a held-out choice) the kept policy's up to the
    # last round run; after early stopping the curve ends at the kept round
    staged = (
        None if result.fallback else staged_rewards(policy, data.X_test, data.y_test, data.reward)
    )
    if result.fallback == "constant":
        result.info["action"] = int(policy.action)
    if result.fallback is not None:
        curves["test_reward_round"] = [result.metrics["test_reward"]] * (booster.n_rounds_ + 1)
    elif staged is not None:
        past = booster.n_rounds_ + 1 - len(staged) if selection is not None else 0
        curves["test_reward_round"] = [*staged, *[staged[-1]] * max(past, 0)]
    result.curves.update(curves)
    if curve_points > 0:
        start = time.perf_counter()
        final = result.metrics["test_reward"]
        curve, errors = learning_curve(algo, data, seed, curve_points, final)
        result.curves.update(curve)
        if errors:
            result.info["curve_errors"] = {str(count): text for count, text in errors.items()}
        result.timings["curve_seconds"] = time.perf_counter() - start


def _eval_steps(n: int, points: int) -> set[int]:
    if points <= 0:
        return set()
    return {int(s) for s in np.unique(np.linspace(n / points, n, points).round()) if s > 0}


def _run_online(
    algo: Any, data: TrialData, seed: int, eval_points: int, result: TrialResult
) -> None:
    from opboost.simulation.runners import run_bandit

    learner = algo.make_online_learner(data.n_actions, random_state=seed)
    X_stream, X_test = dense(data.logged.contexts), dense(data.X_test)
    n_steps = len(data.logged) * algo.n_passes
    checkpoints = _eval_steps(n_steps, eval_points)
    seen: list[float] = []
    evals: dict[str, list] = {"eval_step": [], "test_reward_step": []}
    inner = learner.learn_one

    def test_reward(model: Any) -> float:
        probs = greedy_probs(model.action_probs_many(X_test))
        return expected_reward(probs, data.y_test, data.reward)

    def learn_one(x: np.ndarray, action: int, reward: float) -> None:
        inner(x, action, reward)
        seen.append(reward)
        if len(seen) in checkpoints:  # score a copy: the learner's own state stays untouched
            evals["eval_step"].append(len(seen))
            evals["test_reward_step"].append(test_reward(copy.deepcopy(learner)))

    if checkpoints:  # the curve starts at 0 interactions: the untrained learner's greedy policy
        evals["eval_step"].append(0)
        evals["test_reward_step"].append(test_reward(copy.deepcopy(learner)))
    learner.learn_one = learn_one  # records the revealed rewards; run_bandit sees no change
    start = time.perf_counter()
    try:
        run = run_bandit(
            learner,
            X_stream,
            data.y_logged,
            reward=data.reward,
            n_actions=data.n_actions,
            random_state=seed,
            n_passes=algo.n_passes,
        )
    finally:
        del learner.learn_one
    result.timings["fit_seconds"] = time.perf_counter() - start
    result.timings["run_bandit_seconds"] = run.seconds
    result.metrics["test_reward"] = test_reward(learner)
    result.metrics["test_reward_explore"] = expected_reward(
        learner.action_probs_many(X_test), data.y_test, data.reward
    )
    result.metrics.update(progressive_reward=run.mean_reward, progressive_error=run.error_rate)
    if run.greedy_error_rate is not None:
        result.metrics["progressive_greedy_error"] = run.greedy_error_rate
    result.metrics.update(
        validation_metrics(data, lambda X: greedy_probs(learner.action_probs_many(dense(X))))
    )
    steps = np.asarray(run.curve_steps, dtype=np.int64)
    running = np.cumsum(seen) / np.arange(1, len(seen) + 1)
    result.curves.update(
        step=steps.tolist(),
        progressive_reward=running[steps - 1].tolist(),
        progressive_error=list(run.curve_error),
        **evals,
    )
    result.info.update(n_interactions=run.n_examples, n_passes=run.n_passes)


def _run_baseline(algo: Any, data: TrialData, seed: int, result: TrialResult) -> None:
    k, name = data.n_actions, algo.baseline
    start = time.perf_counter()
    if name == "logging":
        probs_fn = data.logging_policy.predict_proba
    elif name == "uniform":

        def probs_fn(X: Any) -> np.ndarray:
            return np.full((X.shape[0], k), 1.0 / k)

    elif name == "best_constant":
        best, values = best_constant(data.logged, algo.params.get("estimator", "snips"))
        result.info.update(action=best, logged_values=values)

        def probs_fn(X: Any) -> np.ndarray:
            return one_hot(np.full(X.shape[0], best), k)

    else:  # reward_regression, the built-in policy learner
        model = make("policy_learner", "reward_regression", **algo.params, random_state=seed)
        probs_fn = model.fit(data.logged).predict_proba
    result.timings["fit_seconds"] = time.perf_counter() - start
    score_policy(probs_fn, data, result)


def _run_policy(algo: Any, data: TrialData, seed: int, result: TrialResult) -> None:
    """A whole-policy learner (kind "policy_learner") fitted on the logged rows, greedy."""
    spec = algo.policy_learner
    cls = get_registry().get("policy_learner", spec.name)
    extra = {"random_state": seed} if "random_state" in cls._get_param_names() else {}
    start = time.perf_counter()
    model = spec.build(**extra).fit(data.logged)
    result.timings["fit_seconds"] = time.perf_counter() - start
    score_policy(model.predict_proba, data, result)


def run_labelled_trial(trial: ResolvedTrial, data: TrialData, result: TrialResult) -> None:
    """Train the trial's algorithm on ``data`` and score it on the labelled test rows (the
    module docstring); fill ``result``. The booster, learner and reward model are seeded with
    ``data.seed``."""
    algorithm, seed, settings = trial.algorithm, data.seed, trial.settings
    if algorithm.family == "offline":
        _run_offline(algorithm, data, seed, result, settings["offline_curve_points"])
    elif algorithm.family == "online":
        _run_online(algorithm, data, seed, settings["online_eval_points"], result)
    elif algorithm.family == "policy":
        _run_policy(algorithm, data, seed, result)
    else:
        _run_baseline(algorithm, data, seed, result)
