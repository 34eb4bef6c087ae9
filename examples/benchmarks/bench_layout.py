"""Fit time of LightGBM's two histogram layouts and of the timed choice (issue 24, item 1).

    python examples/benchmarks/bench_layout.py --data-dir "$OPBOOST_DATA" [--n 20000]
        [--rounds 30] [--threads 1] [--repeats 3]

Fashion-MNIST contexts (784 pixels, K = 10, uniform logging, reward 1 for the label), so the
stacked design has n*10 rows and about 160,000 histogram bins: the bin-count rule alone
(``histogram_layout``) picks column-wise there. Each repeat fits ``Booster(warm_start="none")``
three times in one process, in a rotating order: forced column-wise, forced row-wise, and the
default (the layout timed on the fit's own Dataset, ``opboost.lgbm.layout``).
Prints the median seconds of each, their ratios to column-wise, and the layout the default
chose. All three grow the same trees.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from opboost import Booster, LoggedBandit
from opboost.algorithms.learners.lightgbm_tree import LightGBMTree
from opboost.simulation.datasets import resolve_data_dir
from opboost.simulation.datasets.fashion_mnist import FashionMNIST

CASES = {
    "column-wise": {"force_col_wise": True},
    "row-wise": {"force_row_wise": True},
    "timed (default)": None,
}


def logs(n: int, data_dir: str | None, seed: int = 0) -> LoggedBandit:
    data = FashionMNIST().load(resolve_data_dir(data_dir))
    rng = np.random.default_rng(seed)
    rows = rng.choice(len(data.y), size=n, replace=False)
    X, y = np.asarray(data.X[rows], dtype=np.float64), np.asarray(data.y[rows])
    actions = rng.integers(10, size=n)
    return LoggedBandit(X, actions, np.full(n, 0.1), (actions == y).astype(float), 10)


def fit(data: LoggedBandit, rounds: int, threads: int, params: dict | None) -> float:
    learner = {"num_threads": threads, **({"params": params} if params else {})}
    start = time.perf_counter()
    booster = Booster(
        n_rounds=rounds, warm_start="none", random_state=0, base_learner_params=learner
    ).fit(data)
    assert booster.n_rounds_ == rounds
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    data = logs(args.n, args.data_dir)
    times: dict[str, list[float]] = {name: [] for name in CASES}
    names = list(CASES)
    for repeat in range(args.repeats):
        for name in names[repeat % 3 :] + names[: repeat % 3]:
            times[name].append(fit(data, args.rounds, args.threads, CASES[name]))
    probe = LightGBMTree(num_threads=args.threads)
    probe.prepare(data.contexts, 10, random_state=0)
    base = statistics.median(times["column-wise"])
    print(
        f"fashion_mnist n={args.n} (stacked rows {args.n * 10}), rounds={args.rounds}, "
        f"threads={args.threads}, repeats={args.repeats}; the timed choice here: "
        f"{probe.histogram_layout_}"
    )
    for name, values in times.items():
        median = statistics.median(values)
        runs = ", ".join(f"{v:.2f}" for v in values)
        ratio = median / base
        print(f"  {name:16s} median {median:7.2f} s  ({runs})  ratio to column-wise {ratio:.2f}")


if __name__ == "__main__":
    main()
