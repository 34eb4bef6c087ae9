"""One trial of a deployment study: an algorithm plays the seed's stream of interactions.

The stream (:func:`opboost.simulation.deployment.deployment_stream`) is the seed's logged
training rows, labels hidden, in an order and with draws seeded by
``SeedSequence([seed, 4])``: identical for every algorithm of the seed. By family:

batched (offline boosters, policy learners, the ``best_constant`` and ``reward_regression``
    baselines): batch 0 logged by the logging policy, then refitted on all the logs after
    every batch and deployed with the exploration of ``[deployment]`` (or the algorithm's
    own ``deployment`` table) for the next (:func:`~opboost.simulation.deployment.run_batched`);
online (bandit learners): predict and learn at every interaction
    (:func:`~opboost.simulation.deployment.run_online`);
fixed (the ``logging`` and ``uniform`` baselines): the policy plays every batch.

The trial records ``curves.interactions`` (the ends of the study's batches),
``curves.cumulative_reward`` and ``curves.cumulative_regret`` (against the best action of
every row) there, the metrics at the end of the stream, ``test_reward`` of the final greedy
policy (ties split evenly) and the validation metrics, and in ``timings`` the seconds of
each refit (``batch_fit_seconds``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opboost.compose.trial.result import (
    TrialResult,
    best_constant,
    greedy_probs,
    score_policy,
    start_of,
)
from opboost.compose.trial.trial_data import TrialData, dense
from opboost.core.registry import get_registry, make
from opboost.simulation.deployment import deployment_stream, run_batched, run_online

__all__ = ["STREAM_STAGE", "run_deployment_trial"]

#: The stage of the trial seed's ``SeedSequence`` that seeds the stream (after the splits'
#: and the logs' stages of :mod:`opboost.compose.trial.trial_data`).
STREAM_STAGE = 4


def _refit(algo: Any, data: TrialData, seed: int) -> Any:
    """``fit(logs) -> fitted policy`` of a batched algorithm, seeded by the trial seed."""
    if algo.family == "offline":

        def fit(logs: Any) -> Any:
            booster = algo.make_booster(random_state=seed)
            return booster.fit(logs, eval_data=data.valid_logged, callbacks=algo.make_callbacks())

    elif algo.family == "policy":
        spec = algo.policy_learner
        cls = get_registry().get("policy_learner", spec.name)
        extra = {"random_state": seed} if "random_state" in cls._get_param_names() else {}

        def fit(logs: Any) -> Any:
            return spec.build(**extra).fit(logs)

    elif algo.baseline == "best_constant":
        from opboost.api.policy import ConstantPolicy

        def fit(logs: Any) -> Any:
            action, _ = best_constant(logs, algo.params.get("estimator", "snips"))
            return ConstantPolicy(action, logs.n_actions)

    else:  # reward_regression

        def fit(logs: Any) -> Any:
            params = {**algo.params, "random_state": seed}
            return make("policy_learner", "reward_regression", **params).fit(logs)

    return fit


def _fixed_policy(algo: Any, data: TrialData) -> Any:
    """``X -> (m, K)`` distribution of a fixed baseline (the logging or uniform policy)."""
    if algo.baseline == "logging":
        return data.logging_policy.predict_proba
    k = data.n_actions
    return lambda X: np.full((X.shape[0], k), 1.0 / k)


def run_deployment_trial(config: Any, algo: Any, data: TrialData, result: TrialResult) -> None:
    """Play the stream of ``data.seed`` with ``algo``; fill ``result`` (module docstring)."""
    seed, study = data.seed, config.deployment
    settings = {**study, **algo.deployment}
    stream = deployment_stream(
        data.logged.contexts,
        data.y_logged,
        n_actions=data.n_actions,
        batch_size=study["batch_size"],
        n_batches=study["n_batches"],
        reward=data.reward,
        random_state=np.random.default_rng(np.random.SeedSequence([seed, STREAM_STAGE])),
    )
    info: dict[str, Any] = {"n_interactions": len(stream), "n_batches": study["n_batches"]}
    if algo.family == "online":
        learner = algo.make_online_learner(data.n_actions, random_state=seed)
        run = run_online(stream, learner)
        info.update(deployment="online", batch_size=study["batch_size"])

        def probs_fn(X: Any) -> np.ndarray:
            return greedy_probs(learner.action_probs_many(dense(X)))

    elif algo.family == "baseline" and algo.baseline in ("logging", "uniform"):
        probs_fn = _fixed_policy(algo, data)
        run = run_batched(stream, None, logging_policy=probs_fn)
        info.update(deployment="fixed", batch_size=study["batch_size"])
    else:
        temperature = settings["temperature"] or None  # 0: epsilon-greedy
        run = run_batched(
            stream,
            _refit(algo, data, seed),
            logging_policy=data.logging_policy.predict_proba,
            epsilon=settings["epsilon"],
            temperature=temperature,
            batch_size=settings["batch_size"],
        )
        probs_fn = run.policy.action_distribution
        result.fallback = getattr(run.policy, "fallback_", None)
        metadata = getattr(getattr(run.policy, "policy_", run.policy), "metadata", None)
        if algo.family == "offline" and metadata is not None:  # where its last fit began
            info["start"] = start_of(metadata)
        info.update(
            deployment="batched",
            batch_size=settings["batch_size"],
            epsilon=settings["epsilon"],
            temperature=settings["temperature"],
            n_refits=len(run.fit_seconds),
        )
        result.timings.update(
            fit_seconds=float(sum(run.fit_seconds)), batch_fit_seconds=list(run.fit_seconds)
        )
    at = stream.batch_ends()
    reward, regret = run.cumulative_reward(at), run.cumulative_regret(at)
    result.curves.update(interactions=at, cumulative_reward=reward, cumulative_regret=regret)
    result.metrics.update(cumulative_reward=reward[-1], cumulative_regret=regret[-1])
    result.metrics["stream_reward"] = reward[-1] / len(stream)
    score_policy(probs_fn, data, result)
    result.timings["deployment_seconds"] = run.seconds
    result.info.update(info)
