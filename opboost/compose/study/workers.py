"""Running a study's trials: in this process, or in worker processes that die with the study
(SIGTERM terminates the pool; a worker exits when its parent dies, even by SIGKILL). A trial
that raises becomes a failure entry of the results."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from typing import Any

from opboost.api.files.atomic import json_safe
from opboost.compose.config.experiment import ExperimentConfig
from opboost.compose.config.specs import LogsSpec
from opboost.compose.study.errors import StudyInterrupted
from opboost.compose.trial.plan import ResolvedTrial, TrialKey, trial_overrides

__all__ = [
    "clear_trial_data",
    "failure_entry",
    "install_sigterm",
    "run_resolved_trial",
    "run_trials",
]


def run_resolved_trial(trial: ResolvedTrial) -> dict[str, Any]:
    """Run one trial resolved by the study (in this or a worker process); return its
    JSON-ready dict. The config is not read again: ``trial`` holds all the trial needs."""
    from opboost.compose.trial.run import run_resolved

    return run_resolved(trial, _prepare_cached(trial)).to_dict()


_DATA: dict[tuple, Any] = {}


def _prepare_cached(trial: ResolvedTrial) -> Any:
    """The trial data of ``trial``'s seed, kept for the next trial of the same seed."""
    from opboost.compose.trial.trial_data import prepare_trial

    data = trial.data
    spec = (
        [data.file_path, data.resolved()]
        if isinstance(data, LogsSpec)
        else [data.name, data.params]
    )
    key = (
        json.dumps([spec, trial.simulation], sort_keys=True),
        trial.key.seed,
        trial.data_dir,
    )
    if key not in _DATA:
        _DATA.clear()  # keep one seed's data per process
        _DATA[key] = prepare_trial(data, trial.simulation, trial.key.seed, trial.data_dir)
    return _DATA[key]


def clear_trial_data() -> None:
    """Forget the trial data prepared in this process (a new study prepares it afresh)."""
    _DATA.clear()


def _worker_init(parent: int) -> None:
    """Initializer of the study's worker processes: exit when the parent process dies."""
    if sys.platform.startswith("linux"):
        try:  # the kernel kills this worker when the thread that spawned it dies
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):  # pragma: no cover
            pass
    if os.getppid() != parent:  # the parent died before the death signal was armed
        os._exit(1)
    threading.Thread(
        target=_watch_parent, args=(parent,), daemon=True, name="opboost-parent-watch"
    ).start()


def _watch_parent(parent: int) -> None:  # pragma: no cover - runs in worker processes
    while True:
        time.sleep(0.25)
        if os.getppid() != parent:  # re-parented: the study process is gone
            os._exit(1)


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Terminate the pool's workers now (running trials are abandoned) and shut it down."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for proc in processes:
        with contextlib.suppress(OSError, ValueError):  # already gone
            proc.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in processes:
        try:
            proc.join(5)
            if proc.is_alive():  # pragma: no cover
                proc.kill()
                proc.join(1)
        except (OSError, ValueError, AssertionError):  # pragma: no cover
            pass


def _on_sigterm(signum: int, frame: Any) -> None:
    raise StudyInterrupted()


def install_sigterm() -> Callable[[], None]:
    """SIGTERM raises :class:`StudyInterrupted` in the study (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    try:
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    except (ValueError, OSError):  # pragma: no cover
        return lambda: None
    return lambda: signal.signal(signal.SIGTERM, previous)


def failure_entry(config: ExperimentConfig, key: TrialKey, exc: BaseException) -> dict[str, Any]:
    """The results entry of a trial that raised ``exc``."""
    lines = traceback.format_exception(exc)
    text = "".join(lines).rstrip().splitlines()
    algo = config.algorithm(key.label)
    try:
        overrides = trial_overrides(config, key)[1]
    except Exception:  # the failure may be in the overrides themselves
        overrides = {}
    return {
        "label": key.label,
        "family": algo.family,
        "seed": key.seed,
        "candidate": key.candidate,
        "overrides": json_safe(overrides),
        "metrics": {},
        "curves": {},
        "info": {},
        "timings": {},
        "fallback": None,
        "failed": True,
        "error": f"{type(exc).__name__}: {exc}",
        "traceback": "\n".join(text[-25:]),
    }


def run_trials(
    todo: list[TrialKey],
    resolve: Callable[[TrialKey], ResolvedTrial],
    n_jobs: int,
    finish: Callable[[TrialKey, dict], None],
    fail: Callable[[TrialKey, BaseException], None],
    bar: Any,
) -> None:
    """Run ``todo``, each trial resolved here by ``resolve(key)`` and run by
    :func:`run_resolved_trial`: ``finish(key, result)`` after each successful trial,
    ``fail(key, exc)`` after each failed one (also when resolving it failed); with
    ``n_jobs > 1`` (and more than one trial) in spawned worker processes that die with this
    process."""
    if n_jobs == 1 or len(todo) <= 1:
        for key in todo:
            bar.set_postfix_str(f"{key.label} seed {key.seed}", refresh=False)
            try:
                result = run_resolved_trial(resolve(key))
            except Exception as exc:  # recorded, the study goes on
                fail(key, exc)
            else:
                finish(key, result)
            bar.update()
        return
    pool = ProcessPoolExecutor(
        max_workers=min(n_jobs, len(todo)),
        mp_context=get_context("spawn"),
        initializer=_worker_init,
        initargs=(os.getpid(),),
    )
    clean = False
    try:
        futures = {}
        for key in todo:
            try:
                trial = resolve(key)
            except Exception as exc:  # recorded, the study goes on
                fail(key, exc)
                bar.update()
            else:
                futures[pool.submit(run_resolved_trial, trial)] = key
        for future in as_completed(futures):
            key = futures[future]
            exc = future.exception()
            if exc is None:
                finish(key, future.result())
            else:
                fail(key, exc)
            bar.set_postfix_str(f"{key.label} seed {key.seed}", refresh=False)
            bar.update()
        clean = True
    finally:
        if clean:
            pool.shutdown(wait=True)
        else:  # interrupted or a trial file could not be written: do not wait for trials
            _stop_pool(pool)
