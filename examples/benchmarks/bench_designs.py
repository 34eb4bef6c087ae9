"""One stacked tree a round or one tree per action on large logs: ``Booster()`` (the stacked
design, its reward-model start) against the same Booster with ``action_design="per_action"``
(``per_action``: from F_0 = 0, its "auto" start; ``per_action_start``: from the stacked reward
model, ``warm_start="reward_model"``) and against ``PolicyChoice`` between the stacked and
the per-action Booster, true test reward paired over seeds, fit seconds (``--methods``).

Logs: ``synthetic_multiclass`` as ``bench_offline.py`` makes them (``--rows`` logged rows, 50
features, K = 10) and the simulated worlds of ``_bench_shapes.SYNTHETIC`` (``smooth``,
``one_best``, ``multilabel_skewed``) at ``--rows`` rows, of which 63% are logged. One LightGBM
thread per fit; ``--per-action-sampling goss`` grows the per-action trees on LightGBM's sample
(``row_sampling="auto"`` keeps them on every row). Measured in
docs/benchmarks/performance.md ("K trees a round on the n contexts").

    python examples/benchmarks/bench_designs.py --worlds synthetic_multiclass --rows 100000 \
        --per-action-sampling goss
    python examples/benchmarks/bench_designs.py --worlds smooth one_best --rows 300000
    python examples/benchmarks/bench_designs.py --worlds smooth one_best --rows 300000 \
        --methods per_action_start
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import opboost
from opboost import Booster

sys.path.insert(0, str(Path(__file__).resolve().parent))  # examples/benchmarks: not a package
from _bench_common import t_interval
from _bench_shapes import SYNTHETIC
from bench_offline import make_data

ONE_THREAD = {"num_threads": 1}
METHODS = ("default", "per_action", "per_action_start", "policy_choice")


def logs_of(world: str, rows: int, seed: int) -> tuple[Any, Any, Callable[[np.ndarray], float]]:
    """(logged bandit, test contexts, true value of test actions) of one seeded world."""
    if world == "synthetic_multiclass":
        data = make_data(argparse.Namespace(rows=rows, features=50, actions=10, seed=seed))
        labels = data["y_test"]
        return data["logged"], data["X_test"], lambda a: float(np.mean(a == labels))
    trial = SYNTHETIC[world].trial(seed, n=rows)
    return trial.logged, trial.X_test, trial.value


def fit_method(method: str, logged: Any, seed: int, sampling: str) -> tuple[Any, str]:
    """The fitted policy learner of ``method`` and what it chose ("" when it chooses nothing);
    ``sampling`` is the per-action trees' ``row_sampling``."""
    per_action = {**ONE_THREAD, "action_design": "per_action", "row_sampling": sampling}
    if method == "default":
        return Booster(random_state=seed, base_learner_params=ONE_THREAD).fit(logged), ""
    if method == "per_action":
        return Booster(random_state=seed, base_learner_params=per_action).fit(logged), ""
    if method == "per_action_start":
        start = Booster(
            random_state=seed, warm_start="reward_model", base_learner_params=per_action
        )
        return start.fit(logged), ""
    designs = {
        "stacked": Booster(random_state=seed, base_learner_params=ONE_THREAD),
        "per_action": Booster(random_state=seed, base_learner_params=per_action),
    }
    choice = opboost.PolicyChoice(candidates=designs, random_state=seed).fit(logged)
    return choice, choice.chosen_


def run_world(world: str, rows: int, seeds: int, sampling: str, methods: list[str]) -> None:
    """Print each seed's rewards and seconds, then each of ``methods`` against the default."""
    methods = ["default", *[m for m in methods if m != "default"]]
    reward = {m: np.zeros(seeds) for m in methods}
    seconds = {m: np.zeros(seeds) for m in methods}
    for seed in range(seeds):
        logged, X_test, value = logs_of(world, rows, seed)
        parts = []
        for method in methods:
            start = time.perf_counter()
            fitted, chosen = fit_method(method, logged, seed, sampling)
            seconds[method][seed] = time.perf_counter() - start
            reward[method][seed] = value(fitted.predict(X_test))
            kept = f" kept {chosen}" if chosen else ""
            parts.append(
                f"{method} {reward[method][seed]:.4f}{kept} ({seconds[method][seed]:.1f} s)"
            )
        print(f"[{world} seed {seed}, {len(logged):,} logged] " + ", ".join(parts), flush=True)
    print(
        f"\n{world}, {seeds} seeds: method - default, true test reward (paired 95%); time / default"
    )
    for method in methods[1:]:
        mean, half = t_interval(reward[method] - reward["default"])
        ratio = seconds[method] / seconds["default"]
        print(f"  {method}: {mean:+.4f} ± {half:.4f}; time {ratio.min():.2f}-{ratio.max():.2f}")
    print(flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--worlds",
        nargs="+",
        default=["synthetic_multiclass", "smooth", "one_best"],
        choices=["synthetic_multiclass", *SYNTHETIC],
    )
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0 .. N-1")
    parser.add_argument("--per-action-sampling", choices=("auto", "none", "goss"), default="auto")
    parser.add_argument(
        "--methods",
        nargs="+",
        choices=METHODS[1:],
        default=["per_action", "policy_choice"],
        help="methods run beside the default, Booster()",
    )
    args = parser.parse_args(argv)
    print(f"Command: `python {' '.join(sys.argv)}`\n", flush=True)
    for world in args.worlds:
        run_world(world, args.rows, args.seeds, args.per_action_sampling, args.methods)


if __name__ == "__main__":
    main()
