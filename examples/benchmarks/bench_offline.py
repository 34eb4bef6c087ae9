"""Offline BOPL-S with the ``lightgbm_tree`` learner against LightGBM's own objectives.

Run from the repository root::

    python examples/benchmarks/bench_offline.py [--rows 100000 --features 50 --actions 7
        --rounds 100 --num-leaves 63 --threads 0 --repeats 2 --fits bopl_s,lgb_l2,lgb_multiclass
        --layouts col,row]

Simulated bandit data: ``synthetic_multiclass`` converted by ``supervised_to_bandit``. All
timings run in ONE process, interleaved ``--repeats`` times, and the minimum of each is kept;
only ratios are printed, since absolute times on a shared machine mean little:

(a) BOPL-S fit via ``opboost.Booster(objective="bopl_s", base_learner=LightGBMTree(...))``
    / LightGBM's built-in L2 regression growing the same number of trees with the same tree
    parameters on the same stacked (x, a) rows, on BOPL-S's first-round problem (its targets
    as labels, its weights as sample weights) (Dataset construction included for both;
    building the stacked float matrix the baseline needs is NOT counted against it);
(b) the same BOPL-S fit / LightGBM's built-in multiclass objective on the contexts, same rounds
    and leaves (K trees per round);
    every fit runs at both of LightGBM's histogram layouts (``force_col_wise``,
    ``force_row_wise``): (a) compares BOPL-S and L2 at the same layout (both printed; the
    headline is the layout ``lightgbm_tree`` picks by default, ``histogram_layout``), (b)
    BOPL-S at its default layout against multiclass at its faster one;
(c) peak memory: each fit runs again in a fresh subprocess that builds the data, keeps only
    the logs (and the labels the multiclass fit needs), warms up on a tiny problem, records its
    resident set size (RSS), resets the kernel's peak-RSS mark (``/proc/self/clear_refs``,
    Linux) and fits; the child reports the peak RSS of the fit (``VmHWM``, which counts
    LightGBM's native allocations too) and the pre-fit RSS. The fit's cost is peak minus
    pre-fit RSS. For (c) the L2 baseline's pre-fit state excludes the stacked matrix, which
    that baseline has to build, so it is charged to its fit;
(d) bytes per stacked row: BOPL-S's fit cost over n*K, and beyond LightGBM's own binned
    Dataset of the stacked rows (one more child builds that Dataset alone, as ``lightgbm_tree``
    does, and reports its RSS once built).

``--fits`` and ``--layouts`` restrict what is timed (at 1M rows the L2 baseline's stacked
float matrix alone would take 4 GB); (a) needs bopl_s and lgb_l2, (b) bopl_s and lgb_multiclass.

``--designs`` also times and scores every action design of the learner (true expected reward of
the argmax policy on held-out labelled rows). ``--only NAME`` runs one fit (used by (c)).
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import subprocess
import sys
import time
from typing import Any

import lightgbm as lgb
import numpy as np

from opboost import Booster
from opboost.algorithms.learners.lightgbm_tree import LightGBMTree
from opboost.lgbm.rows import design_rows
from opboost.simulation.datasets.bundled import SyntheticMulticlass
from opboost.simulation.supervised import expected_reward, supervised_to_bandit

FITS = ("bopl_s", "lgb_l2", "lgb_multiclass")
LAYOUTS = ("col", "row")  # LightGBM's force_col_wise / force_row_wise


def make_data(args: argparse.Namespace) -> dict[str, Any]:
    """Logged bandit rows (about ``--rows``) plus a labelled held-out set of 20%."""
    n_total = int(args.rows / 0.9 * 1.25)  # 10% trains the logger, 20% is held out
    sup = SyntheticMulticlass(
        n_samples=n_total,
        n_features=args.features,
        n_classes=args.actions,
        n_informative=min(20, args.features),
        random_state=args.seed,
    ).load()
    n_test = n_total // 5
    X, y = sup.X[n_test:], sup.y[n_test:]
    sim = supervised_to_bandit(X, y, n_actions=args.actions, random_state=args.seed)
    return {
        "logged": sim.logged,
        "y_logged": sim.y_logged,
        "X_test": sup.X[:n_test],
        "y_test": sup.y[:n_test],
    }


def tree_params(args: argparse.Namespace, layout: str = "col") -> dict[str, Any]:
    """Tree parameters shared by every fit; ``layout`` is LightGBM's histogram layout."""
    return {
        "num_leaves": args.num_leaves,
        "min_data_in_leaf": 20,
        "max_bin": 255,
        "num_threads": args.threads,
        "seed": args.seed,
        "verbose": -1,
        f"force_{layout}_wise": True,
    }


def fit_bopl_s(
    data: dict[str, Any], args: argparse.Namespace, design: str | None = None, layout: str = ""
):
    """BOPL-S through the real Booster in ``design`` (default ``--design``; ``layout`` forces
    a histogram layout); the Booster."""
    learner = LightGBMTree(
        num_leaves=args.num_leaves,
        min_data_in_leaf=20,
        max_bin=255,
        num_threads=args.threads,
        action_design=design or args.design,
        row_sampling=args.row_sampling,
        random_state=args.seed,
        params={f"force_{layout}_wise": True} if layout else None,
    )
    booster = Booster(
        objective="bopl_s",
        estimator="ips",
        base_learner=learner,
        n_rounds=args.rounds,
        reward_shift=args.reward_shift,
        warm_start="none",  # the boosting rounds alone, as the baselines
        random_state=args.seed,
    )
    return booster.fit(data["logged"])


def stacked_matrix(data: dict[str, Any], args: argparse.Namespace):
    """The stacked rows [x_i; a] (n*K, d+1), and BOPL-S's first-round regression problem.

    Targets Y_{i,a} = s_i (xi_i / sigma_i) g_{i,a} and weights |c_i| sigma_i at F = 0 (uniform
    policy), IPS coefficients on shifted rewards: the problem the learner's first tree solves.
    """
    logged = data["logged"]
    n, K = len(logged), logged.n_actions
    rows = design_rows(np.asarray(logged.contexts), K, "stacked")
    r = logged.rewards + args.reward_shift
    c = r / logged.propensities
    g = np.full((n, K), -1.0 / K)
    g[np.arange(n), logged.actions] += 1.0
    neg = r < 0
    xi, sigma = np.where(neg, 1.0 / K, 1.0), np.where(neg, 0.5, 1.0)
    targets = (np.sign(r) * xi / sigma)[:, None] * g
    weights = np.repeat(np.abs(c) * sigma, K)
    return rows, targets.ravel(), weights


def fit_lgb_l2(data: dict[str, Any], args: argparse.Namespace, stacked=None, layout: str = "col"):
    """LightGBM's built-in (weighted) L2 regression on the stacked rows, ``--rounds`` trees."""
    rows, label, weight = stacked_matrix(data, args) if stacked is None else stacked
    params = {**tree_params(args, layout), "objective": "regression"}
    d = data["logged"].contexts.shape[1]
    ds = lgb.Dataset(
        rows,
        label=label,
        weight=weight,
        categorical_feature=[d],
        params=params,
        free_raw_data=True,
    )
    return lgb.train(params, ds, num_boost_round=args.rounds)


def fit_lgb_multiclass(data: dict[str, Any], args: argparse.Namespace, layout: str = "col"):
    """LightGBM's built-in multiclass objective on the contexts (K trees per round)."""
    logged = data["logged"]
    params = {
        **tree_params(args, layout),
        "objective": "multiclass",
        "num_class": logged.n_actions,
    }
    ds = lgb.Dataset(logged.contexts, label=data["y_logged"], params=params)
    return lgb.train(params, ds, num_boost_round=args.rounds)


def default_layout(data: dict[str, Any], args: argparse.Namespace) -> str:
    """The histogram layout ``lightgbm_tree`` picks for these rows in ``--design``: "row" or
    "col"."""
    learner = LightGBMTree(
        num_leaves=args.num_leaves,
        num_threads=args.threads,
        action_design=args.design,
        row_sampling=args.row_sampling,
    )
    learner.prepare(data["logged"].contexts, data["logged"].n_actions, random_state=args.seed)
    return learner.histogram_layout_.split("_")[1]


def timed(fn, *a, **kw) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn(*a, **kw)
    return time.perf_counter() - start, out


def timed_cpu(fn, *a, **kw) -> tuple[float, float, Any]:
    """Wall and CPU seconds of the call (CPU: this process, all threads), and its result."""
    start, cpu = time.perf_counter(), time.process_time()
    out = fn(*a, **kw)
    return time.perf_counter() - start, time.process_time() - cpu, out


def rss_mb() -> float:
    """Current resident set size of this process, MB."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * resource.getpagesize() / 2**20


def peak_rss_mb() -> float:
    """Peak resident set size of this process since the last reset (VmHWM), MB."""
    with open("/proc/self/status") as fh:
        line = next(x for x in fh if x.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def stacked_dataset_only(data: dict[str, Any], args: argparse.Namespace):
    """LightGBM's binned Dataset of the stacked rows alone, built as ``lightgbm_tree`` builds it."""
    from opboost.lgbm.rows import stacked_dataset

    learner = LightGBMTree(num_leaves=args.num_leaves, num_threads=args.threads)
    logged = data["logged"]
    params = learner._lgb_params(args.seed)
    dataset = stacked_dataset(logged.contexts, logged.n_actions, "stacked", params)
    data["dataset"] = dataset  # kept alive until the child reports its RSS
    return dataset


CHILD_FITS = {
    "bopl_s": fit_bopl_s,
    "lgb_l2": fit_lgb_l2,
    "lgb_multiclass": fit_lgb_multiclass,
    "dataset": stacked_dataset_only,
}


def child(args: argparse.Namespace) -> None:
    """Run one fit (``--only``) and print its memory as JSON."""
    data = make_data(args)
    for key in ("X_test", "y_test"):  # the process holds the logs and labels, as a user's would
        del data[key]
    gc.collect()
    fit = CHILD_FITS[args.only]
    # Import and first-call costs (registry, plugins) out of the way on a tiny problem.
    tiny = argparse.Namespace(**{**vars(args), "rows": 300, "rounds": 2})
    fit(make_data(tiny), tiny)
    gc.collect()
    before = rss_mb()
    with open("/proc/self/clear_refs", "w") as fh:  # Linux: reset VmHWM to the current RSS
        fh.write("5")
    fit(data, args)
    after = rss_mb()
    report = {"fit": args.only, "before_mb": before, "peak_mb": peak_rss_mb(), "after_mb": after}
    print(json.dumps(report))


def memory(args: argparse.Namespace, fits: list[str]) -> dict[str, dict[str, float]]:
    """Peak RSS of each fit in a fresh subprocess."""
    out = {}
    for name in fits:
        cmd = [sys.executable, __file__, "--only", name] + [
            f"--{k.replace('_', '-')}={v}"
            for k, v in vars(args).items()
            if k not in ("only", "designs", "profile", "fits", "layouts")
        ]
        result = subprocess.run(cmd, capture_output=True, text=True, check=True)
        out[name] = json.loads(result.stdout.strip().splitlines()[-1])
    return out


def run_timing(data: dict[str, Any], args: argparse.Namespace) -> dict[str, list[float]]:
    """Seconds of every (fit, layout) of ``--fits`` x ``--layouts``, interleaved ``--repeats``
    times, the order of the fits reversed on every other repeat; wall clock under the fit's
    name, CPU time of the process under ``cpu:`` + the name (steadier on a loaded machine
    with one LightGBM thread)."""
    fits = {"bopl_s": fit_bopl_s, "lgb_l2": fit_lgb_l2, "lgb_multiclass": fit_lgb_multiclass}
    stacked = stacked_matrix(data, args) if "lgb_l2" in args.fits else None
    calls = {
        "bopl_s": lambda layout: fits["bopl_s"](data, args, args.design, layout),
        "lgb_l2": lambda layout: fits["lgb_l2"](data, args, stacked, layout),
        "lgb_multiclass": lambda layout: fits["lgb_multiclass"](data, args, layout),
    }
    names = [f"{f}_{lay}" for f in args.fits for lay in args.layouts]
    times: dict[str, list[float]] = {key: [] for name in names for key in (name, "cpu:" + name)}
    for repeat in range(args.repeats):
        order = [(f, lay) for lay in args.layouts for f in args.fits]
        for fit, layout in order if repeat % 2 == 0 else order[::-1]:
            wall, cpu, out = timed_cpu(calls[fit], layout)
            times[f"{fit}_{layout}"].append(wall)
            times[f"cpu:{fit}_{layout}"].append(cpu)
            if fit == "bopl_s":
                print(f"    BOPL-S rounds run: {out.n_rounds_} ({out.stop_reason_})")
    return times


def report_times(times: dict[str, list[float]], ours: str, args: argparse.Namespace) -> None:
    """Print ratios (a) and (b) from the fastest repeat of each fit, wall clock and CPU."""
    best = {name: min(v) for name, v in times.items()}
    print(f"BOPL-S default histogram layout (lightgbm_tree's choice): {ours}-wise")
    if ours not in args.layouts:
        ours = args.layouts[0]
        print(f"    (not timed; {ours}-wise used for BOPL-S below)")
    for clock in ("", "cpu:"):
        unit = "CPU" if clock else "wall"
        if "lgb_l2" in args.fits and "bopl_s" in args.fits:
            for layout in args.layouts:
                mark = "  <- the default" if layout == ours else ""
                ratio = best[f"{clock}bopl_s_{layout}"] / best[f"{clock}lgb_l2_{layout}"]
                print(
                    f"(a) BOPL-S / LightGBM L2 on stacked rows, both {layout}-wise, {unit}: "
                    f"{ratio:.2f}  (target <= 1.15){mark}"
                )
        if "lgb_multiclass" in args.fits and "bopl_s" in args.fits:
            multiclass = min(best[f"{clock}lgb_multiclass_{lay}"] for lay in args.layouts)
            print(
                f"(b) BOPL-S ({ours}-wise) / LightGBM multiclass (its faster layout), {unit}: "
                f"{best[f'{clock}bopl_s_{ours}'] / multiclass:.2f}  (target <= 0.8)"
            )
    rounded = {k: [round(x, 2) for x in v] for k, v in times.items()}
    print("    all times (s): " + json.dumps(rounded))


def report_memory(mem: dict[str, dict[str, float]], stacked_rows: int) -> None:
    """Print (c) and (d) from the children's RSS."""
    fit_mb = {k: v["peak_mb"] - v["before_mb"] for k, v in mem.items() if k != "dataset"}
    print(
        "(c) peak RSS MB (pre-fit RSS MB): "
        + ", ".join(f"{k} {v['peak_mb']:.0f} ({v['before_mb']:.0f})" for k, v in mem.items())
    )
    for other in ("lgb_l2", "lgb_multiclass"):
        if "bopl_s" in mem and other in mem:
            peak = mem["bopl_s"]["peak_mb"] / mem[other]["peak_mb"]
            print(
                f"    BOPL-S / {other}: peak RSS {peak:.2f}"
                f"  (target <= 2 for multiclass), fit memory (peak - pre-fit) "
                f"{fit_mb['bopl_s'] / fit_mb[other]:.2f}"
            )
    if "bopl_s" in mem and "dataset" in mem:
        per_row = 2**20 / stacked_rows
        dataset = mem["dataset"]["after_mb"] - mem["dataset"]["before_mb"]
        print(
            f"(d) bytes per stacked row: BOPL-S fit {fit_mb['bopl_s'] * per_row:.1f}, LightGBM's "
            f"binned Dataset {dataset * per_row:.1f}, beyond it "
            f"{(fit_mb['bopl_s'] - dataset) * per_row:.1f}  (goal <= 120)"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--features", type=int, default=50)
    parser.add_argument("--actions", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--num-leaves", type=int, default=63)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--reward-shift", type=float, default=-0.5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fits", type=lambda s: s.split(","), default=list(FITS))
    parser.add_argument("--layouts", type=lambda s: s.split(","), default=list(LAYOUTS))
    parser.add_argument("--designs", action="store_true")
    parser.add_argument(
        "--design",
        choices=("stacked", "stacked_onehot", "per_action"),
        default="stacked",
        help="BOPL-S's action design (per_action: K trees a round on the n contexts)",
    )
    parser.add_argument(
        "--row-sampling",
        choices=("auto", "none", "goss"),
        default="auto",
        help="BOPL-S's row_sampling (goss: also the per-action trees, which auto leaves whole)",
    )
    parser.add_argument("--only", choices=tuple(CHILD_FITS))
    args = parser.parse_args(argv)
    if args.only:
        child(args)
        return
    data = make_data(args)
    n, K = len(data["logged"]), data["logged"].n_actions
    print(
        f"rows={n} features={args.features} actions={K} rounds={args.rounds} "
        f"num_leaves={args.num_leaves} threads={args.threads} repeats={args.repeats} "
        f"fits={','.join(args.fits)} layouts={','.join(args.layouts)} design={args.design} "
        f"row_sampling={args.row_sampling}"
    )
    tiny = argparse.Namespace(**{**vars(args), "rows": 300, "rounds": 2})
    tiny_data = make_data(tiny)
    for fit in (fit_bopl_s, fit_lgb_l2, fit_lgb_multiclass):  # imports, first-call costs
        fit(tiny_data, tiny)
    times = run_timing(data, args)
    report_times(times, default_layout(data, args), args)
    stacked_bopl_s = "bopl_s" in args.fits and args.design == "stacked"
    children = list(args.fits) + (["dataset"] if stacked_bopl_s else [])
    report_memory(memory(args, children), n * K)
    if args.designs:
        X_test, y_test = data["X_test"], data["y_test"]
        print("action designs (seconds relative to stacked; held-out reward of argmax):")
        base = None
        for design in ("stacked", "stacked_onehot", "per_action"):
            t, fitted = timed(fit_bopl_s, data, args, design)
            base = base or t
            best_action = np.eye(K)[fitted.predict(X_test)]
            print(
                f"    {design:15s} time x{t / base:.2f}  reward "
                f"{expected_reward(best_action, y_test):.4f}"
            )
        logger = data["logged"].logging_probs
        print(
            f"    logging policy (in-sample) reward {expected_reward(logger, data['y_logged']):.4f}"
        )


if __name__ == "__main__":
    main()
