"""One trial: one algorithm, one seed, on the data every algorithm of that seed shares, run
by the runner of its kind.

A trial the study resolved (:class:`~opboost.compose.trial.plan.ResolvedTrial`) is of one kind
(``ResolvedTrial.kind``), and each kind runs in its own module (:data:`RUNNERS`):

``labelled``
    a data set's logs: fit and score by the true expected reward on its labelled test rows
    (:mod:`opboost.compose.trial.labelled_run`);
``logs``
    the user's own logs (``[data] path``): fit on the training logs, judged on the held-out
    logs (:mod:`opboost.compose.trial.logs_run`);
``stream``
    a deployment study (a config with ``[deployment]``) on a data set: the algorithm plays the
    seed's stream (:mod:`opboost.compose.trial.stream`);
``catalogue``, ``slates``
    a deployment study on a simulated world (:mod:`opboost.compose.trial.catalogue_run`,
    :mod:`opboost.compose.trial.slate_run`).

Each trial runs with one thread per native library (parallelism is over trials), so results
do not depend on how many trials run at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from opboost.compose.trial.catalogue_run import run_catalogue_trial
from opboost.compose.trial.labelled_run import run_labelled_trial
from opboost.compose.trial.logs_run import run_logs_trial
from opboost.compose.trial.plan import ResolvedTrial, TrialKey, resolve_trial
from opboost.compose.trial.result import TrialResult
from opboost.compose.trial.slate_run import run_slate_trial
from opboost.compose.trial.stream import run_deployment_trial

__all__ = ["RUNNERS", "run_resolved", "run_trial"]

#: The runner of each kind of trial (``ResolvedTrial.kind``): ``runner(trial, data, result)``
#: runs the trial's algorithm on ``data`` (the trial data of its seed) and fills ``result``.
RUNNERS: dict[str, Callable[[ResolvedTrial, Any, TrialResult], None]] = {
    "labelled": run_labelled_trial,
    "logs": run_logs_trial,
    "stream": run_deployment_trial,
    "catalogue": run_catalogue_trial,
    "slates": run_slate_trial,
}


def run_trial(
    config: Any,
    algorithm: Any,
    data: Any,
    *,
    candidate: int | None = None,
    overrides: dict[str, Any] | None = None,
) -> TrialResult:
    """Train and evaluate ``algorithm`` (an AlgorithmSpec of ``config``) on ``data`` (the trial
    data of its seed).

    ``candidate``/``overrides`` record which search candidate this is (the algorithm must
    already have the overrides applied). The booster, learner and reward model are seeded
    with ``data.seed``.
    """
    key = TrialKey(algorithm.label, data.seed, candidate)
    trial = resolve_trial(config, key, algorithm=algorithm, overrides=overrides)
    return run_resolved(trial, data)


def run_resolved(trial: ResolvedTrial, data: Any) -> TrialResult:
    """Train and evaluate the algorithm of the resolved ``trial`` on ``data`` (the trial data
    of its seed); the config is not needed."""
    import lightgbm  # noqa: F401 - loaded first so its OpenMP runtime is limited below
    from threadpoolctl import threadpool_limits

    algorithm, runner = trial.algorithm, RUNNERS[trial.kind]
    result = TrialResult(
        algorithm.label, algorithm.family, data.seed, trial.key.candidate, dict(trial.overrides)
    )
    result.info.update(data.sizes())
    start = time.perf_counter()
    with threadpool_limits(limits=1):
        runner(trial, data, result)
    result.timings["total_seconds"] = time.perf_counter() - start
    result.metrics = {k: float(v) for k, v in result.metrics.items()}
    return result
