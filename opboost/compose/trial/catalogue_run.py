"""A deployment study's trial on a catalogue world (``[data] world = "catalogue"``): an
algorithm plays fresh rows of the seed's world, each with its candidates, served with them and
the items' features (:func:`opboost.simulation.catalogue_deployment.catalogue_stream`, seeded
as every stream is, :func:`~opboost.compose.trial.stream.stream_rng`).

The world's logger logs batch 0 and is the ``logging`` baseline; ``uniform`` is uniform over
each row's candidates (both fixed: they play every batch, and their ``test_reward`` is their
true value on the world). Batched algorithms (offline boosters, policy learners that fit
catalogue logs, the ``reward_regression`` baseline) are refitted on all the logs after every
batch (:func:`~opboost.compose.trial.stream.play_batched`), and ``test_reward`` is the final
greedy policy's true value on the world's held-out rows. The curves and metrics of the stream
are those of :mod:`opboost.compose.trial.stream`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opboost.compose.trial.plan import ResolvedTrial
from opboost.compose.trial.result import TrialResult
from opboost.compose.trial.stream import play_batched, record_curves, stream_rng
from opboost.compose.trial.world_data import CatalogueTrialData
from opboost.simulation.catalogue_deployment import catalogue_stream
from opboost.simulation.deployment import run_batched

__all__ = ["run_catalogue_trial"]


def _uniform_on_candidates(X: Any, candidates: Any, action_features: Any) -> np.ndarray:
    mask = np.asarray(candidates.toarray(), dtype=np.float64)
    return mask / mask.sum(axis=1, keepdims=True)


def run_catalogue_trial(
    trial: ResolvedTrial, data: CatalogueTrialData, result: TrialResult
) -> None:
    """Play the stream of ``data.seed``'s catalogue world with the trial's algorithm under its
    ``[deployment]`` settings; fill ``result`` (module docstring)."""
    algo, study = trial.algorithm, trial.deployment
    if algo.family == "online":  # refused when the config is read; a config built by hand
        raise ValueError(
            f"algorithm {algo.label!r} is online: a catalogue stream is played by batched "
            f"boosters, policy learners and the logging, uniform and reward_regression "
            f"baselines; remove it from the study."
        )
    settings = {**study, **algo.deployment}
    sizes = {"batch_size": study["batch_size"], "n_batches": study["n_batches"]}
    stream = catalogue_stream(data.world, **sizes, random_state=stream_rng(data.seed))
    info: dict[str, Any] = {"n_interactions": len(stream), "n_batches": study["n_batches"]}
    fixed = algo.family == "baseline" and algo.baseline in ("logging", "uniform")
    if fixed:
        uniform = algo.baseline == "uniform"
        run = run_batched(stream, None, logging_policy=_uniform_on_candidates if uniform else None)
        info.update(deployment="fixed", batch_size=study["batch_size"])
        world = data.world
        value = world.candidate_means.mean() if uniform else world.logging_value
        result.metrics["test_reward"] = float(value)
    else:
        run = play_batched(stream, algo, data, settings, None, result, info)
    record_curves(run, stream, result)
    if not fixed:  # the final policy, greedy
        result.metrics["test_reward"] = data.test_reward(run.policy)
    result.timings["deployment_seconds"] = run.seconds
    result.info.update(info)
