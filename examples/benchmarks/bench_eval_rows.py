"""Fit time with ``eval_data`` when the evaluation rows are designed once (now) against
designing them every round (before), alternating in one process.

    python examples/benchmarks/bench_eval_rows.py [--n 20000] [--n-eval 20000] [--d 100]
        [--k 10] [--rounds 20] [--repeats 3]

Prints the median fit seconds of both and their ratio.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from opboost import Booster, LoggedBandit
from opboost.lgbm.rows import DesignedRowsCache


def logs(n: int, d: int, k: int, seed: int) -> LoggedBandit:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    actions = rng.integers(k, size=n)
    rewards = (X[np.arange(n), actions % d] > 0).astype(float)
    return LoggedBandit(X, actions, np.full(n, 1.0 / k), rewards, k)


def fit_seconds(train: LoggedBandit, valid: LoggedBandit, rounds: int, rebuild: bool) -> float:
    original = DesignedRowsCache.rows
    if rebuild:  # the old behaviour: design the evaluation rows on every round

        def every_time(self, X):
            self._rows.clear()
            return original(self, X)

        DesignedRowsCache.rows = every_time
    try:
        start = time.perf_counter()
        Booster(
            n_rounds=rounds,
            warm_start="none",
            random_state=0,
            base_learner_params={"num_threads": 1},
        ).fit(train, eval_data=valid)
        return time.perf_counter() - start
    finally:
        DesignedRowsCache.rows = original


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--n-eval", type=int, default=20000)
    parser.add_argument("--d", type=int, default=100)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    train = logs(args.n, args.d, args.k, 0)
    valid = logs(args.n_eval, args.d, args.k, 1)
    times: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(args.repeats):
        for rebuild in (True, False):
            times[rebuild].append(fit_seconds(train, valid, args.rounds, rebuild))
    old, new = statistics.median(times[True]), statistics.median(times[False])
    print(
        f"n={args.n} n_eval={args.n_eval} d={args.d} K={args.k} rounds={args.rounds}: "
        f"designed every round {old:.2f} s, designed once {new:.2f} s, ratio {new / old:.2f}"
    )


if __name__ == "__main__":
    main()
