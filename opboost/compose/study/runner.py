"""Comparative studies: every algorithm x every seed on identical simulated data.

:func:`run_study` plans the trials of a config (an algorithm with a ``search`` contributes
one trial per candidate per seed), runs the missing ones -- in worker processes when
``n_jobs > 1`` -- and writes, under ``out``:

``trials/<label>__c<candidate>__s<seed>.json``
    (``<label>`` as given by :func:`trial_filenames`: unique per label) one file per
    finished trial, written atomically as soon as the trial finishes, with the
    trial's fingerprint (config, simulation, seed and a SHA-256 of the loaded data set's
    contents), the data hash and the library versions. A re-run with the same ``out`` reuses
    a stored trial only when its fingerprint, data hash and versions all match; any other
    stored trial is re-run, and the study says why on stderr (also for a file that is not a
    complete trial record: truncated, or JSON of another shape). Failed trials are not
    stored: a re-run retries them. When a trial file cannot be written (read-only or full
    disk) the study stops with a :class:`StudyError` naming it; stored trials are kept.
``results.json``
    resolved config, seeds, versions, every trial (a failed one with ``failed``, ``error``
    and ``traceback`` and no metrics), ``failed`` (the failed trials), search selections, the
    summary (mean and interval per metric per algorithm, over its successful trials) and
    ``fallbacks`` (per offline algorithm, how many reported trials fell back to the constant
    action; see ``Booster(safe=True)``). Non-finite numbers are written as ``null`` and
    listed in ``non_finite`` (JSON has no NaN or infinity).
``results.csv``, ``results.md``
    one row per trial (with its ``fallback``); the summary table (with a ``fallbacks``
    column when any reported trial fell back, a ``failed`` column and a list of failed
    trials when any trial failed).
``*.png``
    plots (see :func:`opboost.compose.study.plots.plot_study`).
``.opboost-study.lock``
    while a study runs: its pid and host. A second study on the same ``out`` is refused
    (:class:`StudyLockedError`); a lock left by a dead process is taken over with a warning.

Every file is written atomically (unique temporary name in the same directory, fsync,
``os.replace``). When writing the summary outputs fails, the error names what failed and
the per-trial files stay, so a re-run resumes from them. One failing trial does not stop the
study: it is recorded as failed, every other trial is kept and written, and ``results``'s
``failed`` lists it (``opboost study`` then exits with status 1); when every trial fails the
first error is raised. With ``n_jobs > 1`` the workers die with the study: SIGTERM
terminates the pool, and each worker exits when its parent process dies (even by SIGKILL).

Determinism: every random choice is seeded by the trial seed and each trial runs with one
thread per native library, so results do not depend on ``n_jobs`` or on resuming. Timings
live only in fields named ``timings``; :func:`comparable` drops them, and two runs of the
same study give equal ``comparable(results)``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from opboost.api.exceptions import ConfigError
from opboost.compose.config.experiment import ExperimentConfig
from opboost.compose.study.errors import (
    StudyError,
    os_error,
)
from opboost.compose.study.lock import StudyLock
from opboost.compose.study.outputs import write_outputs
from opboost.compose.study.results_json import (
    trial_versions,
    versions,
)
from opboost.compose.study.session import StudyRun
from opboost.compose.trial.plan import (
    TrialKey,
    fingerprint,
    plan_trials,
)
from opboost.compose.trial.store import load_stored_trials, stored_timings

__all__ = ["run_study", "study_plan"]


def _n_jobs(n_jobs: int | None, config: ExperimentConfig) -> int:
    """``n_jobs``, or the config's when None; >= 1 (0 used to fall back to the config's)."""
    n_jobs = config.experiment["n_jobs"] if n_jobs is None else n_jobs
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs < 1:
        raise ConfigError(
            f"n_jobs must be an integer >= 1 (parallel trials). Got {n_jobs!r}.", file=config.file
        )
    return n_jobs


def study_plan(
    config: ExperimentConfig,
    out: str | os.PathLike | None = None,
    *,
    data_dir: str | None = None,
    n_jobs: int | None = None,
) -> dict[str, Any]:
    """What :func:`run_study` would do, without running anything or taking the lock.

    Returns ``trials`` (every planned :class:`TrialKey`), ``reused`` (those whose stored
    trial file in ``out/trials`` would be reused), ``stale`` ({reason: [file, ...]} of stored
    trials that would be re-run), ``to_run``, ``n_jobs``, ``seconds_per_trial`` ({label: mean
    stored seconds}) and ``estimate_seconds`` (the trials to run, from the stored timings of
    their algorithm, divided by ``n_jobs``; None without timings) with ``unknown_labels``
    (algorithms to run without a stored timing).
    """
    keys = plan_trials(config)
    n_jobs = _n_jobs(n_jobs, config)
    done: dict[TrialKey, dict] = {}
    stale: dict[str, list[str]] = {}
    timings: dict[str, list[float]] = {}
    trial_dir = None if out is None else Path(out) / "trials"
    if trial_dir is not None and trial_dir.is_dir() and any(trial_dir.glob("*.json")):
        from opboost.compose.trial.trial_data import clear_dataset_cache, data_digest

        clear_dataset_cache()
        digest = data_digest(config.data, data_dir)
        prints = {key: fingerprint(config, key, digest) for key in keys}
        current = trial_versions(config, keys, versions())
        done, stale = load_stored_trials(trial_dir, keys, prints, digest, current)
        timings = stored_timings(trial_dir)
    to_run = [k for k in keys if k not in done]
    per_label = {label: sum(v) / len(v) for label, v in timings.items() if v}
    unknown = list(dict.fromkeys(k.label for k in to_run if k.label not in per_label))
    known = [per_label[k.label] for k in to_run if k.label in per_label]
    estimate = None
    if known:
        estimate = sum(known) / max(1, min(n_jobs, len(to_run)))
    return {
        "trials": keys,
        "reused": [k for k in keys if k in done],
        "stale": stale,
        "to_run": to_run,
        "n_jobs": n_jobs,
        "seconds_per_trial": per_label,
        "estimate_seconds": estimate,
        "unknown_labels": unknown,
    }


def run_study(
    config: ExperimentConfig,
    out: str | os.PathLike | None,
    *,
    n_jobs: int | None = None,
    data_dir: str | None = None,
    progress: bool = True,
    plots: bool = True,
    on_trial: Callable[[TrialKey, dict], None] | None = None,
) -> dict[str, Any]:
    """Run (or resume) the study of ``config``; write outputs under ``out``; return results.

    ``out=None`` keeps everything in memory (no files, no resume). ``n_jobs`` defaults to
    ``[experiment] n_jobs``. ``on_trial(key, result)`` is called after each new successful
    trial. A failed trial is recorded in ``results["failed"]`` (and in the outputs) while
    every other trial is kept; when every trial to run fails, the first error is raised.
    Raises :class:`StudyLockedError` when another study runs on ``out`` and
    :class:`StudyError` when the summary outputs cannot be written (the per-trial files
    remain, so a re-run resumes).
    """
    start = time.perf_counter()
    n_jobs = _n_jobs(n_jobs, config)
    lock = None
    if out is not None:
        try:
            Path(out).mkdir(parents=True, exist_ok=True)
            lock = StudyLock(Path(out))
            lock.acquire()
        except OSError as exc:
            raise StudyError(
                f"Cannot write in the output directory {out} ({os_error(exc)}). Choose "
                f"another --out or fix its permissions or free space."
            ) from exc
    try:
        run = StudyRun(config, out, data_dir, on_trial)
        todo = run.resume()
        run.run(todo, n_jobs, progress)
        results = run.results(len(todo), start)
        if out is not None:
            write_outputs(results, Path(out), plots=plots)
        return results
    finally:
        if lock is not None:
            lock.release()
