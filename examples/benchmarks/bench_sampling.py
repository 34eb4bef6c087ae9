"""What sampling the stacked rows of a round (LightGBM's GOSS, ``row_sampling``) buys: fit time
and true test reward of the same Booster with every row (``row_sampling="none"``, the default
before issue 39) and with ``row_sampling="auto"`` (GOSS from ``GOSS_MIN_CELLS`` designed
cells and ``GOSS_MIN_COLUMNS`` columns on; ``--sampled goss``: whatever the shape), on the same
logs, per seed, in one process; paired differences over the seeds.

The logs are ``bench_offline.py``'s: ``synthetic_multiclass`` (``--features`` columns,
``--actions`` classes) logged by ``supervised_to_bandit``, about ``--rows`` logged rows, a
labelled held-out fifth for the true reward (the argmax policy's accuracy). ``--booster``
gives the Booster's parameters as JSON (default: ``Booster()``'s own, the reward-model start
and 100 POEM rounds); one LightGBM thread unless ``--threads``.

    python examples/benchmarks/bench_sampling.py --rows 100000 --seeds 5
    python examples/benchmarks/bench_sampling.py --rows 300000 --seeds 3
    python examples/benchmarks/bench_sampling.py --rows 300000 --seeds 1 --multiclass \\
        --booster '{"objective": "bopl_s", "warm_start": "none", "n_rounds": 20,
                    "base_learner_params": {"num_leaves": 63}}'
    python examples/benchmarks/bench_sampling.py --rows 1000000 --features 20 --actions 5 \
        --seeds 2 --sampled goss --booster '{"objective": "bopl_s", "warm_start": "none",
                                             "n_rounds": 20}'

``--multiclass`` also times LightGBM's multiclass objective on the contexts with labels (K
trees per round, the Booster's rounds and ``num_leaves``, its faster histogram layout) in the
same process, issue 39's reference, and prints each fit's time over it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from opboost import Booster
from opboost.lgbm.sampling import (
    GOSS_MIN_CELLS,
    GOSS_MIN_COLUMNS,
    designed_shape,
    row_sampling_params,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))  # examples/benchmarks: not a package
from _bench_common import t_interval
from bench_offline import fit_lgb_multiclass, make_data

SAMPLINGS = ("none", "sampled")


def one_seed(args: argparse.Namespace, seed: int) -> dict[str, tuple[float, float]]:
    """{row_sampling: (fit seconds, true test reward)}."""
    args.seed = seed
    data = make_data(args)
    out = {}
    for sampling in SAMPLINGS:
        setting = args.sampled if sampling == "sampled" else sampling
        learner = {"num_threads": args.threads, "row_sampling": setting}
        params = {"random_state": seed, **args.booster}
        params["base_learner_params"] = {**params.get("base_learner_params", {}), **learner}
        start = time.perf_counter()
        booster = Booster(**params).fit(data["logged"])
        seconds = time.perf_counter() - start
        reward = float(np.mean(booster.predict(data["X_test"]) == data["y_test"]))
        out[sampling] = (seconds, reward)
        print(f"[seed {seed}] {sampling}: {seconds:.1f} s, reward {reward:.4f}", flush=True)
    if args.multiclass:
        out["multiclass"] = multiclass_seconds(args, data)
    return out


def multiclass_seconds(args: argparse.Namespace, data: dict) -> tuple[float, float]:
    """(seconds, accuracy) of LightGBM multiclass at its faster histogram layout."""
    learner = args.booster.get("base_learner_params", {})
    args.num_leaves = learner.get("num_leaves", 31)
    args.rounds = args.booster.get("n_rounds", 100)
    best = None
    for layout in ("row", "col"):
        start = time.perf_counter()
        model = fit_lgb_multiclass(data, args, layout=layout)
        seconds = time.perf_counter() - start
        if best is None or seconds < best[0]:
            accuracy = np.mean(model.predict(data["X_test"]).argmax(axis=1) == data["y_test"])
            best = (seconds, float(accuracy))
    print(f"[seed {args.seed}] multiclass: {best[0]:.1f} s, accuracy {best[1]:.4f}", flush=True)
    return best


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--features", type=int, default=50)
    parser.add_argument("--actions", type=int, default=10)
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0 .. N-1")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--booster", type=json.loads, default={})
    parser.add_argument("--multiclass", action="store_true", help="time LightGBM multiclass")
    parser.add_argument(
        "--sampled",
        choices=("auto", "goss"),
        default="auto",
        help="the row_sampling compared with 'none' (goss: sample whatever the shape)",
    )
    args = parser.parse_args(argv)
    print(f"Command: `python {' '.join(sys.argv)}`\n", flush=True)
    runs = [one_seed(args, seed) for seed in range(args.seeds)]
    seconds = {s: np.array([run[s][0] for run in runs]) for s in SAMPLINGS}
    reward = {s: np.array([run[s][1] for run in runs]) for s in SAMPLINGS}
    mean, half = t_interval(reward["sampled"] - reward["none"])
    ratios = seconds["sampled"] / seconds["none"]
    print(
        f"\n{args.rows:,} rows x {args.features} features, K = {args.actions}, "
        f"{args.seeds} seeds, {args.threads} thread(s), Booster {args.booster or '{}'}\n"
    )
    print("| row_sampling | fit s (mean) | true test reward (mean) |")
    print("|---|--:|--:|")
    for s in SAMPLINGS:
        print(f"| {s} | {seconds[s].mean():.1f} | {reward[s].mean():.4f} |")
    if args.multiclass:
        reference = np.array([run["multiclass"][0] for run in runs])
        print(
            f"\ntime / LightGBM multiclass ({reference.mean():.1f} s, same rounds and leaves): "
            + ", ".join(f"{s} {np.mean(seconds[s] / reference):.2f}" for s in SAMPLINGS)
        )
    shape = designed_shape(len(make_data(args)["logged"]), args.features, args.actions, "stacked")
    auto = row_sampling_params("auto", shape, "stacked", None)
    print(
        f"\n{args.sampled} - none, reward: {mean:+.4f} ± {half:.4f} (paired 95%); time "
        f"{args.sampled} / none per seed: {', '.join(f'{r:.2f}' for r in ratios)}; "
        f"{shape[0]:,} stacked rows x {shape[1]} columns: auto "
        f"{'samples' if auto else 'uses every row'} (GOSS_MIN_CELLS = {GOSS_MIN_CELLS:,}, "
        f"GOSS_MIN_COLUMNS = {GOSS_MIN_COLUMNS})"
    )


if __name__ == "__main__":
    main()
