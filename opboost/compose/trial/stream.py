"""A deployment study's trial on a data set: an algorithm plays the seed's stream of
interactions; and what every deployment trial shares (the stream's seed, the batched refits,
the curves).

The stream (:func:`opboost.simulation.deployment.deployment_stream`) is the seed's logged
training rows, labels hidden, in an order and with draws seeded by
``SeedSequence([seed, 4])``: identical for every algorithm of the seed. A catalogue world's
stream is :mod:`opboost.compose.trial.catalogue_run`'s, a slate world's
:mod:`opboost.compose.trial.slate_run`'s. By family:

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

from collections.abc import Callable
from typing import Any

import numpy as np

from opboost.compose.trial.plan import ResolvedTrial
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

__all__ = [
    "STREAM_STAGE",
    "batch_refit",
    "play_batched",
    "record_curves",
    "record_refits",
    "run_deployment_trial",
    "stream_rng",
]

#: The stage of the trial seed's ``SeedSequence`` that seeds the stream (after the splits'
#: and the logs' stages of :mod:`opboost.compose.trial.trial_data`).
STREAM_STAGE = 4


def stream_rng(seed: int) -> np.random.Generator:
    """The generator of trial ``seed``'s stream (:data:`STREAM_STAGE`)."""
    return np.random.default_rng(np.random.SeedSequence([seed, STREAM_STAGE]))


def batch_refit(algo: Any, data: Any, seed: int) -> Callable[[Any], Any]:
    """``fit(logs) -> fitted policy`` of a batched algorithm, seeded by the trial seed."""
    if algo.family == "offline":

        def fit(logs: Any) -> Any:
            booster = algo.make_booster(random_state=seed)
            valid = getattr(data, "valid_logged", None)  # none on a world
            return booster.fit(logs, eval_data=valid, callbacks=algo.make_callbacks())

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


def record_refits(run: Any, result: TrialResult) -> None:
    """The seconds of a batched run's refits, in all and each."""
    result.timings.update(
        fit_seconds=float(sum(run.fit_seconds)), batch_fit_seconds=list(run.fit_seconds)
    )


def play_batched(
    stream: Any,
    algo: Any,
    data: Any,
    settings: dict[str, Any],
    logging_policy: Any,
    result: TrialResult,
    info: dict[str, Any],
) -> Any:
    """Play ``stream`` with ``algo`` refitted after every batch under the exploration of
    ``settings`` (batch 0 logged by ``logging_policy``, or by the stream's own logger when
    None); record the last fit's fallback and start, the settings and the refits' seconds."""
    temperature = settings["temperature"] or None  # 0: epsilon-greedy
    run = run_batched(
        stream,
        batch_refit(algo, data, data.seed),
        logging_policy=logging_policy,
        epsilon=settings["epsilon"],
        temperature=temperature,
        batch_size=settings["batch_size"],
    )
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
    record_refits(run, result)
    return run


def record_curves(run: Any, stream: Any, result: TrialResult) -> None:
    """The cumulative reward and regret at the stream's batch ends, and their end values."""
    at = stream.batch_ends()
    reward, regret = run.cumulative_reward(at), run.cumulative_regret(at)
    result.curves.update(interactions=at, cumulative_reward=reward, cumulative_regret=regret)
    result.metrics.update(cumulative_reward=reward[-1], cumulative_regret=regret[-1])
    result.metrics["stream_reward"] = reward[-1] / len(stream)


def run_deployment_trial(trial: ResolvedTrial, data: TrialData, result: TrialResult) -> None:
    """Play the stream of ``data.seed`` with the trial's algorithm under its ``[deployment]``
    settings; fill ``result`` (module docstring)."""
    algo, study, seed = trial.algorithm, trial.deployment, data.seed
    settings = {**study, **algo.deployment}
    stream = deployment_stream(
        data.logged.contexts,
        data.y_logged,
        n_actions=data.n_actions,
        reward=data.reward,
        random_state=stream_rng(seed),
        batch_size=study["batch_size"],
        n_batches=study["n_batches"],
    )
    info: dict[str, Any] = {"n_interactions": len(stream), "n_batches": study["n_batches"]}
    if algo.family == "online":
        learner = algo.make_online_learner(data.n_actions, random_state=seed)
        run = run_online(stream, learner)
        info.update(deployment="online", batch_size=study["batch_size"])

        def probs_fn(X: Any) -> np.ndarray:
            return greedy_probs(learner.action_probs_many(dense(X)))

    elif algo.family == "baseline" and algo.baseline in ("logging", "uniform"):
        k = data.n_actions
        if algo.baseline == "logging":
            probs_fn = data.logging_policy.predict_proba
        else:

            def probs_fn(X: Any) -> np.ndarray:
                return np.full((X.shape[0], k), 1.0 / k)

        run = run_batched(stream, None, logging_policy=probs_fn)
        info.update(deployment="fixed", batch_size=study["batch_size"])
    else:
        logger = data.logging_policy.predict_proba
        run = play_batched(stream, algo, data, settings, logger, result, info)
        probs_fn = run.policy.action_distribution
    record_curves(run, stream, result)
    score_policy(probs_fn, data, result)
    result.timings["deployment_seconds"] = run.seconds
    result.info.update(info)
