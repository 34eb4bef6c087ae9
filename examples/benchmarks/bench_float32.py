"""Memory of a fit on float32 contexts against the same contexts as float64 (issue 24, item 3).

    python examples/benchmarks/bench_float32.py [--rows 200000] [--features 50] [--actions 10]
        [--rounds 5]

Each case runs in a fresh subprocess: it builds the contexts in the given dtype (a copy of one
seeded float32 matrix, so both hold the same numbers), records its resident set size, resets
the kernel's peak mark (``/proc/self/clear_refs``, Linux) and then builds the LoggedBandit and
fits ``Booster(warm_start="none")`` with one thread. Prints the peak RSS above the pre-fit
RSS (MB, ``VmHWM``, LightGBM's native allocations included), the ratio and whether both fits
give the same policy (a digest of their scores on 1,000 rows).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys

import numpy as np


def rss_mb(field: str) -> float:
    with open("/proc/self/status") as fh:
        line = next(x for x in fh if x.startswith(field + ":"))
    return int(line.split()[1]) / 1024


def child(args: argparse.Namespace) -> None:
    from opboost import Booster, LoggedBandit

    rng = np.random.default_rng(0)
    n, d, k = args.rows, args.features, args.actions
    X = rng.normal(size=(n, d)).astype(np.float32).astype(args.child)
    actions = rng.integers(k, size=n)
    rewards = (X[np.arange(n), actions % d] > 0).astype(float)
    before = rss_mb("VmRSS")
    with open("/proc/self/clear_refs", "w") as fh:  # reset VmHWM to the current RSS
        fh.write("5")
    logs = LoggedBandit(X, actions, np.full(n, 1.0 / k), rewards, k)
    booster = Booster(
        n_rounds=args.rounds,
        warm_start="none",
        random_state=0,
        base_learner_params={"num_threads": 1},
    ).fit(logs)
    peak = rss_mb("VmHWM")
    scores = booster.decision_function(X[:1000])
    digest = hashlib.sha256(np.ascontiguousarray(scores).tobytes()).hexdigest()[:16]
    print(json.dumps({"before": before, "peak": peak, "digest": digest}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--features", type=int, default=50)
    parser.add_argument("--actions", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    results = {}
    for dtype in ("float64", "float32"):
        command = [sys.executable, __file__, "--child", dtype] + [
            f"--{name}={getattr(args, name)}" for name in ("rows", "features", "actions", "rounds")
        ]
        out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        results[dtype] = json.loads(out.strip().splitlines()[-1])
    stacked = args.rows * args.actions
    print(
        f"{args.rows:,} contexts x {args.features} features, K = {args.actions} "
        f"({stacked:,} stacked rows), {args.rounds} rounds, 1 thread"
    )
    for dtype, r in results.items():
        fit = r["peak"] - r["before"]
        print(
            f"  {dtype}: fit peak above pre-fit RSS {fit:8.1f} MB "
            f"({fit * 2**20 / stacked:6.1f} bytes per stacked row), policy {r['digest']}"
        )
    ratio = (results["float32"]["peak"] - results["float32"]["before"]) / (
        results["float64"]["peak"] - results["float64"]["before"]
    )
    same = results["float32"]["digest"] == results["float64"]["digest"]
    print(f"  float32 / float64: {ratio:.2f}; same policy: {same}")


if __name__ == "__main__":
    main()
