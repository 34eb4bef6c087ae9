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
    plots (see :func:`opboost.compose.plots.plot_study`).
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

import contextlib
import errno
import hashlib
import json
import math
import os
import re
import signal
import socket
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from opboost.api.exceptions import ConfigError, OpboostError, OpboostWarning
from opboost.api.files import json_safe, write_atomic
from opboost.compose.config import ExperimentConfig, parse_algorithm, parse_config, resolved_config

try:  # POSIX: the study lock is an flock, released by the kernel when its owner dies
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

__all__ = [
    "LOCK_NAME",
    "StudyError",
    "StudyInterrupted",
    "StudyLockedError",
    "TrialKey",
    "comparable",
    "label_slug",
    "plan_trials",
    "plugins",
    "run_study",
    "stored_timings",
    "study_plan",
    "trial_filenames",
    "versions",
    "write_partial_outputs",
]

FORMAT = "opboost-study-1"
#: The lock file a running study keeps in its ``out`` directory.
LOCK_NAME = ".opboost-study.lock"


class StudyError(OpboostError):
    """A study could not write its outputs (its finished trials are kept)."""


class StudyLockedError(StudyError):
    """Another study is running on the same output directory."""


class StudyInterrupted(SystemExit):
    """The study received SIGTERM: its worker processes were terminated (exit status 143)."""

    def __init__(self) -> None:
        super().__init__(128 + signal.SIGTERM)


@dataclass(frozen=True)
class TrialKey:
    """One trial of a study: algorithm label, seed and search candidate (None: no search)."""

    label: str
    seed: int
    candidate: int | None = None

    @property
    def filename(self) -> str:
        """``<label slug>[__c<candidate>]__s<seed>.json`` (see :func:`label_slug`)."""
        return self.filename_with(label_slug(self.label))

    def filename_with(self, slug: str) -> str:
        cand = "" if self.candidate is None else f"__c{self.candidate}"
        return f"{slug}{cand}__s{self.seed}.json"


#: A label used as it is in file names: letters, digits, '.', '-' and single inner '_'.
_PLAIN_LABEL = re.compile(r"[A-Za-z0-9.-]+(?:_[A-Za-z0-9.-]+)*")


def label_slug(label: str, *, hashed: bool = False) -> str:
    """The file-name form of an algorithm label, unique per label.

    A plain label (letters, digits, ``.``, ``-`` and single inner ``_``, at most 64
    characters) is used as it is. Any other label -- or any label when ``hashed`` -- becomes
    ``<slug>~<hash>``: its characters outside that set replaced by ``_`` (at most 48 kept) and
    ``~`` plus 10 hex digits of the SHA-256 of the exact label, so that labels which slugify
    alike (``"BOPL (fast)"``, ``"BOPL [fast]"``) never share a file. ``~`` never occurs in a
    plain label, so a hashed name cannot collide with a plain one either.
    """
    if not hashed and len(label) <= 64 and _PLAIN_LABEL.fullmatch(label):
        return label
    slug = re.sub(r"[^A-Za-z0-9.-]+", "_", label).strip("_")[:48].strip("_") or "algorithm"
    return f"{slug}~{hashlib.sha256(label.encode('utf-8')).hexdigest()[:10]}"


def trial_filenames(keys: list[TrialKey]) -> dict[TrialKey, str]:
    """{key: its trial file name}; distinct for distinct keys, even on file systems that
    ignore case (plain labels equal but for case are hashed, see :func:`label_slug`)."""
    labels = list(dict.fromkeys(k.label for k in keys))
    folded: dict[str, list[str]] = {}
    for label in labels:
        folded.setdefault(label_slug(label).casefold(), []).append(label)
    slugs = {
        label: label_slug(label, hashed=len(folded[label_slug(label).casefold()]) > 1)
        for label in labels
    }
    return {k: k.filename_with(slugs[k.label]) for k in keys}


def plan_trials(config: ExperimentConfig) -> list[TrialKey]:
    """Every trial of the study, seed-major (all algorithms of seed 1, then seed 2, ...)."""
    keys = []
    for seed in config.experiment["seeds"]:
        for algo in config.algorithms:
            if algo.search is None:
                keys.append(TrialKey(algo.label, seed))
            else:
                n = len(algo.search.candidates())
                keys.extend(TrialKey(algo.label, seed, i) for i in range(n))
    return keys


def versions() -> dict[str, str]:
    """Versions of Python, opboost, the numerical libraries results depend on and every
    installed opboost plugin (``"plugin <distribution>"``)."""
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": sys.version.split()[0]}
    for name in ("opboost", "numpy", "scipy", "scikit-learn", "lightgbm", "river"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    try:
        from opboost.registry import get_registry

        for info in get_registry().plugins:
            if not info.builtin:
                out[f"plugin {info.distribution}"] = info.version
    except OpboostError:  # pragma: no cover - a broken plugin already failed the config
        pass
    return out


def comparable(results: Any) -> Any:
    """``results`` without any ``timings`` entry (for comparing two runs of a study)."""
    if isinstance(results, dict):
        return {k: comparable(v) for k, v in results.items() if k != "timings"}
    if isinstance(results, list):
        return [comparable(v) for v in results]
    return results


# --- running a trial (also in worker processes) ----------------------------------------------


def _overrides(config: ExperimentConfig, key: TrialKey) -> tuple[Any, dict[str, Any]]:
    algo = config.algorithm(key.label)
    if key.candidate is None:
        return algo, {}
    from opboost.compose.search import apply_overrides

    overrides = algo.search.candidates()[key.candidate]
    table = apply_overrides(algo.raw, overrides)
    return parse_algorithm(table, algo.index, config.file, search=False), overrides


def _fingerprint(config: ExperimentConfig, key: TrialKey, data_digest: str = "") -> str:
    """Hash of everything a trial's numbers depend on: the data set's spec and contents
    (``data_digest``, see :func:`opboost.compose.trial_data.data_hash`), simulation, algorithm,
    seed."""
    resolved = resolved_config(config)
    algo = config.algorithm(key.label)
    row = resolved["algorithms"][algo.index]
    _, overrides = _overrides(config, key)
    experiment = {k: resolved["experiment"][k] for k in ("online_eval_points",)}
    spec = {
        "data": resolved["data"],
        "data_hash": data_digest,
        "simulation": resolved["simulation"],
        "experiment": experiment,
        "algorithm": row,
        "overrides": overrides,
        "seed": key.seed,
        "candidate": key.candidate,
    }
    return hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()


_CONFIGS: dict[str, ExperimentConfig] = {}


def _run_key(raw: dict, file: str, key: TrialKey, data_dir: str | None) -> dict[str, Any]:
    """Run one trial (in this or a worker process); return its JSON-ready dict."""
    from opboost.compose.experiment import run_trial

    cache_key = json.dumps([raw, file], sort_keys=True, default=str)
    config = _CONFIGS.get(cache_key)
    if config is None:
        config = _CONFIGS[cache_key] = parse_config(raw, file=file)
    algo, overrides = _overrides(config, key)
    data = _prepare_cached(config, key.seed, data_dir)
    result = run_trial(config, algo, data, candidate=key.candidate, overrides=overrides)
    return result.to_dict()


_DATA: dict[tuple, Any] = {}


def _prepare_cached(config: ExperimentConfig, seed: int, data_dir: str | None) -> Any:
    from opboost.compose.trial_data import prepare_trial

    key = (
        json.dumps([config.data.name, config.data.params, config.simulation], sort_keys=True),
        seed,
        data_dir,
    )
    if key not in _DATA:
        _DATA.clear()  # keep one seed's data per process
        _DATA[key] = prepare_trial(config.data, config.simulation, seed, data_dir)
    return _DATA[key]


def _write_text(path: Path, text: str) -> None:
    """Write atomically: a unique temporary file in the same directory, fsynced, then
    ``os.replace``d; a killed writer leaves the old file or the new one, never half, and
    concurrent writers never share a temporary file."""
    _atomic_write(path, text)


def _atomic_write(path: Path, text: str) -> None:
    """:func:`_write_text`'s implementation (the best-effort partial outputs use it directly,
    so they never count among the study's checked writes)."""
    write_atomic(path, text)


def _write_json(path: Path, obj: Any, write: Callable[[Path, str], None] | None = None) -> None:
    notes: list[dict[str, str]] = []
    clean = json_safe(obj, "", notes)
    if notes and isinstance(clean, dict):
        clean["non_finite"] = [
            *clean.get("non_finite", []),
            *(dict(n, written_as="null") for n in notes),
        ]
    (write or _write_text)(path, json.dumps(clean, indent=1, allow_nan=False) + "\n")


_RESULT_FIELDS = (
    "label",
    "family",
    "seed",
    "candidate",
    "overrides",
    "metrics",
    "curves",
    "info",
    "timings",
    "fallback",
)
#: The reason given for stored trial files that are not a complete trial record.
MALFORMED = "the stored file is not a complete trial record"


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _record_problem(obj: Any, key: TrialKey) -> str | None:
    """What is wrong with a stored trial file's JSON ``obj`` for ``key``, or None when it has
    the shape the study writes (values the fingerprint cannot vouch for are checked too)."""
    if not isinstance(obj, dict):
        return f"not a JSON object but {type(obj).__name__}"
    missing = [k for k in ("fingerprint", "result") if k not in obj]
    if missing:
        return "no " + " and no ".join(repr(k) for k in missing)
    if not isinstance(obj["fingerprint"], str):
        return "'fingerprint' is not a string"
    if not isinstance(obj.get("data_hash", ""), str | None):
        return "'data_hash' is not a string"
    stored_versions = obj.get("versions", {})
    if not isinstance(stored_versions, dict | None) or not all(
        isinstance(v, str) for v in (stored_versions or {}).values()
    ):
        return "'versions' is not an object of strings"
    result = obj["result"]
    if not isinstance(result, dict):
        return "'result' is not a JSON object"
    missing = [k for k in _RESULT_FIELDS if k not in result]
    if missing:
        return "'result' lacks " + ", ".join(repr(k) for k in missing)
    extra = sorted(set(result) - set(_RESULT_FIELDS))
    if extra:
        return "'result' has unexpected " + ", ".join(repr(k) for k in extra)
    if result["label"] != key.label or not isinstance(result["family"], str):
        return "'result' is not this trial's (label or family)"
    for name, want in (("seed", key.seed), ("candidate", key.candidate)):
        value = result[name]
        if isinstance(value, bool) or value != want or type(value) is not type(want):
            return f"'result' is not this trial's ({name} {value!r}, expected {want!r})"
    for name in ("overrides", "metrics", "curves", "info", "timings"):
        if not isinstance(result[name], dict):
            return f"'result.{name}' is not a JSON object"
    if not all(v is None or _number(v) for v in result["metrics"].values()):
        return "'result.metrics' has a value that is not a number"
    if not all(_number(v) for v in result["timings"].values()):
        return "'result.timings' has a value that is not a number"
    for name, curve in result["curves"].items():
        if not isinstance(curve, list) or not all(v is None or _number(v) for v in curve):
            return f"'result.curves.{name}' is not a list of numbers"
    if not isinstance(result["fallback"], str | None):
        return "'result.fallback' is not a string"
    return None


def _load_done(
    trial_dir: Path,
    keys: list[TrialKey],
    prints: dict[TrialKey, str],
    digest: str,
    current: dict[str, str],
    names: dict[TrialKey, str] | None = None,
) -> tuple[dict[TrialKey, dict], dict[str, list[str]]]:
    """Stored trials still valid, and {reason: [file, ...]} of stored trials to re-run.

    A file that is not valid JSON, or valid JSON of another shape than a trial record, is
    listed under :data:`MALFORMED` as ``"<file> (<what is wrong>)"``: its trial is re-run.
    """
    names = names or trial_filenames(keys)
    done: dict[TrialKey, dict] = {}
    stale: dict[str, list[str]] = {}
    for key in keys:
        path = trial_dir / names[key]
        if not path.is_file():
            continue
        try:
            obj = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError) as exc:
            what = "not readable" if isinstance(exc, OSError) else "not valid JSON"
            stale.setdefault(MALFORMED, []).append(f"{path.name} ({what})")
            continue
        problem = _record_problem(obj, key)
        if problem is not None:
            stale.setdefault(MALFORMED, []).append(f"{path.name} ({problem})")
            continue
        stored_print, result = obj["fingerprint"], obj["result"]
        old_digest = obj.get("data_hash")
        if old_digest is not None and old_digest != digest:
            reason = (
                f"the data set's contents changed (data hash {old_digest[:12]} -> {digest[:12]})"
            )
        elif stored_print != prints[key]:
            reason = "the config, the data set or its contents changed"
        else:
            old = obj.get("versions") or {}
            changed = [
                f"{name} {old.get(name, '?')} -> {current.get(name, '?')}"
                for name in sorted(set(old) | set(current))
                if old.get(name) != current.get(name)
            ]
            if not changed:
                done[key] = result
                continue
            reason = "library versions changed (" + ", ".join(changed) + ")"
        stale.setdefault(reason, []).append(path.name)
    return done, stale


def stored_timings(trial_dir: Path) -> dict[str, list[float]]:
    """{label: [total seconds of each stored trial]} from the trial files in ``trial_dir``
    (any stored trial, reusable or not: a timing is only an estimate)."""
    out: dict[str, list[float]] = {}
    if not trial_dir.is_dir():
        return out
    for path in sorted(trial_dir.glob("*.json")):
        try:
            result = json.loads(path.read_text(encoding="utf-8"))["result"]
            seconds = result["timings"]["total_seconds"]
            label = result["label"]
        except (OSError, ValueError, RecursionError, KeyError, TypeError):
            continue
        if _number(seconds) and math.isfinite(seconds) and isinstance(label, str):
            out.setdefault(label, []).append(float(seconds))
    return out


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
    n_jobs = int(n_jobs or config.experiment["n_jobs"])
    done: dict[TrialKey, dict] = {}
    stale: dict[str, list[str]] = {}
    timings: dict[str, list[float]] = {}
    trial_dir = None if out is None else Path(out) / "trials"
    if trial_dir is not None and trial_dir.is_dir() and any(trial_dir.glob("*.json")):
        from opboost.compose.trial_data import clear_dataset_cache, data_hash, load_dataset

        clear_dataset_cache()
        digest = data_hash(load_dataset(config.data, data_dir))
        prints = {key: _fingerprint(config, key, digest) for key in keys}
        done, stale = _load_done(trial_dir, keys, prints, digest, versions())
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


# --- the output directory's lock ------------------------------------------------------------


def _pid_alive(pid: int) -> bool:
    if os.name == "nt":  # pragma: no cover - no cheap check: assume it runs
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:  # pragma: no cover
        return True
    return True


class _StudyLock:
    """``out/.opboost-study.lock``: held (flock on POSIX) while a study runs; holds the
    owner's pid, host and start time for the error message of a refused second study."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.path = out / LOCK_NAME
        self.fd: int | None = None

    def _owner(self) -> dict[str, Any]:
        try:
            return json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}

    def _refuse(self, owner: dict[str, Any]) -> StudyLockedError:
        pid, host = owner.get("pid", "unknown"), owner.get("host", "unknown host")
        since = owner.get("started", "an unknown time")
        return StudyLockedError(
            f"{self.out} is in use by another opboost study (pid {pid} on {host}, started "
            f"{since}). Wait for it to finish or choose another --out. If that process is no "
            f"longer running, delete {self.path} and re-run."
        )

    def acquire(self) -> None:
        host = socket.gethostname()
        me = {
            "pid": os.getpid(),
            "host": host,
            "started": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        }
        while True:
            if fcntl is None:  # pragma: no cover - Windows: exclusive creation + pid check
                try:
                    fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
                except FileExistsError:
                    owner = self._owner()
                    if owner.get("host") == host and not _pid_alive(int(owner.get("pid", -1))):
                        self._take_over(owner)
                        self.path.unlink(missing_ok=True)
                        continue
                    raise self._refuse(self._owner()) from None
                self._own(fd, me)
                return
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                        raise
                    raise self._refuse(self._owner()) from None
                try:
                    same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
                except FileNotFoundError:
                    same = False
                if not same:  # the previous owner removed the file meanwhile: retry
                    os.close(fd)
                    continue
                owner = self._owner()
                if owner:  # nobody holds the lock: its owner died without releasing it
                    self._take_over(owner)
                self._own(fd, me)
                return
            except BaseException:
                if self.fd is None:
                    with contextlib.suppress(OSError):
                        os.close(fd)
                raise

    def _take_over(self, owner: dict[str, Any]) -> None:
        warnings.warn(
            f"{self.path}: taking over the stale lock of a study that is no longer running "
            f"(pid {owner.get('pid', 'unknown')} on {owner.get('host', 'unknown host')}, "
            f"started {owner.get('started', 'at an unknown time')}); its finished trials are "
            f"resumed.",
            OpboostWarning,
            stacklevel=4,
        )

    def _own(self, fd: int, me: dict[str, Any]) -> None:
        self.fd = fd
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, (json.dumps(me) + "\n").encode())
        os.fsync(fd)

    def release(self) -> None:
        if self.fd is None:
            return
        try:  # while still locked: see the inode check
            with contextlib.suppress(OSError):  # read-only --out: the next study takes it over
                self.path.unlink(missing_ok=True)
        finally:
            os.close(self.fd)
            self.fd = None


# --- worker processes: they die with the study ------------------------------------------------


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


def _install_sigterm() -> Callable[[], None]:
    """SIGTERM raises :class:`StudyInterrupted` in the study (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    try:
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    except (ValueError, OSError):  # pragma: no cover
        return lambda: None
    return lambda: signal.signal(signal.SIGTERM, previous)


def _failure(config: ExperimentConfig, key: TrialKey, exc: BaseException) -> dict[str, Any]:
    """The results entry of a trial that raised ``exc``."""
    lines = traceback.format_exception(exc)
    text = "".join(lines).rstrip().splitlines()
    algo = config.algorithm(key.label)
    try:
        overrides = _overrides(config, key)[1]
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


# --- the study -----------------------------------------------------------------------------


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
    n_jobs = int(n_jobs or config.experiment["n_jobs"])
    if n_jobs < 1:
        raise ConfigError(f"n_jobs must be >= 1. Got {n_jobs}.", file=config.file)
    lock = None
    if out is not None:
        try:
            Path(out).mkdir(parents=True, exist_ok=True)
            lock = _StudyLock(Path(out))
            lock.acquire()
        except OSError as exc:
            raise StudyError(
                f"Cannot write in the output directory {out} ({_os_error(exc)}). Choose "
                f"another --out or fix its permissions or free space."
            ) from exc
    try:
        return _run_study(config, out, n_jobs, data_dir, progress, plots, on_trial, start)
    finally:
        if lock is not None:
            lock.release()


def _run_study(
    config: ExperimentConfig,
    out: str | os.PathLike | None,
    n_jobs: int,
    data_dir: str | None,
    progress: bool,
    plots: bool,
    on_trial: Callable[[TrialKey, dict], None] | None,
    start: float,
) -> dict[str, Any]:
    from opboost.compose.trial_data import clear_dataset_cache, data_hash, load_dataset

    clear_dataset_cache()  # read the data set afresh: its contents are part of the fingerprint
    _DATA.clear()
    digest = data_hash(load_dataset(config.data, data_dir))
    current = versions()
    keys = plan_trials(config)
    names = trial_filenames(keys)
    prints = {key: _fingerprint(config, key, digest) for key in keys}
    trial_dir = None
    done: dict[TrialKey, dict] = {}
    stale: dict[str, list[str]] = {}
    if out is not None:
        trial_dir = Path(out) / "trials"
        try:
            trial_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StudyError(
                f"Cannot create the trial directory {trial_dir} ({_os_error(exc)})."
            ) from exc
        _remove_leftover_temporaries(Path(out), trial_dir)
        done, stale = _load_done(trial_dir, keys, prints, digest, current, names)
        for reason, files in stale.items():
            shown = ", ".join(files[:10]) + (
                f" and {len(files) - 10} more" if len(files) > 10 else ""
            )
            print(
                f"opboost study: re-running {len(files)} stored trial(s) of {trial_dir} "
                f"because {reason}: {shown}.",
                file=sys.stderr,
            )
    todo = [k for k in keys if k not in done]
    raw = config.raw or _raw_from(config)
    failed: dict[TrialKey, dict] = {}
    errors: list[BaseException] = []
    plugin_list = plugins()
    last_partial = {"at": -math.inf, "cost": 0.0}

    def partial() -> None:
        """Rewrite results.json and results.md from the trials finished so far. A rewrite
        that took over 50 ms (a huge study) is not repeated until ten times as long has
        passed, so it costs at most ~10% of the study's time."""
        if out is None:
            return
        now = time.perf_counter()
        cost = last_partial["cost"]
        if cost > 0.05 and now - last_partial["at"] < 10 * cost:
            return
        finished = [k for k in keys if k in done or k in failed]
        try:
            results = assemble(
                config, finished, done, failed, library_versions=current, plugin_list=plugin_list
            )
            results["partial"] = {"finished": len(finished), "planned": len(keys)}
            write_partial_outputs(results, Path(out))
        except Exception:  # best effort: the final outputs report any problem
            pass
        last_partial["at"] = time.perf_counter()
        last_partial["cost"] = last_partial["at"] - now

    def finish(key: TrialKey, result: dict) -> None:
        if trial_dir is not None:
            record = {
                "fingerprint": prints[key],
                "data_hash": digest,
                "versions": current,
                "result": result,
            }
            path = trial_dir / names[key]
            try:
                _write_json(path, record)
            except OSError as exc:  # read-only, disk full, ...: stop, keep what is stored
                kept = sum(1 for k in done if (trial_dir / names[k]).is_file())
                raise StudyError(
                    f"Writing the trial file {path} failed ({_os_error(exc)}). The {kept} "
                    f"finished trials stored before it are kept in {trial_dir}; fix the cause "
                    f"(permissions, free space) and re-run the same study to resume from them."
                ) from exc
        done[key] = result
        partial()
        if on_trial is not None:
            on_trial(key, result)

    def fail(key: TrialKey, exc: BaseException) -> None:
        failed[key] = _failure(config, key, exc)
        errors.append(exc)
        print(
            f"opboost study: trial {key.label} seed {key.seed}"
            + ("" if key.candidate is None else f" candidate {key.candidate}")
            + f" failed: {failed[key]['error']}",
            file=sys.stderr,
        )
        partial()

    bar = _progress(len(keys), len(keys) - len(todo), progress)
    restore = _install_sigterm()
    try:
        if n_jobs == 1 or len(todo) <= 1:
            for key in todo:
                bar.set_postfix_str(f"{key.label} seed {key.seed}", refresh=False)
                try:
                    result = _run_key(raw, config.file, key, data_dir)
                except Exception as exc:  # recorded, the study goes on
                    fail(key, exc)
                else:
                    finish(key, result)
                bar.update()
        else:
            _run_parallel(raw, config.file, todo, n_jobs, data_dir, finish, fail, bar)
    except StudyInterrupted:
        where = "" if trial_dir is None else f"; the finished trials are kept in {trial_dir}"
        print(f"opboost study: terminated (SIGTERM){where}.", file=sys.stderr)
        raise
    finally:
        restore()
        bar.close()
    if errors and not done:
        raise errors[0]  # no trial at all succeeded: most likely the data or the config
    try:
        results = assemble(
            config, keys, done, failed, library_versions=current, plugin_list=plugin_list
        )
    except Exception as exc:
        where = "" if trial_dir is None else f" The {len(done)} finished trials are kept in "
        where += "" if trial_dir is None else f"{trial_dir}; fix the cause and re-run to resume."
        raise StudyError(
            f"Summarising the study's trials failed ({type(exc).__name__}: {exc}).{where}"
        ) from exc
    results["timings"] = {
        "study_seconds": time.perf_counter() - start,
        "trials_run": len(todo),
        "trials_resumed": len(keys) - len(todo),
        "trials_failed": len(failed),
        "trials_stale": sum(len(v) for v in stale.values()),
        "stale_reasons": sorted(stale),
    }
    if out is not None:
        write_outputs(results, Path(out), plots=plots)
    return results


def _run_parallel(
    raw: dict,
    file: str,
    todo: list[TrialKey],
    n_jobs: int,
    data_dir: str | None,
    finish: Callable[[TrialKey, dict], None],
    fail: Callable[[TrialKey, BaseException], None],
    bar: Any,
) -> None:
    """Run ``todo`` in spawned worker processes that die with this process."""
    pool = ProcessPoolExecutor(
        max_workers=min(n_jobs, len(todo)),
        mp_context=get_context("spawn"),
        initializer=_worker_init,
        initargs=(os.getpid(),),
    )
    clean = False
    try:
        futures = {pool.submit(_run_key, raw, file, key, data_dir): key for key in todo}
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


_TEMPORARY = re.compile(r"\..+\.(?:json|csv|md)\.[^.]+\.tmp")


def _remove_leftover_temporaries(*folders: Path) -> None:
    """Delete the temporary files of :func:`_write_text` that a killed study left behind
    (only called while holding the lock: no other study is writing them)."""
    for folder in folders:
        for path in folder.glob(".*.tmp"):
            if _TEMPORARY.fullmatch(path.name):
                with contextlib.suppress(OSError):
                    path.unlink()


def _os_error(exc: OSError) -> str:
    """``exc`` for a message: its cause and the file it concerns."""
    text = exc.strerror or str(exc) or type(exc).__name__
    if exc.filename is not None:
        text += f": {exc.filename}"
    return f"{type(exc).__name__}: {text}"


def _raw_from(config: ExperimentConfig) -> dict[str, Any]:
    return resolved_config(config)


def _progress(total: int, initial: int, enabled: bool) -> Any:
    from tqdm.auto import tqdm

    return tqdm(
        total=total,
        initial=initial,
        desc="trials",
        unit="trial",
        # None: tqdm turns itself off when stderr is not a terminal (logs, CI, pipes)
        disable=None if enabled else True,
        file=sys.stderr,
        dynamic_ncols=True,
    )


def plugins() -> list[dict[str, Any]]:
    """Every registered plugin: ``name``, ``distribution``, ``version`` and ``builtin``
    (results.json's ``plugins``)."""
    try:
        from opboost.registry import get_registry

        return [
            {
                "name": info.name,
                "distribution": info.distribution,
                "version": info.version,
                "builtin": bool(info.builtin),
            }
            for info in get_registry().plugins
        ]
    except OpboostError:  # pragma: no cover - a broken plugin already failed the config
        return []


def assemble(
    config: ExperimentConfig,
    keys: list[TrialKey],
    done: dict,
    failed: dict | None = None,
    *,
    library_versions: dict[str, str] | None = None,
    plugin_list: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """results.json's content (without timings) from finished trials, in plan order.

    ``failed`` ({key: failure entry}) are listed among the trials and in ``failed``; the
    summary and the search use the successful trials only.
    """
    from opboost.compose.report import fallback_counts, summarise
    from opboost.compose.search import select_candidate

    failed = failed or {}
    trials = [done[k] if k in done else failed[k] for k in keys]
    ok = [t for t in trials if not t.get("failed")]
    metric = "valid_reward" if config.experiment["selection"] == "true" else "valid_snips"
    reported: dict[str, list[dict]] = {}
    search: dict[str, Any] = {}
    for algo in config.algorithms:
        mine = [t for t in ok if t["label"] == algo.label]
        if algo.search is None:
            reported[algo.label] = mine
            continue
        scores: dict[int, list[float]] = {}
        for t in mine:
            value = t["metrics"].get(metric)
            scores.setdefault(t["candidate"], [])
            if value is not None:
                scores[t["candidate"]].append(value)
        chosen = select_candidate(scores) if scores else None
        reported[algo.label] = [t for t in mine if t["candidate"] == chosen]
        search[algo.label] = {
            "metric": metric,
            "selected": chosen,
            "selected_overrides": reported[algo.label][0]["overrides"] if mine else None,
            "candidates": [
                {
                    "candidate": i,
                    "overrides": next(t["overrides"] for t in mine if t["candidate"] == i),
                    "mean_validation": (sum(v) / len(v)) if v else None,
                }
                for i, v in sorted(scores.items())
            ],
        }
    confidence = config.experiment["confidence"]
    return {
        "format": FORMAT,
        "config_file": str(config.file),
        "config": resolved_config(config),
        "seeds": list(config.experiment["seeds"]),
        "versions": versions() if library_versions is None else library_versions,
        "plugins": plugins() if plugin_list is None else plugin_list,
        "families": {a.label: a.family for a in config.algorithms},
        "summary": {label: summarise(ts, confidence) for label, ts in reported.items()},
        "fallbacks": fallback_counts(reported, {a.label: a.family for a in config.algorithms}),
        "search": search,
        "trials": trials,
        "failed": [
            {k: failed[key][k] for k in ("label", "seed", "candidate", "error")}
            for key in keys
            if key in failed
        ],
    }


def reported_trials(results: dict[str, Any]) -> dict[str, list[dict]]:
    """{label: successful trials reported for it} (the selected candidate of a search)."""
    out: dict[str, list[dict]] = {}
    for t in results["trials"]:
        if t.get("failed"):
            continue
        chosen = results["search"].get(t["label"], {}).get("selected")
        if t["candidate"] == chosen:
            out.setdefault(t["label"], []).append(t)
    return out


def write_outputs(results: dict[str, Any], out: Path, *, plots: bool = True) -> list[Path]:
    """Write results.json, results.csv, results.md and the plots under ``out``.

    Each output is written atomically and independently; when any fails, the others are
    still written and :class:`StudyError` names every output that failed and why (the
    per-trial files under ``out/trials`` are never touched here).
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    reported = reported_trials(results)
    written: list[Path] = []
    problems: list[str] = []

    def attempt(what: str, write: Callable[[], list[Path]]) -> None:
        try:
            written.extend(write())
        except Exception as exc:  # reported together below
            problems.append(f"{what}: {type(exc).__name__}: {exc}")

    def json_out() -> list[Path]:
        _write_json(out / "results.json", results)
        return [out / "results.json"]

    def csv_out() -> list[Path]:
        from opboost.compose.report import csv_table

        selected = {(label, ts[0]["candidate"]) for label, ts in reported.items() if ts}
        _write_text(out / "results.csv", csv_table(results["trials"], selected))
        return [out / "results.csv"]

    def md_out() -> list[Path]:
        _write_text(out / "results.md", _markdown(results, reported))
        return [out / "results.md"]

    def plots_out() -> list[Path]:
        from opboost.compose.plots import plot_study

        shown = {label: ts for label, ts in reported.items() if ts}
        families = {k: v for k, v in results["families"].items() if k in shown}
        return plot_study(shown, families, out)

    attempt("results.json", json_out)
    attempt("results.csv", csv_out)
    attempt("results.md", md_out)
    if plots:
        attempt("the plots (*.png)", plots_out)
    if problems:
        n = sum(1 for t in results["trials"] if not t.get("failed"))
        raise StudyError(
            f"Writing the study's outputs in {out} failed: " + "; ".join(problems) + ". "
            f"The {n} finished trials are kept in {out / 'trials'}; fix the cause and re-run "
            f"the same study to resume from them (only the outputs are rewritten)."
        )
    return written


def write_partial_outputs(results: dict[str, Any], out: Path) -> list[Path]:
    """Write results.json and results.md of an unfinished study (``results["partial"]``:
    finished and planned trial counts), atomically; called after every finished trial, so an
    interrupted study leaves a partial table. The final :func:`write_outputs` replaces them."""
    out = Path(out)
    _write_json(out / "results.json", results, _atomic_write)
    _atomic_write(out / "results.md", _markdown(results, reported_trials(results)))
    return [out / "results.json", out / "results.md"]


def _markdown(results: dict[str, Any], reported: dict[str, list[dict]]) -> str:
    from opboost.compose.report import failed_trials_markdown, markdown_table

    seconds = {
        label: sum(t["timings"].get("total_seconds", 0.0) for t in ts) / len(ts)
        for label, ts in reported.items()
        if ts
    }
    failed_counts: dict[str, int] = {}
    for t in results["trials"]:
        if t.get("failed"):
            failed_counts[t["label"]] = failed_counts.get(t["label"], 0) + 1
    confidence = results["config"]["experiment"]["confidence"]
    table = markdown_table(
        results["summary"],
        results["families"],
        seconds,
        confidence,
        fallbacks=results.get("fallbacks"),
        n_trials={label: len(ts) for label, ts in reported.items()},
        failed=failed_counts,
    )
    header = f"# Study: {results['config_file']}\n\nData set: {results['config']['data']['name']}"
    header += f"; seeds: {results['seeds']}.\n\n"
    if results.get("partial"):
        done, planned = results["partial"]["finished"], results["partial"]["planned"]
        header += (
            f"**Partial results: {done} of {planned} trials finished** (the study is running "
            f"or was interrupted; re-run the same command to resume).\n\n"
        )
    failures = [t for t in results["trials"] if t.get("failed")]
    return header + table + (failed_trials_markdown(failures) if failures else "")
