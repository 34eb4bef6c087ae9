"""What the default's reward-model start costs: fit time of ``Booster()`` over
``Booster(warm_start="none")`` (London et al.'s F_0 = 0; ``objective="auto"`` is then BOPL-S, so
this is the default before issue 18) on the same logs, in one process.

Per data set, the logs of ``bench_peers.py``'s protocol (seed ``--seed``, at most ``--max-rows``
rows); the two fits alternate ``--repeats`` times (``--threads`` LightGBM threads each; "auto",
the default, is ``Booster()``'s own; 0 is every core) and the table gives
their median wall seconds, the ratio of the medians, the reward model the start chose
(``Booster.reward_start_["family"]``) and both policies' true test reward. Issue 18 allows the
default at most 2.5x the start from F_0 = 0. Real data sets are read from ``--data-dir`` (default
``$OPBOOST_DATA``) and skipped when missing; the load average is printed with the table, since
these are wall-clock times on a shared machine.

    python examples/benchmarks/bench_start_cost.py --datasets digits wine
    python examples/benchmarks/bench_start_cost.py --data-dir "$OPBOOST_DATA" --repeats 5
    python examples/benchmarks/bench_start_cost.py --data-dir "$OPBOOST_DATA" --threads 1
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

from opboost import Booster

sys.path.insert(0, str(Path(__file__).resolve().parent))  # examples/benchmarks: not a package
from bench_peers import DATASETS, load


def timed_fits(trial, repeats: int, threads: int | str) -> dict:
    """Median seconds of each start over ``repeats`` alternating fits, and what they give."""
    seconds: dict[str, list[float]] = {"none": [], "auto": []}
    out = {}
    for _ in range(repeats):
        for start in seconds:
            booster = Booster(
                warm_start=start,
                random_state=trial.seed,
                base_learner_params={"num_threads": threads},
            )
            began = time.perf_counter()
            booster.fit(trial.logged)
            seconds[start].append(time.perf_counter() - began)
            out[start] = booster
    family = out["auto"].reward_start_["family"] if hasattr(out["auto"], "reward_start_") else "–"
    return {
        "none": float(np.median(seconds["none"])),
        "auto": float(np.median(seconds["auto"])),
        "family": family,
        "reward": {k: trial.value(b.predict(trial.X_test)) for k, b in out.items()},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-rows", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--threads",
        type=lambda v: v if v == "auto" else int(v),
        default="auto",
        help='LightGBM threads ("auto": the default\'s own; 0: all cores)',
    )
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args(argv)
    print(f"Command: `python {' '.join(sys.argv)}`\n")
    print(
        '| data set | Booster() s | warm_start="none" s | ratio | family | reward (default, none) |'
    )
    print("|---|--:|--:|--:|---|---|")
    ratios = []
    for name in args.datasets:
        source = load(name, args.data_dir, args.max_rows)
        if isinstance(source, str):
            print(f"| {name} | skipped: {source} | | | | |")
            continue
        row = timed_fits(source.trial(args.seed), args.repeats, args.threads)
        ratio = row["auto"] / row["none"]
        ratios.append(ratio)
        reward = f"{row['reward']['auto']:.4f}, {row['reward']['none']:.4f}"
        print(f"| {name} | {row['auto']:.3f} | {row['none']:.3f} | {ratio:.2f}× | "
              f"{row['family']} | {reward} |", flush=True)  # fmt: skip
    if ratios:
        print(
            f"\nMedian ratio {np.median(ratios):.2f}×, largest {max(ratios):.2f}×; "
            f"load average at the end {os.getloadavg()[0]:.2f}."
        )


if __name__ == "__main__":
    main()
