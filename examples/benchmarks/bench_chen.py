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

Throughput (``--throughput-only`` skips the table): examples/s on Nursery, one example at a
time with every update applied before the next prediction, paired with Vowpal Wabbit's
``--cbify 5 --epsilon 0.01`` through its Python API (``Workspace.learn`` on a text line) on
the same ordering, in the same process, over ``--repeats`` orderings (the order of the
runs reversed on every other ordering), per wall second and per CPU second:

* ``chen``: ChenBanditBoost defaults (100 averaged perceptrons), through ``run_bandit``
  (the hidden-label environment, greedy bookkeeping included);
* ``chen_perceptron``: 100 plain perceptrons, delta = 0.01, gamma = 0.1 (the paper's);
* ``vw_cbify``: VW fed the same (d,) float contexts: each formatted as a text line inside
  the timed loop, as a caller with an array stream must;
* ``vw_cbify_preformatted``: the lines built before the clock starts (VW's parser only).

Printed: median examples/s per learner and the median of the per-ordering ratios
chen / vw. ``engine`` reports whether the compiled step ran (numba installed) or numpy.

    python examples/benchmarks/bench_chen.py --data-dir "$OPBOOST_DATA" --orderings 3
    python examples/benchmarks/bench_chen.py --data-dir "$OPBOOST_DATA" --throughput-only \
        --repeats 5
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time

import numpy as np

from opboost.algorithms.online import Banditron, ChenBanditBoost, ConservativeOVA
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


def _vw_workspace(K: int, seed: int):
    from vowpalwabbit import Workspace

    args = ["--cbify", str(K), "--epsilon", "0.01", "--random_seed", str(seed)]
    return Workspace(arg_list=args, quiet=True)


def _vw_line(x: np.ndarray, label: int) -> str:
    """VW's text format of a context (non-zero features only) with its 1-based label."""
    return f"{label + 1} |" + "".join(f" f{j}:{x[j]!r}" for j in np.flatnonzero(x).tolist())


def vw_cbify_rate(X: np.ndarray, y: np.ndarray, seed: int, preformat: bool) -> tuple:
    """(examples per wall second, per CPU second, progressive reward) of VW ``--cbify``."""
    ws = _vw_workspace(int(y.max()) + 1, seed)
    order = np.random.default_rng(seed).permutation(len(y))  # run_bandit's ordering
    lines = [_vw_line(X[i], int(y[i])) for i in order] if preformat else None
    wall, cpu = time.perf_counter(), time.process_time()
    if lines is not None:
        for line in lines:
            ws.learn(line)
    else:
        for i in order:
            ws.learn(_vw_line(X[i], int(y[i])))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    reward = 1.0 - ws.get_sum_loss() / ws.get_weighted_examples()
    ws.finish()
    return len(y) / wall, len(y) / cpu, reward, "-"


def chen_rate(X: np.ndarray, y: np.ndarray, seed: int, **params) -> tuple:
    """(examples per wall second of run_bandit's loop, per CPU second of the whole
    run_bandit call, progressive reward, engine) of ChenBanditBoost."""
    learner = ChenBanditBoost(
        n_actions=int(y.max()) + 1, n_learners=100, random_state=seed, **params
    )
    cpu = time.process_time()
    result = run_bandit(learner, X, y, random_state=seed)
    cpu = time.process_time() - cpu
    engine = "numba" if getattr(learner, "_kernel", None) is not None else "numpy"
    return result.examples_per_second, len(y) / cpu, result.mean_reward, engine


def throughput(data_dir: str, repeats: int, engine: str | None) -> dict:
    """Paired examples/s on Nursery: opboost's Chen et al. against VW --cbify, per wall
    second and per CPU second (the latter less sensitive to other jobs on the machine)."""
    data = Nursery().load(data_dir)
    X, y = np.asarray(data.X, dtype=np.float64), np.asarray(data.y, dtype=np.int64)
    extra = {} if engine is None else {"engine": engine}
    runs = {
        "chen": lambda s: chen_rate(X, y, s, **extra),
        "chen_perceptron": lambda s: chen_rate(
            X, y, s, weak_learner="perceptron", delta=0.01, gamma=0.1, **extra
        ),
    }
    if importlib.util.find_spec("vowpalwabbit") is not None:
        runs["vw_cbify"] = lambda s: vw_cbify_rate(X, y, s, False)
        runs["vw_cbify_preformatted"] = lambda s: vw_cbify_rate(X, y, s, True)
    chen_rate(X[:50], y[:50], 0, **extra)  # compiles (or loads) the kernels before timing
    out: dict = {"engine": None, "wall": {}, "cpu": {}, "reward": {}}
    for seed in range(repeats):
        names = list(runs) if seed % 2 == 0 else list(runs)[::-1]  # alternate who goes first
        for name in names:
            wall, cpu, reward, eng = runs[name](seed)
            out["wall"].setdefault(name, []).append(wall)
            out["cpu"].setdefault(name, []).append(cpu)
            out["reward"].setdefault(name, []).append(reward)
            out["engine"] = eng if eng != "-" else out["engine"]
    print(f"\nthroughput, nursery ({len(y):,} rows), {repeats} orderings, engine={out['engine']}")
    for name in runs:
        wall, cpu = out["wall"][name], out["cpu"][name]
        print(
            f"  {name:22} median {np.median(wall):9,.0f} ex/s wall ({min(wall):,.0f}-"
            f"{max(wall):,.0f}), {np.median(cpu):9,.0f} ex/CPU-s  reward "
            f"{np.mean(out['reward'][name]):.4f}"
        )
    for clock in ("wall", "cpu"):
        rates = out[clock]
        for chen in ("chen", "chen_perceptron"):
            for vw in ("vw_cbify", "vw_cbify_preformatted"):
                if vw in rates:
                    ratio = np.array(rates[chen]) / np.array(rates[vw])
                    out[f"{clock}:{chen}/{vw}"] = ratio.tolist()
                    print(
                        f"  {clock:4} {chen} / {vw}: median {np.median(ratio):.2f} "
                        f"(per ordering {', '.join(f'{r:.2f}' for r in ratio)})"
                    )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.environ.get("OPBOOST_DATA"))
    parser.add_argument("--orderings", type=int, default=10)
    parser.add_argument("--deltas", default="0.01,0.03,0.1")
    parser.add_argument("--datasets", default="car,dna,nursery,connect4")
    parser.add_argument("--weak-learners", default="perceptron,gaussian_nb")
    parser.add_argument("--baselines", action="store_true", help="also Banditron and C-OVA")
    parser.add_argument("--json", help="write all numbers to this file")
    parser.add_argument("--throughput-only", action="store_true", help="skip the error table")
    parser.add_argument("--repeats", type=int, default=5, help="orderings of the throughput run")
    parser.add_argument("--engine", choices=["auto", "numpy", "numba"], help="Chen's engine")
    args = parser.parse_args(argv)
    if args.data_dir is None:
        parser.error("pass --data-dir or set OPBOOST_DATA")
    if args.throughput_only:
        args.datasets = ""
    deltas = [float(d) for d in args.deltas.split(",")]
    out: dict = {"table2": {}, "throughput": {}, "args": vars(args)}
    if args.datasets:
        print(
            f"{'data':9} {'learner':12} {'best delta':>10} {'played %':>13} "
            f"{'best delta':>10} {'greedy %':>13} {'paper %':>8}"
        )
    for name in filter(None, args.datasets.split(",")):
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

    out["throughput"] = throughput(args.data_dir, args.repeats, args.engine)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=2, default=float)
    return 0


if __name__ == "__main__":
    sys.exit(main())
