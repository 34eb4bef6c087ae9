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
from opboost.compose.config.experiment import ExperimentConfig, parse_config
from opboost.compose.study.errors import StudyInterrupted
from opboost.compose.trial.plan import TrialKey, trial_overrides

__all__ = [
    "clear_trial_data",
    "failure_entry",
    "install_sigterm",
    "run_trial_key",
    "run_trials",
]

_CONFIGS: dict[str, ExperimentConfig] = {}


def run_trial_key(raw: dict, file: str, key: TrialKey, data_dir: str | None) -> dict[str, Any]:
    """Run one trial (in this or a worker process); return its JSON-ready dict."""
    from opboost.compose.trial.run import run_trial

    cache_key = json.dumps([raw, file], sort_keys=True, default=str)
    config = _CONFIGS.get(cache_key)
    if config is None:
        config = _CONFIGS[cache_key] = parse_config(raw, file=file)
    algo, overrides = trial_overrides(config, key)
    data = _prepare_cached(config, key.seed, data_dir)
    result = run_trial(config, algo, data, candidate=key.candidate, overrides=overrides)
    return result.to_dict()


_DATA: dict[tuple, Any] = {}


def _prepare_cached(config: ExperimentConfig, seed: int, data_dir: str | None) -> Any:
    from opboost.compose.trial.trial_data import prepare_trial

    data = config.data
    spec = [data.file_path, data.resolved()] if config.on_logs else [data.name, data.params]
    key = (
        json.dumps([spec, config.simulation], sort_keys=True),
        seed,
        data_dir,
    )
    if key not in _DATA:
        _DATA.clear()  # keep one seed's data per process
        _DATA[key] = prepare_trial(config.data, config.simulation, seed, data_dir)
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
    raw: dict,
    file: str,
    todo: list[TrialKey],
    n_jobs: int,
    data_dir: str | None,
    finish: Callable[[TrialKey, dict], None],
    fail: Callable[[TrialKey, BaseException], None],
    bar: Any,
) -> None:
    """Run ``todo``: ``finish(key, result)`` after each successful trial, ``fail(key, exc)``
    after each failed one; with ``n_jobs > 1`` (and more than one trial) in spawned worker
    processes that die with this process."""
    if n_jobs == 1 or len(todo) <= 1:
        for key in todo:
            bar.set_postfix_str(f"{key.label} seed {key.seed}", refresh=False)
            try:
                result = run_trial_key(raw, file, key, data_dir)
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
        futures = {pool.submit(run_trial_key, raw, file, key, data_dir): key for key in todo}
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
