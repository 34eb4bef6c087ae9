"""Chen, Lin & Lu (2014) Table 2 protocol, plus throughput of chen_bandit_boost.

Progressive error (%) over random orderings of Car, DNA, Nursery and Connect-4, with 100
weak learners, gamma = 0.1 and the best delta of a small grid (chosen by mean error, as
the paper reports the best delta), printed beside the paper's numbers. Then throughput on
Nursery: one example at a time, every update applied before the next prediction.
Both the error of the played (explored) actions and of the greedy predictions H_t(x_t)
before exploration are printed, each at its own best delta: the paper's figures match the
greedy error (its Connect-4/NB 34.2 is the majority-class error, which no learner that
explores 10% of the time can reach on played actions). Weak learners use their defaults:
the perceptron reads the eq. 4 weights as Poisson multiplicities (``weighting="poisson"``),
Gaussian naive Bayes as weighted statistics.

    python examples/benchmarks/bench_chen.py --data-dir "$OPBOOST_DATA" --orderings 3
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

from opboost.online import Banditron, ChenBanditBoost, ConservativeOVA
from opboost.simulation import run_bandit
from opboost.simulation.datasets.uci_classification import DNA, Car, Connect4, Nursery

PAPER = {  # Table 2 of Chen et al. (2014): error rate (%)
    "perceptron": {"car": 26.9, "dna": 18.6, "nursery": 16.0, "connect4": 30.8},
    "gaussian_nb": {"car": 25.1, "dna": 25.1, "nursery": 28.9, "connect4": 34.2},
    "banditron": {"car": 29.4, "dna": 26.8, "nursery": 28.8, "connect4": 39.8},
    "c_ova": {"car": 22.8, "dna": 13.5, "nursery": 17.9, "connect4": 28.1},
}
LOADERS = {"car": Car, "dna": DNA, "nursery": Nursery, "connect4": Connect4}


def errors(make, data, orderings: int) -> tuple[np.ndarray, np.ndarray]:
    """Progressive error rates (%) of fresh learners over seeded orderings: of the played
    (explored) actions and of the greedy predictions H_t(x_t) before exploration."""
    runs = [run_bandit(make(seed), data.X, data.y, random_state=seed) for seed in range(orderings)]
    played = np.array([100 * r.error_rate for r in runs])
    greedy = np.array([100 * (r.greedy_error_rate or np.nan) for r in runs])
    return played, greedy


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.environ.get("OPBOOST_DATA"))
    parser.add_argument("--orderings", type=int, default=10)
    parser.add_argument("--deltas", default="0.01,0.03,0.1")
    parser.add_argument("--datasets", default="car,dna,nursery,connect4")
    parser.add_argument("--weak-learners", default="perceptron,gaussian_nb")
    parser.add_argument("--baselines", action="store_true", help="also Banditron and C-OVA")
    parser.add_argument("--json", help="write all numbers to this file")
    args = parser.parse_args(argv)
    if args.data_dir is None:
        parser.error("pass --data-dir or set OPBOOST_DATA")
    deltas = [float(d) for d in args.deltas.split(",")]
    out: dict = {"table2": {}, "throughput": {}, "args": vars(args)}
    print(
        f"{'data':9} {'learner':12} {'best delta':>10} {'played %':>13} "
        f"{'best delta':>10} {'greedy %':>13} {'paper %':>8}"
    )
    for name in args.datasets.split(","):
        data = LOADERS[name]().load(args.data_dir)
        K = data.n_actions
        for wl in args.weak_learners.split(","):
            by_delta = {
                d: errors(
                    lambda s, d=d, wl=wl, K=K: ChenBanditBoost(
                        n_actions=K,
                        n_learners=100,
                        gamma=0.1,
                        delta=d,
                        weak_learner=wl,
                        random_state=s,
                    ),
                    data,
                    args.orderings,
                )
                for d in deltas
            }
            best = min(by_delta, key=lambda d: by_delta[d][0].mean())
            best_g = min(by_delta, key=lambda d: by_delta[d][1].mean())
            err, greedy = by_delta[best][0], by_delta[best_g][1]
            out["table2"][f"{name}/{wl}"] = {
                "best_delta": best,
                "mean": err.mean(),
                "std": err.std(),
                "by_delta": {d: e[0].mean() for d, e in by_delta.items()},
                "best_delta_greedy": best_g,
                "greedy_mean": greedy.mean(),
                "greedy_std": greedy.std(),
                "greedy_by_delta": {d: e[1].mean() for d, e in by_delta.items()},
                "paper": PAPER[wl][name],
            }
            print(
                f"{name:9} {wl:12} {best:10.3g} {err.mean():6.1f} ± {err.std():4.1f} "
                f"{best_g:10.3g} {greedy.mean():6.1f} ± {greedy.std():4.1f} "
                f"{PAPER[wl][name]:8.1f}",
                flush=True,
            )
        if args.baselines:
            by_gamma = {
                g: errors(
                    lambda s, g=g, K=K: Banditron(n_actions=K, gamma=g, random_state=s),
                    data,
                    args.orderings,
                )
                for g in deltas
            }
            best = min(by_gamma, key=lambda g: by_gamma[g][0].mean())
            err = by_gamma[best][0]
            print(
                f"{name:9} {'banditron':12} {best:10.3g} {err.mean():6.1f} ± "
                f"{err.std():4.1f} {PAPER['banditron'][name]:8.1f}",
                flush=True,
            )
            out["table2"][f"{name}/banditron"] = {"best_gamma": best, "mean": err.mean()}
            err = errors(
                lambda s, K=K: ConservativeOVA(n_actions=K, random_state=s), data, args.orderings
            )[0]
            print(
                f"{name:9} {'c_ova (PA)':12} {'-':>10} {err.mean():6.1f} ± "
                f"{err.std():4.1f} {PAPER['c_ova'][name]:8.1f}",
                flush=True,
            )
            out["table2"][f"{name}/c_ova"] = {"mean": err.mean()}

    # --- throughput: 100 vectorised perceptrons on Nursery, one example at a time ---------
    data = Nursery().load(args.data_dir)
    rates = [
        run_bandit(
            ChenBanditBoost(n_actions=5, n_learners=100, delta=0.03, random_state=s),
            data.X,
            data.y,
            random_state=s,
        ).examples_per_second
        for s in range(3)
    ]
    out["throughput"]["numpy_perceptron_100"] = max(rates)
    print(
        f"\nthroughput, nursery, 100 numpy perceptrons: {max(rates):,.0f} examples/s "
        f"(best of 3 runs of {len(data):,} examples)"
    )
    sub = slice(0, 300)
    for spec in ("river:linear_model.Perceptron", "river:naive_bayes.GaussianNB"):
        river = run_bandit(
            ChenBanditBoost(
                n_actions=5, n_learners=100, delta=0.03, weak_learner=spec, random_state=0
            ),
            data.X[sub],
            data.y[sub],
            random_state=0,
            n_actions=5,
        )
        out["throughput"][spec] = river.examples_per_second
        print(
            f"throughput, nursery, 100 x {spec}: {river.examples_per_second:,.1f} "
            f"examples/s (first 300 rows); ratio numpy/river = "
            f"{max(rates) / river.examples_per_second:,.0f}"
        )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=2, default=float)
    return 0


if __name__ == "__main__":
    sys.exit(main())
