"""Comparative studies: every algorithm x every seed on identical simulated data.

:func:`run_study` plans the trials of a config (an algorithm with a ``search`` contributes
one trial per candidate per seed), runs the missing ones -- in worker processes when
``n_jobs > 1`` -- and writes, under ``out``:

``trials/<label>__c<candidate>__s<seed>.json``
    one file per finished trial, written atomically; an interrupted study picks them up
    (a file whose fingerprint no longer matches the config is recomputed).
``results.json``
    resolved config, seeds, versions, every trial, search selections, the summary
    (mean and interval per metric per algorithm) and ``fallbacks`` (per offline algorithm, how
    many reported trials fell back to the constant action; see ``Booster(safe=True)``).
``results.csv``, ``results.md``
    one row per trial (with its ``fallback``); the summary table (with a ``fallbacks``
    column when any reported trial fell back).
``*.png``
    plots (see :func:`opboost.report.plot_study`).

Determinism: every random choice is seeded by the trial seed and each trial runs with one
thread per native library, so results do not depend on ``n_jobs`` or on resuming. Timings
live only in fields named ``timings``; :func:`comparable` drops them, and two runs of the
same study give equal ``comparable(results)``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from opboost.config import ExperimentConfig, parse_algorithm, parse_config, resolved_config
from opboost.exceptions import ConfigError

__all__ = ["TrialKey", "comparable", "plan_trials", "run_study", "versions"]

FORMAT = "opboost-study-1"


@dataclass(frozen=True)
class TrialKey:
    """One trial of a study: algorithm label, seed and search candidate (None: no search)."""

    label: str
    seed: int
    candidate: int | None = None

    @property
    def filename(self) -> str:
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", self.label).strip("_") or "algorithm"
        cand = "" if self.candidate is None else f"__c{self.candidate}"
        return f"{slug}{cand}__s{self.seed}.json"


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
    """Versions of opboost and the numerical libraries results depend on."""
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": sys.version.split()[0]}
    for name in ("opboost", "numpy", "scipy", "scikit-learn", "lightgbm", "river"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
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
    from opboost.search import apply_overrides

    overrides = algo.search.candidates()[key.candidate]
    table = apply_overrides(algo.raw, overrides)
    return parse_algorithm(table, algo.index, config.file, search=False), overrides


def _fingerprint(config: ExperimentConfig, key: TrialKey) -> str:
    """Hash of everything a trial's numbers depend on (data, simulation, algorithm, seed)."""
    resolved = resolved_config(config)
    algo = config.algorithm(key.label)
    row = resolved["algorithms"][algo.index]
    _, overrides = _overrides(config, key)
    experiment = {k: resolved["experiment"][k] for k in ("online_eval_points",)}
    spec = {
        "data": resolved["data"],
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
    from opboost.experiment import run_trial

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
    from opboost.trial_data import prepare_trial

    key = (
        json.dumps([config.data.name, config.data.params, config.simulation], sort_keys=True),
        seed,
        data_dir,
    )
    if key not in _DATA:
        _DATA.clear()  # keep one seed's data per process
        _DATA[key] = prepare_trial(config.data, config.simulation, seed, data_dir)
    return _DATA[key]


def _write_json(path: Path, obj: Any) -> None:
    """Write atomically: a killed study leaves the old file or the new one, never half."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=1, allow_nan=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _load_done(trial_dir: Path, keys: list[TrialKey], prints: dict[TrialKey, str]) -> dict:
    done = {}
    for key in keys:
        path = trial_dir / key.filename
        if not path.is_file():
            continue
        try:
            obj = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue  # unreadable (should not happen with atomic writes): recompute
        if obj.get("fingerprint") == prints[key]:
            done[key] = obj["result"]
    return done


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
    ``[experiment] n_jobs``. ``on_trial(key, result)`` is called after each new trial.
    """
    start = time.perf_counter()
    n_jobs = int(n_jobs or config.experiment["n_jobs"])
    if n_jobs < 1:
        raise ConfigError(f"n_jobs must be >= 1. Got {n_jobs}.", file=config.file)
    keys = plan_trials(config)
    prints = {key: _fingerprint(config, key) for key in keys}
    trial_dir = None
    done: dict[TrialKey, dict] = {}
    if out is not None:
        trial_dir = Path(out) / "trials"
        trial_dir.mkdir(parents=True, exist_ok=True)
        done = _load_done(trial_dir, keys, prints)
    todo = [k for k in keys if k not in done]
    raw = config.raw or _raw_from(config)

    def finish(key: TrialKey, result: dict) -> None:
        done[key] = result
        if trial_dir is not None:
            _write_json(trial_dir / key.filename, {"fingerprint": prints[key], "result": result})
        if on_trial is not None:
            on_trial(key, result)

    bar = _progress(len(keys), len(keys) - len(todo), progress)
    try:
        if n_jobs == 1 or len(todo) <= 1:
            for key in todo:
                bar.set_postfix_str(f"{key.label} seed {key.seed}", refresh=False)
                finish(key, _run_key(raw, config.file, key, data_dir))
                bar.update()
        else:
            with ProcessPoolExecutor(
                max_workers=min(n_jobs, len(todo)), mp_context=get_context("spawn")
            ) as pool:
                futures = {
                    pool.submit(_run_key, raw, config.file, key, data_dir): key for key in todo
                }
                for future in as_completed(futures):
                    key = futures[future]
                    finish(key, future.result())
                    bar.set_postfix_str(f"{key.label} seed {key.seed}", refresh=False)
                    bar.update()
    finally:
        bar.close()
    results = assemble(config, keys, done)
    results["timings"] = {
        "study_seconds": time.perf_counter() - start,
        "trials_run": len(todo),
        "trials_resumed": len(keys) - len(todo),
    }
    if out is not None:
        write_outputs(results, Path(out), plots=plots)
    return results


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


def assemble(config: ExperimentConfig, keys: list[TrialKey], done: dict) -> dict[str, Any]:
    """results.json's content (without timings) from finished trials, in plan order."""
    from opboost.report import fallback_counts, summarise
    from opboost.search import select_candidate

    trials = [done[k] for k in keys]
    metric = "valid_reward" if config.experiment["selection"] == "true" else "valid_snips"
    reported: dict[str, list[dict]] = {}
    search: dict[str, Any] = {}
    for algo in config.algorithms:
        mine = [t for t in trials if t["label"] == algo.label]
        if algo.search is None:
            reported[algo.label] = mine
            continue
        scores: dict[int, list[float]] = {}
        for t in mine:
            value = t["metrics"].get(metric)
            scores.setdefault(t["candidate"], [])
            if value is not None:
                scores[t["candidate"]].append(value)
        chosen = select_candidate(scores)
        reported[algo.label] = [t for t in mine if t["candidate"] == chosen]
        search[algo.label] = {
            "metric": metric,
            "selected": chosen,
            "selected_overrides": reported[algo.label][0]["overrides"],
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
        "versions": versions(),
        "families": {a.label: a.family for a in config.algorithms},
        "summary": {label: summarise(ts, confidence) for label, ts in reported.items()},
        "fallbacks": fallback_counts(reported, {a.label: a.family for a in config.algorithms}),
        "search": search,
        "trials": trials,
    }


def reported_trials(results: dict[str, Any]) -> dict[str, list[dict]]:
    """{label: trials reported for it} (the selected candidate of a search)."""
    out: dict[str, list[dict]] = {}
    for t in results["trials"]:
        chosen = results["search"].get(t["label"], {}).get("selected")
        if t["candidate"] == chosen:
            out.setdefault(t["label"], []).append(t)
    return out


def write_outputs(results: dict[str, Any], out: Path, *, plots: bool = True) -> list[Path]:
    """Write results.json, results.csv, results.md and the plots under ``out``."""
    from opboost.report import csv_table, markdown_table, plot_study

    out.mkdir(parents=True, exist_ok=True)
    _write_json(out / "results.json", results)
    reported = reported_trials(results)
    selected = {(label, ts[0]["candidate"]) for label, ts in reported.items()}
    (out / "results.csv").write_text(csv_table(results["trials"], selected), encoding="utf-8")
    seconds = {
        label: sum(t["timings"].get("total_seconds", 0.0) for t in ts) / len(ts)
        for label, ts in reported.items()
    }
    confidence = results["config"]["experiment"]["confidence"]
    table = markdown_table(
        results["summary"],
        results["families"],
        seconds,
        confidence,
        fallbacks=results.get("fallbacks"),
        n_trials={label: len(ts) for label, ts in reported.items()},
    )
    header = f"# Study: {results['config_file']}\n\nData set: {results['config']['data']['name']}"
    header += f"; seeds: {results['seeds']}.\n\n"
    (out / "results.md").write_text(header + table, encoding="utf-8")
    written = [out / "results.json", out / "results.csv", out / "results.md"]
    if plots:
        written += plot_study(reported, results["families"], out)
    return written
