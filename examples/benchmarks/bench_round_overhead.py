"""The Booster's own work per round, without a base learner's cost.

Run from the repository root::

    python examples/benchmarks/bench_round_overhead.py [--rows 100000 --actions 7 --rounds 60]

A base learner that returns the same fixed f every round, after reading a 64 MB buffer so
the caches are as cold as after LightGBM grows a tree, drives ``Booster(objective="bopl_s")``.
The time of the fit minus the time of the same cache flushes alone, per round, is the
Booster's overhead: softmax, gradient norm, base problem, step, risk and policy value.
Prints the per-round milliseconds of each repeat and their minimum. Compare with
``OPENBLAS_NUM_THREADS=1`` to see whether BLAS threads cost anything
(docs/benchmarks/performance.md).
"""

from __future__ import annotations

import argparse
import contextlib
import time
from typing import Any

import numpy as np

from opboost import Booster
from opboost.api.data.logged import LoggedBandit
from opboost.api.learner import BaseLearner, BaseProblem
from opboost.api.learner_toolkit import wls_terms

CACHE_FLUSH = np.ones(8_000_000)  # 64 MB, more than the machine's last-level cache


class FixedLearner(BaseLearner):
    """Returns the same seeded (n, K) f every round; validates the problem as a learner must."""

    name = "fixed_f"
    reduction = "regression"

    def __init__(self, seed: int = 1) -> None:
        self.seed = seed

    def prepare(self, contexts: Any, n_actions: int, *, random_state=None, init_scores=None):
        rng = np.random.default_rng(self.seed)
        self.f_ = 0.1 * rng.normal(size=(np.shape(contexts)[0], n_actions))

    def fit_round(self, problem: BaseProblem) -> np.ndarray:
        CACHE_FLUSH.sum()
        wls_terms(type(self).__name__, problem, self.f_.shape)
        return self.f_.copy()

    def commit_round(self, alpha: float) -> None:
        pass

    def ensemble(self):
        raise NotImplementedError("fixed_f keeps no model")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--actions", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    n, K = args.rows, args.actions
    data = LoggedBandit(
        rng.normal(size=(n, 5)), rng.integers(0, K, n), np.full(n, 1 / K), rng.random(n), K
    )
    per_round = []
    for _ in range(args.repeats):
        booster = Booster(
            objective="bopl_s", base_learner=FixedLearner(), n_rounds=args.rounds, reward_shift=-0.5
        )
        start = time.perf_counter()
        # NotImplementedError comes from the policy at the end of the fit; the rounds have run.
        with contextlib.suppress(NotImplementedError):
            booster.fit(data)
        fit = time.perf_counter() - start
        start = time.perf_counter()
        for _ in range(args.rounds):
            CACHE_FLUSH.sum()
        flushes = time.perf_counter() - start
        per_round.append((fit - flushes) / args.rounds * 1e3)
    print(f"rows={n} actions={K} rounds={args.rounds}")
    print("Booster overhead, ms per round:", " ".join(f"{x:.2f}" for x in per_round))
    print(f"minimum: {min(per_round):.2f} ms per round")


if __name__ == "__main__":
    main()
