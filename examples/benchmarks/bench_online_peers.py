"""Online bandit learners against their peers: progressive reward over shared orderings.

Protocol: one pass over every row of a data set, in ``--orderings`` seeded orders (ordering s
is ``run_bandit(..., random_state=s)``, the same permutation for every learner; the learner's
own seed is s too). Each learner sees a context, plays an action and is shown only that
action's 0/1 reward. Reported per learner and stream: mean progressive reward (exploration
included) with its Student-t 95% interval over orderings; the PAIRED difference to the
reference learner (``--reference``, default ``linucb``), ordering by ordering, with its 95%
interval; and throughput (examples/s of the predict/reward/learn loop, median over orderings).

Streams: Car, Nursery, DNA, Connect-4 (``--data-dir`` or ``$OPBOOST_DATA``; one-hot features)
and river's bundled ImageSegments (2,310 rows, 18 real features, 7 classes) twice: raw
(``imgseg_raw``) and z-scored with the whole data set's mean and std (``imgseg_z``).

Learners (``--learners``): every opboost online learner plus references:

* ``chen``: ChenBanditBoost with its defaults (100 averaged perceptrons, δ = 0.003,
  γ = 0.05, ``standardize="auto"``);
* ``chen_raw``, ``chen_mean``: the same with ``standardize=False`` / ``"mean"``;
* ``chen_perceptron``: 100 plain perceptrons, δ = 0.01, γ = 0.1 (the issue's configuration);
* ``banditron``: γ ∈ ``--gammas``, the best mean per stream (as in the issue's table);
* ``c_ova``: Conservative OVA (passive-aggressive);
* ``linucb``, ``epsilon_greedy``: opboost's vectorised references (ε = 0.01);
* ``epsilon_greedy_auto``: ``epsilon_greedy`` with ``standardize="auto"``;
* ``linucb_raw``: ``linucb`` with ``standardize=False, fit_intercept=False`` (river's model);
* ``river_linucb``: river's ``bandit.LinUCBDisjoint(alpha=1)`` on raw dict features;
* ``vw_cb_explore``: the opboost-vw plugin's ``vw_cb_explore`` (ADF, ``-q sa``, ε = 0.01);
* ``vw_cbify``: Vowpal Wabbit's own ``--cbify K --epsilon 0.01`` loop (VW simulates the
  bandit feedback from the label itself; progressive reward = 1 - VW's average loss).

``--weak-learners`` adds a second table: ChenBanditBoost with ``--weak-n`` learners of each
kind (numpy perceptron and PA banks; river's LogisticRegression with sample weights, and
PAClassifier and HoeffdingTreeClassifier with Poisson importance resampling), on the first
``--weak-rows`` rows of each ordering (river banks run one model per (class, learner)).

    python examples/benchmarks/bench_online_peers.py --data-dir "$OPBOOST_DATA"
    python examples/benchmarks/bench_online_peers.py --data-dir "$OPBOOST_DATA" --quick
    python examples/benchmarks/bench_online_peers.py --data-dir "$OPBOOST_DATA" \\
        --learners chen linucb --weak-learners --json runs/online_peers.json
    python examples/benchmarks/bench_online_peers.py --data-dir "$OPBOOST_DATA" \\
        --streams car --banditron-study
    python examples/benchmarks/bench_online_peers.py --summarize runs/online_peers.json
    python examples/benchmarks/bench_online_peers.py --data-dir "$OPBOOST_DATA" \\
        --learners chen --chen-deltas 0.003 0.005 0.01 --chen-gammas 0.05 0.1
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from opboost.algorithms.online import (
    Banditron,
    ChenBanditBoost,
    ConservativeOVA,
    EpsilonGreedyLinear,
    LinUCB,
)
from opboost.simulation import run_bandit

sys.path.insert(0, str(Path(__file__).resolve().parent))  # examples/benchmarks: not a package
from _bench_common import t_interval

STREAMS = ("car", "nursery", "dna", "connect4", "imgseg_raw", "imgseg_z")
HAS_VW = importlib.util.find_spec("vowpalwabbit") is not None
HAS_VW_PLUGIN = importlib.util.find_spec("opboost_vw") is not None


def load_stream(name: str, data_dir: str | None, max_rows: int | None) -> tuple[Any, Any]:
    """(X (n, d), y (n,)) of a stream; ``max_rows`` keeps a seeded subsample (for --quick)."""
    if name.startswith("imgseg"):
        from river import datasets

        rows = list(datasets.ImageSegments())
        keys = list(rows[0][0])
        X = np.array([[r[0][k] for k in keys] for r in rows], dtype=np.float64)
        y = np.unique([r[1] for r in rows], return_inverse=True)[1]
        if name == "imgseg_z":
            std = X.std(axis=0)
            X = (X - X.mean(axis=0)) / np.where(std > 0, std, 1.0)
    else:
        from opboost.simulation.datasets.uci_classification import DNA, Car, Connect4, Nursery

        loader = {"car": Car, "nursery": Nursery, "dna": DNA, "connect4": Connect4}[name]
        data = loader().load(data_dir)
        X, y = data.X, data.y
    if max_rows is not None and len(y) > max_rows:
        keep = np.sort(np.random.default_rng(0).choice(len(y), max_rows, replace=False))
        X, y = X[keep], y[keep]
    return np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.int64)


# --- references outside opboost's protocol ---------------------------------------------------


class RiverLinUCB:
    """river's LinUCBDisjoint behind opboost's predict_one/learn_one (dict features)."""

    name = "river_linucb"

    def __init__(self, n_actions: int, seed: int) -> None:
        from river import bandit

        self.n_actions = n_actions
        self._policy = bandit.LinUCBDisjoint(alpha=1.0, seed=seed)
        self._arms = list(range(n_actions))

    def predict_one(self, x: np.ndarray) -> int:
        self._context = dict(enumerate(x.tolist()))
        return int(self._policy.pull(self._arms, context=self._context))

    def learn_one(self, x: np.ndarray, action: int, reward: float) -> None:
        self._policy.update(action, self._context, reward)


def run_custom(learner: Any, X: np.ndarray, y: np.ndarray, seed: int) -> tuple[float, float]:
    """Progressive reward and examples/s of a learner outside the BanditLearner hierarchy,
    on ordering ``seed`` (the same permutation ``BanditEnvironment`` draws)."""
    order = np.random.default_rng(seed).permutation(len(y))
    got = 0.0
    start = time.perf_counter()
    for i in order:
        action = learner.predict_one(X[i])
        reward = float(action == y[i])
        learner.learn_one(X[i], action, reward)
        got += reward
    seconds = time.perf_counter() - start
    return got / len(y), len(y) / seconds


def run_vw_cbify(X: np.ndarray, y: np.ndarray, seed: int, epsilon: float) -> tuple[float, float]:
    """VW's ``--cbify K --epsilon eps`` over ordering ``seed``: (1 - average loss, examples/s).

    cbify simulates bandit feedback inside VW (0/1 loss of the sampled action); every
    example is learnt once, in order, so VW's average loss is the progressive loss.
    """
    from vowpalwabbit import Workspace

    K = int(y.max()) + 1
    ws = Workspace(
        arg_list=["--cbify", str(K), "--epsilon", repr(epsilon), "--random_seed", str(seed)],
        quiet=True,
    )
    order = np.random.default_rng(seed).permutation(len(y))
    lines = [
        f"{int(y[i]) + 1} | " + " ".join(f"f{j}:{v!r}" for j, v in enumerate(X[i]) if v != 0.0)
        for i in order
    ]
    start = time.perf_counter()
    for line in lines:
        ws.learn(line)
    seconds = time.perf_counter() - start
    loss = ws.get_sum_loss() / ws.get_weighted_examples()
    ws.finish()
    return 1.0 - loss, len(y) / seconds


# --- learners -----------------------------------------------------------------------------------

Factory = Callable[[int, int], Any]


def learner_factories(args: argparse.Namespace) -> dict[str, list[tuple[str, Factory]]]:
    """Learner name -> [(variant label, factory(K, seed))]; the best variant is reported."""
    eps = args.epsilon
    out: dict[str, list[tuple[str, Factory]]] = {
        "chen": [("default", lambda K, s: ChenBanditBoost(n_actions=K, random_state=s))]
        if not (args.chen_deltas or args.chen_gammas)
        else [
            (
                f"δ={d}, γ={g}",
                lambda K, s, d=d, g=g: ChenBanditBoost(
                    n_actions=K, delta=d, gamma=g, random_state=s
                ),
            )
            for d in args.chen_deltas or [0.003]
            for g in args.chen_gammas or [0.05]
        ],
        "chen_raw": [
            (
                "standardize=False",
                lambda K, s: ChenBanditBoost(n_actions=K, standardize=False, random_state=s),
            )
        ],
        "chen_mean": [
            (
                'standardize="mean"',
                lambda K, s: ChenBanditBoost(n_actions=K, standardize="mean", random_state=s),
            )
        ],
        "chen_perceptron": [
            (
                "δ=0.01, γ=0.1",
                lambda K, s: ChenBanditBoost(
                    n_actions=K, weak_learner="perceptron", delta=0.01, gamma=0.1, random_state=s
                ),
            )
        ],
        "banditron": [
            (f"γ={g}", lambda K, s, g=g: Banditron(n_actions=K, gamma=g, random_state=s))
            for g in args.gammas
        ],
        "c_ova": [("PA", lambda K, s: ConservativeOVA(n_actions=K, random_state=s))],
        "linucb": [("α=1", lambda K, s: LinUCB(n_actions=K, random_state=s))],
        "linucb_raw": [
            (
                "river's model",
                lambda K, s: LinUCB(
                    n_actions=K, standardize=False, fit_intercept=False, random_state=s
                ),
            )
        ],
        "epsilon_greedy": [
            (
                f"ε={eps}",
                lambda K, s: EpsilonGreedyLinear(n_actions=K, epsilon=eps, random_state=s),
            )
        ],
        "epsilon_greedy_auto": [
            (
                f'ε={eps}, standardize="auto"',
                lambda K, s: EpsilonGreedyLinear(
                    n_actions=K, epsilon=eps, standardize="auto", random_state=s
                ),
            )
        ],
        "river_linucb": [("alpha=1", lambda K, s: RiverLinUCB(K, s))],
    }
    if HAS_VW_PLUGIN:
        from opboost_vw.explore import VWCBExplore

        out["vw_cb_explore"] = [
            (
                f"ε={eps}",
                lambda K, s: VWCBExplore(n_actions=K, epsilon=eps, random_state=s),
            )
        ]
    if HAS_VW:
        out["vw_cbify"] = [(f"ε={eps}", lambda K, s: "vw_cbify")]
    return out


def run_one(factory: Factory, X: np.ndarray, y: np.ndarray, seed: int, eps: float):
    """(progressive reward, examples/s) of a fresh learner on ordering ``seed``."""
    K = int(y.max()) + 1
    learner = factory(K, seed)
    if learner == "vw_cbify":
        return run_vw_cbify(X, y, seed, eps)
    if isinstance(learner, RiverLinUCB):
        return run_custom(learner, X, y, seed)
    res = run_bandit(learner, X, y, random_state=seed, n_actions=K)
    return res.mean_reward, res.examples_per_second


def weak_learner_factories(n: int) -> dict[str, Factory]:
    """ChenBanditBoost (defaults otherwise) with n weak learners of each kind."""
    specs = {
        "perceptron (numpy)": "perceptron",
        "averaged perceptron (numpy)": "averaged_perceptron",
        "passive-aggressive (numpy)": "passive_aggressive",
        "river LogisticRegression (w)": "river:linear_model.LogisticRegression",
        "river PAClassifier (Poisson)": "river:linear_model.PAClassifier",
        "river HoeffdingTree (w)": "river:tree.HoeffdingTreeClassifier",
    }
    return {
        label: (
            lambda K, s, spec=spec: ChenBanditBoost(
                n_actions=K, n_learners=n, weak_learner=spec, random_state=s
            )
        )
        for label, spec in specs.items()
    }


def banditron_study(X: np.ndarray, y: np.ndarray, seeds: range) -> dict[str, float]:
    """Why the Banditron plays below the majority class (docs/benchmarks/online.md), raw features:
    the full-information multiclass perceptron it estimates, one pass on the same orderings;
    the Banditron's played reward and greedy accuracy by gamma; 10 passes at gamma = 0.1."""
    K = int(y.max()) + 1
    out = {"majority": float(np.bincount(y).max() / len(y))}
    accuracy = []
    for s in seeds:
        W, correct = np.zeros((K, X.shape[1] + 1)), 0
        for i in np.random.default_rng(s).permutation(len(y)):
            xb = np.append(X[i], 1.0)
            guess = int(np.argmax(W @ xb))
            correct += guess == y[i]
            if guess != y[i]:
                W[y[i]] += xb
                W[guess] -= xb
        accuracy.append(correct / len(y))
    out["full_information_perceptron"] = float(np.mean(accuracy))
    for gamma in (0.1, 0.3, 0.5):
        runs = [
            run_bandit(
                Banditron(n_actions=K, gamma=gamma, standardize=False, random_state=s),
                X,
                y,
                random_state=s,
            )
            for s in seeds
        ]
        out[f"played_gamma_{gamma}"] = float(np.mean([r.mean_reward for r in runs]))
        out[f"greedy_gamma_{gamma}"] = float(np.mean([1 - r.greedy_error_rate for r in runs]))
    runs = [
        run_bandit(
            Banditron(n_actions=K, gamma=0.1, standardize=False, random_state=s),
            X,
            y,
            random_state=s,
            n_passes=10,
        )
        for s in seeds
    ]
    out["played_gamma_0.1_10_passes"] = float(np.mean([r.mean_reward for r in runs]))
    return out


def summarize(paths: list[str], focus: str) -> None:
    """From saved ``--json`` files: ``focus`` minus every other learner, paired by ordering,
    per stream (the acceptance comparisons: against VW --cbify and LinUCB)."""
    streams: dict[str, dict[str, Any]] = {}
    for path in paths:
        for stream, rows in json.loads(Path(path).read_text())["streams"].items():
            if not stream.endswith("/weak") and focus in rows:
                streams[stream] = rows
    names = sorted({n for rows in streams.values() for n in rows} - {focus})
    print(f"| stream | {focus} | " + " | ".join(f"{focus} − {n}" for n in names) + " |")
    print("|---" * (len(names) + 2) + "|")
    for stream, rows in streams.items():
        mine = np.array(rows[focus]["rewards"])
        cells = [
            fmt((mine - np.array(rows[n]["rewards"])).tolist()) if n in rows else "—" for n in names
        ]
        print(f"| {stream} | {fmt(mine.tolist())} | " + " | ".join(cells) + " |")


def fmt(values: list[float]) -> str:
    mean, half = t_interval(values)
    return f"{mean:.3f}" if np.isnan(half) else f"{mean:.3f} ± {half:.3f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.environ.get("OPBOOST_DATA"))
    parser.add_argument("--streams", nargs="+", default=list(STREAMS), choices=STREAMS)
    parser.add_argument("--learners", nargs="+", default=None, help="default: all available")
    parser.add_argument("--reference", default="linucb")
    parser.add_argument("--orderings", type=int, default=5)
    parser.add_argument("--max-rows", type=int, default=None, help="seeded subsample per stream")
    parser.add_argument("--gammas", type=float, nargs="+", default=[0.01, 0.03, 0.1, 0.3])
    parser.add_argument("--epsilon", type=float, default=0.01)
    parser.add_argument(
        "--chen-deltas",
        type=float,
        nargs="+",
        help="make `chen` a grid over these δ (with --chen-gammas); each variant's mean goes "
        "to stderr, the table shows the best",
    )
    parser.add_argument("--chen-gammas", type=float, nargs="+")
    parser.add_argument("--weak-learners", action="store_true")
    parser.add_argument("--weak-n", type=int, default=20)
    parser.add_argument("--weak-rows", type=int, default=3000)
    parser.add_argument(
        "--summarize",
        nargs="+",
        metavar="JSON",
        help="print --focus minus every learner, paired, from saved --json files; no runs",
    )
    parser.add_argument("--focus", default="chen", help="the learner --summarize compares")
    parser.add_argument(
        "--banditron-study", action="store_true", help="only the Banditron study, per stream"
    )
    parser.add_argument("--quick", action="store_true", help="2 orderings, 600 rows a stream")
    parser.add_argument("--json", help="write every per-ordering number to this file")
    args = parser.parse_args(argv)
    if args.summarize:
        summarize(args.summarize, args.focus)
        return 0
    if args.quick:
        args.orderings, args.max_rows, args.weak_rows = 2, args.max_rows or 600, 300
        args.gammas = args.gammas[-1:]
    factories = learner_factories(args)
    names = args.learners or list(factories)
    unknown = sorted(set(names) - set(factories))
    if unknown:
        parser.error(f"unknown or unavailable learners {unknown}; known: {sorted(factories)}")
    if args.reference not in names:
        names = [args.reference, *names]
    seeds = range(args.orderings)
    out: dict[str, Any] = {"args": vars(args), "streams": {}}
    print(f"orderings {list(seeds)}; reference {args.reference}; command: {' '.join(sys.argv)}")
    for stream in args.streams:
        if not stream.startswith("imgseg") and args.data_dir is None:
            print(f"\n{stream}: skipped (pass --data-dir or set OPBOOST_DATA)")
            continue
        X, y = load_stream(stream, args.data_dir, args.max_rows)
        if args.banditron_study:
            study = banditron_study(X, y, seeds)
            print(f"\n{stream}: " + ", ".join(f"{k} {v:.3f}" for k, v in study.items()))
            out["streams"][stream] = study
            continue
        rows: dict[str, dict[str, Any]] = {}
        for name in names:
            best = None
            for label, factory in factories[name]:
                runs = [run_one(factory, X, y, s, args.epsilon) for s in seeds]
                rewards = [r for r, _ in runs]
                speed = float(np.median([v for _, v in runs]))
                if best is None or np.mean(rewards) > np.mean(best["rewards"]):
                    best = {"variant": label, "rewards": rewards, "examples_per_s": speed}
                print(f"  {stream} {name} {label}: {np.mean(rewards):.4f}", file=sys.stderr)
            rows[name] = best
        ref = np.array(rows[args.reference]["rewards"])
        print(f"\n### {stream} ({len(y):,} rows, {X.shape[1]} features, {y.max() + 1} classes)\n")
        print(
            f"| learner | variant | progressive reward | − {args.reference} (paired) | examples/s |"
        )
        print("|---|---|---|---|---|")
        for name, row in rows.items():
            diff = np.array(row["rewards"]) - ref
            paired = "—" if name == args.reference else fmt(diff.tolist())
            print(
                f"| {name} | {row['variant']} | {fmt(row['rewards'])} | {paired} | "
                f"{row['examples_per_s']:,.0f} |"
            )
        out["streams"][stream] = rows
        if args.weak_learners:
            n_rows = min(args.weak_rows, len(y))
            print(
                f"\nweak learners, ChenBanditBoost with {args.weak_n} learners (defaults), "
                f"first {n_rows:,} rows of each ordering\n"
            )
            print("| weak learner | progressive reward | − perceptron (paired) | examples/s |")
            print("|---|---|---|---|")
            weak: dict[str, Any] = {}
            for label, factory in weak_learner_factories(args.weak_n).items():
                runs = []
                for s in seeds:
                    order = np.random.default_rng(s).permutation(len(y))[:n_rows]
                    res = run_bandit(
                        factory(int(y.max()) + 1, s),
                        X[order],
                        y[order],
                        random_state=s,
                        shuffle=False,
                        n_actions=int(y.max()) + 1,
                    )
                    runs.append((res.mean_reward, res.examples_per_second))
                weak[label] = {
                    "rewards": [r for r, _ in runs],
                    "examples_per_s": float(np.median([v for _, v in runs])),
                }
            base = np.array(weak["perceptron (numpy)"]["rewards"])
            for label, row in weak.items():
                diff = (np.array(row["rewards"]) - base).tolist()
                print(
                    f"| {label} | {fmt(row['rewards'])} | "
                    f"{'—' if label.startswith('perceptron') else fmt(diff)} | "
                    f"{row['examples_per_s']:,.0f} |"
                )
            out["streams"][stream + "/weak"] = weak
        sys.stdout.flush()
        if args.json:
            Path(args.json).write_text(json.dumps(out, indent=2, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
