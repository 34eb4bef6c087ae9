"""The README's main job: simulated logs from a bundled data set, six policies, one table.

``opboost quickstart`` runs the packaged config ``opboost/compose/configs/quickstart.toml``
(a copy of ``examples/quickstart.toml``) as an in-memory study: for each seed a stratified
train/test split, the supervised-to-bandit conversion of the training rows, then the logging policy,
the uniform policy, a reward regression baseline, BOPL, BOPL-S and the label-free choice
(``PolicyChoice``), each scored by its TRUE expected reward on the test rows (argmax actions
for learned policies). It prints the mean and a 95% interval over seeds.
"""

from __future__ import annotations

import os
import time
import tomllib
from collections.abc import Callable
from importlib import resources
from typing import Any

from opboost.compose.config.experiment import ExperimentConfig, parse_config

__all__ = ["QUICKSTART_CONFIG", "quickstart_config", "quickstart_defaults", "run_quickstart"]

#: The packaged config, relative to the opboost.compose package.
QUICKSTART_CONFIG = "configs/quickstart.toml"


def _packaged_raw() -> dict[str, Any]:
    text = (
        resources.files("opboost.compose").joinpath(QUICKSTART_CONFIG).read_text(encoding="utf-8")
    )
    return tomllib.loads(text)


def quickstart_defaults() -> dict[str, Any]:
    """The defaults of ``opboost quickstart``'s options, read from the packaged config:
    ``dataset``, ``n_seeds``, ``n_rounds`` (the boosters' rounds, distinct values in order)
    and ``n_jobs`` (its ``[experiment] n_jobs``; at run time at most the number of CPUs)."""
    raw = _packaged_raw()
    rounds = [
        a["booster"]["n_rounds"] for a in raw["algorithms"] if "n_rounds" in a.get("booster", {})
    ]
    return {
        "dataset": raw["data"]["name"],
        "n_seeds": len(raw["experiment"]["seeds"]),
        "n_rounds": list(dict.fromkeys(rounds)),
        "n_jobs": raw["experiment"].get("n_jobs", 1),
    }


def quickstart_config(
    dataset: str | None = None,
    n_seeds: int | None = None,
    n_rounds: int | None = None,
    n_jobs: int | None = None,
) -> ExperimentConfig:
    """The packaged quickstart config, with the command line's overrides applied (``n_jobs``
    defaults to the config's, at most the number of CPUs)."""
    raw: dict[str, Any] = _packaged_raw()
    if dataset is not None:
        raw["data"] = {"name": dataset}
    if n_seeds is not None:
        raw["experiment"]["seeds"] = list(range(n_seeds))
    default_jobs = raw["experiment"].get("n_jobs", 1)
    cpus = max(1, min(default_jobs, os.cpu_count() or 1))
    raw["experiment"]["n_jobs"] = cpus if n_jobs is None else n_jobs
    if n_rounds is not None:
        for algo in raw["algorithms"]:
            if "booster" in algo:
                algo["booster"]["n_rounds"] = n_rounds
    return parse_config(raw, file=f"opboost/compose/{QUICKSTART_CONFIG} (packaged)")


def run_quickstart(
    dataset: str | None = None,
    n_seeds: int | None = None,
    n_rounds: int | None = None,
    data_dir: str | None = None,
    n_jobs: int | None = None,
    echo: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run the quickstart study in memory, print its table; return the study results."""
    from opboost.compose.study.report import text_table
    from opboost.compose.study.runner import run_study
    from opboost.compose.trial.trial_data import load_dataset

    config = quickstart_config(dataset, n_seeds, n_rounds, n_jobs)
    data = load_dataset(config.data, data_dir)
    seeds = config.experiment["seeds"]
    echo(
        f"opboost quickstart: {data.name} ({len(data)} rows, {data.X.shape[1]} features, "
        f"{data.n_actions} actions), {len(seeds)} simulated logs, "
        f"{config.experiment['n_jobs']} parallel trials"
    )
    start = time.perf_counter()
    results = run_study(config, None, data_dir=data_dir, plots=False)
    echo("")
    echo(text_table(results["summary"], "test_reward").rstrip())
    echo(
        f"\ntrue test reward of argmax policies (logging policy: stochastic); "
        f"{len(seeds)} seeds in {time.perf_counter() - start:.1f} s"
    )
    return results
