"""Does the default Booster ever lose to trivial policies? True test reward with 95% intervals.

Per data set and seed: a stratified 70/30 train/test split, supervised-to-bandit logging on the
train rows (London et al., appendix F), then the TRUE expected reward on the labelled test rows
of

* ``logging``          the logging policy (stochastic);
* ``constant``         the best constant action, chosen on the logs by SNIPS;
* ``default``          ``Booster()`` (its defaults: POEM from the reward-model start, IPS, LightGBM
                       trees, 100 rounds), argmax policy;
* ``select_safe``      ``Booster(validation_fraction=0.2, safe=True)``: the number of rounds
                       chosen by SNIPS on 20% held-out logs, then a refit on all logs
                       (``refit=True``, the default); falls back to the best constant action
                       when the lower 95% bound does not beat it;
* ``select_no_refit``  the same with ``refit=False`` (the selection fit's ensemble);
* ``warm_logging``     ``Booster(warm_start="logging")``: boosting starts from the logger.

Mean and Student-t 95% interval over seeds; for the selecting methods the number of
fallbacks and the mean selected round are printed too. Multilabel data sets are split without
stratification. Real data sets (car, nursery, dna, ...) are read from ``--data-dir``.

    python examples/benchmarks/bench_defaults.py --seeds 5
    python examples/benchmarks/bench_defaults.py --datasets car nursery \\
        --data-dir "$OPBOOST_DATA" --seeds 3
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from opboost import Booster
from opboost.api.serving.tie_order import constant_action_values
from opboost.core.registry import get_registry

sys.path.insert(0, str(Path(__file__).resolve().parent))  # examples/benchmarks: not a package
from _bench_common import simulate_trial, summary

METHODS = ("logging", "constant", "default", "select_safe", "select_no_refit", "warm_logging")
#: Booster settings of each learned method (on top of n_rounds, one thread, random_state=0).
SETTINGS = {
    "default": {},
    "select_safe": {"validation_fraction": 0.2, "safe": True},
    "select_no_refit": {"validation_fraction": 0.2, "safe": True, "refit": False},
    "warm_logging": {"warm_start": "logging"},
}


def one_seed(
    data, seed: int, n_rounds: int, methods=METHODS, max_rows: int | None = None
) -> dict[str, float]:
    """True test rewards of every method for one seed; plus the fallback indicator.

    ``max_rows`` first draws a seeded subsample of that many rows (stratified when the
    labels are single-label), for the largest data sets.
    """
    trial = simulate_trial(data, seed, max_rows)
    logged, X_test, reward = trial.logged, trial.X_test, trial.value
    best = int(np.nanargmax(constant_action_values(logged)))
    out = {
        "logging": reward(trial.logging_policy.predict_proba(X_test)),
        "constant": reward(np.full(X_test.shape[0], best)),
    }
    common = {"n_rounds": n_rounds, "base_learner_params": {"num_threads": 1}, "random_state": 0}
    for method in methods:
        if method not in SETTINGS:
            continue
        booster = Booster(**common, **SETTINGS[method]).fit(logged)
        out[method] = reward(booster.predict(X_test))
        if getattr(booster, "best_round_", None) is not None:
            out[f"{method}_round"] = float(booster.best_round_)
            out[f"{method}_fallback"] = float(booster.fallback_ is not None)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["digits", "wine", "synthetic_multiclass"])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--n-rounds", type=int, default=100)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument(
        "--max-rows", type=int, default=None, help="seeded subsample of larger data sets"
    )
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--json", default=None, help="write the per-seed results here")
    args = parser.parse_args(argv)
    registry, results, methods = get_registry(), {}, args.methods
    selecting = [m for m in methods if "validation_fraction" in SETTINGS.get(m, {})]
    extra = [f"{m} fallbacks / mean round" for m in selecting]
    print("| data set | " + " | ".join(methods + extra) + " |")
    print("|---" * (len(methods) + len(extra) + 1) + "|")
    for name in args.datasets:
        start = time.perf_counter()
        data = registry.get("dataset", name)().load(args.data_dir)
        runs = [
            one_seed(data, seed, args.n_rounds, methods, args.max_rows)
            for seed in range(args.seeds)
        ]
        results[name] = runs
        cells = [summary([r[m] for r in runs]) for m in methods]
        for m in selecting:
            fallbacks = int(sum(r[f"{m}_fallback"] for r in runs))
            cells.append(
                f"{fallbacks}/{len(runs)} / {np.mean([r[f'{m}_round'] for r in runs]):.1f}"
            )
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
        print(f"  ({name}: {time.perf_counter() - start:.0f} s)", file=sys.stderr, flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
