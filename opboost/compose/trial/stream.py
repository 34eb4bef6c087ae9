"""One trial of a deployment study: an algorithm plays the seed's stream of interactions.

The stream (:func:`opboost.simulation.deployment.deployment_stream`) is the seed's logged
training rows, labels hidden, in an order and with draws seeded by
``SeedSequence([seed, 4])``: identical for every algorithm of the seed. On a catalogue world
(:func:`opboost.simulation.catalogue_deployment.catalogue_stream`) it is fresh rows of the seed's
world, each with its candidates, served with them and the items' features; its logger logs
batch 0 and is the ``logging`` baseline, ``uniform`` is uniform over each row's candidates,
and ``test_reward`` is a policy's true value on the world's held-out rows. By family:

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
from opboost.compose.trial.world_data import CatalogueTrialData, SlateTrialData
from opboost.core.registry import get_registry, make
from opboost.simulation.catalogue_deployment import catalogue_stream
from opboost.simulation.deployment import deployment_stream, run_batched, run_online
from opboost.simulation.slate_deployment import run_slates, slate_stream

__all__ = ["STREAM_STAGE", "run_deployment_trial"]

#: The stage of the trial seed's ``SeedSequence`` that seeds the stream (after the splits'
#: and the logs' stages of :mod:`opboost.compose.trial.trial_data`).
STREAM_STAGE = 4


def _refit(algo: Any, data: TrialData, seed: int) -> Any:
    """``fit(logs) -> fitted policy`` of a batched algorithm, seeded by the trial seed."""
    if algo.family == "offline":

        def fit(logs: Any) -> Any:
            booster = algo.make_booster(random_state=seed)
            valid = getattr(data, "valid_logged", None)  # none on a catalogue world
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


def _fixed_policy(algo: Any, data: Any) -> Any:
    """``X -> (m, K)`` distribution of a fixed baseline (the logging or uniform policy); on a
    catalogue world, None for its logger and ``(X, candidates, action_features) -> (m, K)``
    uniform over each row's candidates."""
    if algo.baseline == "logging":
        return None if isinstance(data, CatalogueTrialData) else data.logging_policy.predict_proba
    if isinstance(data, CatalogueTrialData):
        return _uniform_on_candidates
    k = data.n_actions
    return lambda X: np.full((X.shape[0], k), 1.0 / k)


def _uniform_on_candidates(X: Any, candidates: Any, action_features: Any) -> np.ndarray:
    mask = np.asarray(candidates.toarray(), dtype=np.float64)
    return mask / mask.sum(axis=1, keepdims=True)


def _stream(data: Any, study: dict[str, Any]) -> Any:
    """The seed's stream: its logged training rows, or fresh rows of its catalogue world."""
    sizes = {"batch_size": study["batch_size"], "n_batches": study["n_batches"]}
    rng = np.random.default_rng(np.random.SeedSequence([data.seed, STREAM_STAGE]))
    if isinstance(data, CatalogueTrialData):
        return catalogue_stream(data.world, **sizes, random_state=rng)
    return deployment_stream(
        data.logged.contexts,
        data.y_logged,
        n_actions=data.n_actions,
        reward=data.reward,
        random_state=rng,
        **sizes,
    )


def run_deployment_trial(study: dict[str, Any], algo: Any, data: Any, result: TrialResult) -> None:
    """Play the stream of ``data.seed`` with ``algo`` under the study's ``[deployment]``
    settings ``study``; fill ``result`` (module docstring)."""
    seed = data.seed
    settings = {**study, **algo.deployment}
    if isinstance(data, SlateTrialData):
        return _run_slate_trial(algo, data, settings, result)
    stream, on_catalogue = _stream(data, study), isinstance(data, CatalogueTrialData)
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
        if on_catalogue:  # the true values of the logger and of uniform over the candidates
            test = data.world
            value = test.candidate_means.mean() if probs_fn else test.logging_value
            result.metrics["test_reward"] = float(value)
    else:
        temperature = settings["temperature"] or None  # 0: epsilon-greedy
        run = run_batched(
            stream,
            _refit(algo, data, seed),
            logging_policy=None if on_catalogue else data.logging_policy.predict_proba,
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
    _record_curves(run, stream, result)
    if not on_catalogue:
        score_policy(probs_fn, data, result)
    elif "test_reward" not in result.metrics:  # the final policy, greedy
        result.metrics["test_reward"] = data.test_reward(run.policy)
    result.timings["deployment_seconds"] = run.seconds
    result.info.update(info)


def _record_curves(run: Any, stream: Any, result: TrialResult) -> None:
    """The cumulative reward and regret at the stream's batch ends, and their end values."""
    at = stream.batch_ends()
    reward, regret = run.cumulative_reward(at), run.cumulative_regret(at)
    result.curves.update(interactions=at, cumulative_reward=reward, cumulative_regret=regret)
    result.metrics.update(cumulative_reward=reward[-1], cumulative_regret=regret[-1])
    result.metrics["stream_reward"] = reward[-1] / len(stream)


def _run_slate_trial(algo: Any, data: SlateTrialData, settings: dict, result: TrialResult) -> None:
    """A slate world's stream played by ``slate_boost`` refitted in batches (Plackett–Luce
    exploration at the temperature) or by the world's logger (the ``logging`` baseline)."""
    sizes = {"batch_size": settings["batch_size"], "n_batches": settings["n_batches"]}
    rng = np.random.default_rng(np.random.SeedSequence([data.seed, STREAM_STAGE]))
    stream = slate_stream(data.world, **sizes, random_state=rng)
    info: dict[str, Any] = {"n_interactions": len(stream), **sizes}
    if algo.family == "baseline":  # the logger
        run = run_slates(stream, None)
        info["deployment"] = "fixed"
    else:
        run = run_slates(
            stream,
            _refit(algo, data, data.seed),
            temperature=settings["temperature"],
            batch_size=settings["batch_size"],
        )
        info.update(
            deployment="batched", temperature=settings["temperature"], n_refits=len(run.fit_seconds)
        )
        result.timings.update(
            fit_seconds=float(sum(run.fit_seconds)), batch_fit_seconds=list(run.fit_seconds)
        )
    _record_curves(run, stream, result)
    result.metrics["test_reward"] = data.test_reward(run.policy)
    result.timings["deployment_seconds"] = run.seconds
    result.info.update(info)
