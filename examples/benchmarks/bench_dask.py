"""BOPL-S on a Dask LocalCluster (``lightgbm_dask_tree``) against the same fit in memory.

Run from the repository root (needs ``pip install ".[dask]"``)::

    python examples/benchmarks/bench_dask.py [--rows 1000000 --features 20 --actions 5
        --partitions 8 --rounds 20 --workers 2 --threads 2 --repeats 3 --memory-limit 6GiB
        --dask-sampling none,auto]

The logs are simulated ON the workers, one seeded task per partition (contexts N(0, 1), a
softmax logging policy, Bernoulli rewards), the partitions spread evenly over the workers and
persisted there before any fit; the client simulates the same rows for the in-memory fit.
The fits then alternate ``--repeats`` times in one process: the in-memory fit
(``lightgbm_tree``, no warm start, like the distributed fit) with each of the ``--threads``
LightGBM thread counts (e.g. ``1,2``), and the distributed fit (``--workers`` workers of one
thread each) with each ``--dask-sampling`` (``lightgbm_dask_tree``'s ``row_sampling``; with
two, their paired time ratio and reward difference). Printed per fit: the
fit's seconds, its set-up (from ``fit()`` to the first round: coefficients, LightGBM
Datasets), the median seconds per round, the peak resident set size (RSS) of each worker
(sampled every 50 ms) and of the client, the final training objective and the true expected
reward of the fitted greedy policy on 100,000 fresh contexts. Then the ratios distributed /
in-memory, pair by pair (median, min, max).
"""

from __future__ import annotations

import argparse
import threading
import time
from typing import Any

import numpy as np
import psutil

MB = 1 << 20


# --- data ------------------------------------------------------------------------------------


def simulate_partition(seed: int, index: int, rows: int, d: int, K: int):
    """One partition of simulated logs: contexts (rows, d), actions, propensities, rewards."""
    weights = np.random.default_rng(seed)  # the same logger and reward model everywhere
    W_log = weights.normal(scale=0.5, size=(d, K))
    W_true = weights.normal(size=(d, K))
    rng = np.random.default_rng([seed, index])
    X = rng.normal(size=(rows, d))
    logits = X @ W_log
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    actions = np.minimum((rng.random(rows)[:, None] > probs.cumsum(axis=1)).sum(axis=1), K - 1)
    rows_idx = np.arange(rows)
    mean = 1.0 / (1.0 + np.exp(-(X @ W_true)[rows_idx, actions]))
    rewards = (rng.random(rows) < mean).astype(np.float64)
    return X, actions, probs[rows_idx, actions], rewards


def partition_sizes(rows: int, partitions: int) -> list[int]:
    return [int(n) for n in np.diff(np.linspace(0, rows, partitions + 1).round().astype(int))]


def persisted_logs(client: Any, args: argparse.Namespace):
    """A DaskLoggedBandit whose partition p is generated and kept on worker p mod W."""
    import dask
    import dask.array as da
    from dask import delayed
    from distributed import wait

    from opboost.dask import DaskLoggedBandit

    workers = sorted(client.nthreads())
    d, K = args.features, args.actions
    fields: list[list[Any]] = [[], [], [], []]
    for index, n_p in enumerate(partition_sizes(args.rows, args.partitions)):
        with dask.annotate(workers=[workers[index % len(workers)]], allow_other_workers=False):
            part = delayed(simulate_partition, pure=True, nout=4)(args.seed, index, n_p, d, K)
            shapes = [(n_p, d), (n_p,), (n_p,), (n_p,)]
            dtypes = [np.float64, np.int64, np.float64, np.float64]
            for j in range(4):
                fields[j].append(da.from_delayed(part[j], shapes[j], dtype=dtypes[j]))
    arrays = client.persist([da.concatenate(f) for f in fields], optimize_graph=False)
    with client.as_current():
        wait(arrays)
    return DaskLoggedBandit(*arrays, n_actions=K)


def local_logs(args: argparse.Namespace):
    """The same rows as :func:`persisted_logs`, as one in-memory LoggedBandit."""
    from opboost import LoggedBandit

    d, K = args.features, args.actions
    sizes = partition_sizes(args.rows, args.partitions)
    parts = [simulate_partition(args.seed, i, n_p, d, K) for i, n_p in enumerate(sizes)]
    return LoggedBandit(*(np.concatenate(field) for field in zip(*parts, strict=True)), K)


def true_reward(booster: Any, args: argparse.Namespace) -> float:
    """Expected reward of the booster's greedy policy on 100,000 fresh contexts."""
    d, K = args.features, args.actions
    X = simulate_partition(args.seed, args.partitions + 1, 100_000, d, K)[0]
    W_true = np.random.default_rng(args.seed)
    W_true.normal(scale=0.5, size=(d, K))
    mean = 1.0 / (1.0 + np.exp(-(X @ W_true.normal(size=(d, K)))))
    return float(mean[np.arange(len(X)), booster.predict(X)].mean())


# --- measuring -------------------------------------------------------------------------------


class PeakRSS(threading.Thread):
    """This process's peak RSS while running (sampled every ``interval`` seconds)."""

    def __init__(self, interval: float = 0.05) -> None:
        super().__init__(daemon=True, name="opboost-bench-sampler")
        self.process, self.interval = psutil.Process(), interval
        self.start_rss = self.process.memory_info().rss
        self.peak, self.done = self.start_rss, threading.Event()

    def run(self) -> None:
        while not self.done.wait(self.interval):
            self.peak = max(self.peak, self.process.memory_info().rss)


def start_sampler(dask_worker: Any) -> None:
    """On a worker: record its peak RSS until :func:`stop_sampler`."""
    sampler = PeakRSS()
    sampler.start()
    dask_worker._opboost_bench = sampler


def stop_sampler(dask_worker: Any) -> dict[str, int]:
    sampler = dask_worker._opboost_bench
    sampler.done.set()
    return {"start": sampler.start_rss, "peak": sampler.peak}


def quiet_lightgbm() -> None:
    """Route LightGBM's log lines (network set-up, ports) to nowhere in this process."""
    import lightgbm as lgb

    class Quiet:
        def info(self, msg: str) -> None:
            pass

        def warning(self, msg: str) -> None:
            pass

    lgb.register_logger(Quiet())


def timed_fit(booster: Any, data: Any) -> dict[str, Any]:
    """Fit ``booster`` on ``data``: seconds in all, set-up, median round, client peak RSS."""
    from opboost.api.callback import Callback

    class Clock(Callback):
        name = "bench_clock"

        def __init__(self) -> None:
            self.times: list[float] = []

        def on_fit_start(self, env: Any) -> None:
            self.times.append(time.perf_counter())

        def on_round_end(self, env: Any) -> None:
            self.times.append(time.perf_counter())

    clock, sampler = Clock(), PeakRSS()
    sampler.start()
    start = time.perf_counter()
    booster.fit(data, callbacks=[clock])
    seconds = time.perf_counter() - start
    sampler.done.set()
    rounds = np.diff(clock.times)
    return {
        "seconds": seconds,
        "setup": clock.times[0] - start,
        "per_round": float(np.median(rounds)),
        "rounds": len(rounds),
        "client_peak": sampler.peak,
        "client_growth": sampler.peak - sampler.start_rss,
        "objective": float(booster.history_["train_objective"][-1]),
    }


# --- the run ---------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> tuple[dict[int, list[dict]], list[dict]]:
    from distributed import Client, LocalCluster

    from opboost import Booster
    from opboost.dask import LightGBMDaskTree

    quiet_lightgbm()
    logged = local_logs(args)
    local_runs: dict[int, list[dict]] = {t: [] for t in args.threads}
    dask_runs: dict[str, list[dict]] = {sampling: [] for sampling in args.dask_sampling}
    with (
        LocalCluster(
            n_workers=args.workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            memory_limit=args.memory_limit,
        ) as cluster,
        Client(cluster) as client,
    ):
        client.run(quiet_lightgbm)
        data = persisted_logs(client, args)
        names = {addr: w["id"] for addr, w in client.scheduler_info()["workers"].items()}
        for _ in range(args.repeats):
            for threads in args.threads:
                local = Booster(
                    n_rounds=args.rounds,
                    base_learner_params={"num_leaves": args.num_leaves, "num_threads": threads},
                    warm_start="none",
                    random_state=args.seed,
                )
                result = timed_fit(local, logged)
                local_runs[threads].append({**result, "reward": true_reward(local, args)})
            for sampling in args.dask_sampling:
                learner = LightGBMDaskTree(
                    client=client, num_leaves=args.num_leaves, row_sampling=sampling
                )
                dist = Booster(n_rounds=args.rounds, base_learner=learner, random_state=args.seed)
                client.run(start_sampler)
                result = timed_fit(dist, data)
                peaks = client.run(stop_sampler)
                result["workers"] = {
                    names[a]: (rows, peaks[a])
                    for a, rows in dist.distributed_["rows_per_worker"].items()
                }
                result["sampled_rounds"] = dist.distributed_["sampled_rounds"]
                dask_runs[sampling].append({**result, "reward": true_reward(dist, args)})
    return local_runs, dask_runs


def spread(values: list[float], digits: int = 2) -> str:
    return f"{np.median(values):.{digits}f} ({min(values):.{digits}f}–{max(values):.{digits}f})"


def client_rss(runs: list[dict]) -> str:
    peak = max(r["client_peak"] for r in runs) / MB
    return f"client: {peak:,.0f} (+{max(r['client_growth'] for r in runs) / MB:,.0f})"


def worker_rss(runs: list[dict]) -> str:
    """Each worker's largest peak RSS over the runs, its growth in that fit and its rows."""
    out = []
    for name in sorted(runs[0]["workers"]):
        rows = runs[0]["workers"][name][0]
        peak = max((r["workers"][name][1] for r in runs), key=lambda p: p["peak"])
        growth = (peak["peak"] - peak["start"]) / MB
        out.append(f"worker {name}: {peak['peak'] / MB:,.0f} (+{growth:,.0f}), {rows:,} rows")
    return "; ".join(out)


def report(
    args: argparse.Namespace, local_runs: dict[int, list[dict]], by_sampling: dict[str, list]
) -> None:
    print(
        "| fit | fit s | set-up s | s/round | peak RSS MB (growth) | final objective | "
        "true reward |"
    )
    print("|---|---:|---:|---:|---|---:|---:|")
    fits = [(f"in memory, {t} thread{'s' * (t > 1)}", runs) for t, runs in local_runs.items()]
    dask_fits = [
        (f"Dask, {args.workers} workers x 1 thread, row_sampling={sampling!r} "
         f"({runs[-1]['sampled_rounds']} rounds sampled)", runs)
        for sampling, runs in by_sampling.items()
    ]  # fmt: skip
    for label, runs in [*fits, *dask_fits]:
        rss = worker_rss(runs) if "workers" in runs[0] else client_rss(runs)
        print(
            f"| {label} | {spread([r['seconds'] for r in runs], 1)} "
            f"| {spread([r['setup'] for r in runs], 1)} "
            f"| {spread([r['per_round'] for r in runs], 3)} | {rss} "
            f"| {runs[-1]['objective']:.5f} | {runs[-1]['reward']:.4f} |"
        )
    print()
    dask_runs = next(iter(by_sampling.values()))
    if len(by_sampling) == 2:
        (a, runs_a), (b, runs_b) = by_sampling.items()
        pairs = list(zip(runs_b, runs_a, strict=True))
        print(
            f"Dask {b!r} / {a!r}: whole fit "
            f"{spread([x['seconds'] / y['seconds'] for x, y in pairs])}, per round "
            f"{spread([x['per_round'] / y['per_round'] for x, y in pairs])}; true reward "
            f"{runs_b[-1]['reward'] - runs_a[-1]['reward']:+.4f}"
        )
    print(f"Dask ({next(iter(by_sampling))!r}) / in memory, {args.repeats} alternating pairs, "
          f"median (min–max):")  # fmt: skip
    for threads, runs in local_runs.items():
        pairs = list(zip(dask_runs, runs, strict=True))
        fit_ratio = [d["seconds"] / m["seconds"] for d, m in pairs]
        round_ratio = [d["per_round"] / m["per_round"] for d, m in pairs]
        print(
            f"  against {threads} thread(s): whole fit ({args.rounds} rounds) "
            f"{spread(fit_ratio)}, per round {spread(round_ratio)}"
        )
    growth = max(r["client_growth"] for runs in by_sampling.values() for r in runs)
    print(f"client RSS growth during the Dask fits: {growth / MB:,.0f} MB (never the rows)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=20)
    parser.add_argument("--actions", type=int, default=5)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--num-leaves", type=int, default=31)
    parser.add_argument("--workers", type=int, default=2, help="Dask workers, 1 thread each")
    parser.add_argument("--threads", default="2", help="threads of the in-memory fits: 1,2")
    parser.add_argument("--repeats", type=int, default=3, help="alternating pairs of fits")
    parser.add_argument("--memory-limit", default="6GiB", help="per worker (LocalCluster)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--dask-sampling",
        default="auto",
        help="row_sampling of the Dask fits, e.g. none,auto (each fitted every repeat)",
    )
    args = parser.parse_args()
    args.threads = [int(t) for t in args.threads.split(",")]
    args.dask_sampling = args.dask_sampling.split(",")

    n, d, K = args.rows, args.features, args.actions
    print(
        f"{n:,} rows, d={d}, K={K}, {args.partitions} partitions, {args.rounds} rounds, "
        f"num_leaves={args.num_leaves}; load average {psutil.getloadavg()}"
    )
    print(f"logged data: {n * (d + 3) * 8 / MB:,.0f} MB; designed rows (n*K x (d+1) float64, never "
          f"built): {n * K * (d + 1) * 8 / MB:,.0f} MB")  # fmt: skip
    local_runs, dask_runs = run(args)
    print()
    report(args, local_runs, dask_runs)
    print(f"load average at the end {psutil.getloadavg()}")


if __name__ == "__main__":
    main()
