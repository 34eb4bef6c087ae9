"""A deployment study's trial on a slate world (``[data] world = "slates"``): the seed's
stream of impressions (:func:`opboost.simulation.slate_deployment.slate_stream`, seeded as every
stream is, :func:`~opboost.compose.trial.stream.stream_rng`) played by ``slate_boost`` refitted
in batches (Plackett–Luce exploration at the temperature) or by the world's logger (the
``logging`` baseline). ``test_reward`` is the true expected clicks per held-out impression of
the final policy's ranking (of the logger's, for the baseline); the curves and metrics of the
stream are those of :mod:`opboost.compose.trial.stream`.
"""

from __future__ import annotations

from typing import Any

from opboost.compose.trial.plan import ResolvedTrial
from opboost.compose.trial.result import TrialResult
from opboost.compose.trial.stream import batch_refit, record_curves, record_refits, stream_rng
from opboost.compose.trial.world_data import SlateTrialData
from opboost.simulation.slate_deployment import run_slates, slate_stream

__all__ = ["run_slate_trial"]


def run_slate_trial(trial: ResolvedTrial, data: SlateTrialData, result: TrialResult) -> None:
    """Play the stream of ``data.seed``'s slate world with the trial's algorithm under its
    ``[deployment]`` settings; fill ``result`` (module docstring)."""
    algo = trial.algorithm
    settings = {**trial.deployment, **algo.deployment}
    sizes = {"batch_size": settings["batch_size"], "n_batches": settings["n_batches"]}
    stream = slate_stream(data.world, **sizes, random_state=stream_rng(data.seed))
    info: dict[str, Any] = {"n_interactions": len(stream), **sizes}
    if algo.family == "baseline":  # the logger
        run = run_slates(stream, None)
        info["deployment"] = "fixed"
    else:
        run = run_slates(
            stream,
            batch_refit(algo, data, data.seed),
            temperature=settings["temperature"],
            batch_size=settings["batch_size"],
        )
        info.update(
            deployment="batched", temperature=settings["temperature"], n_refits=len(run.fit_seconds)
        )
        record_refits(run, result)
    record_curves(run, stream, result)
    result.metrics["test_reward"] = data.test_reward(run.policy)
    result.timings["deployment_seconds"] = run.seconds
    result.info.update(info)
