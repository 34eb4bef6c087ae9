"""Peak memory of a Booster fit per stacked row, against the lower bound that refuses fits
which cannot fit (``opboost.api.numerics.memory_limit.stacked_fit_bytes``).

Each case runs in a fresh child process (peak RSS, ``VmHWM``, is per process): random logs of
``--rows`` contexts x ``--features`` features x ``--actions`` actions, a 3-round fit on one
LightGBM thread, and the fit's peak RSS above the RSS with the logs built, per stacked row,
printed beside the estimate's bytes per stacked row.

    python examples/benchmarks/bench_fit_memory.py --rows 300 --actions 30000 --features 2 20
    python examples/benchmarks/bench_fit_memory.py --rows 300 --actions 30000 --warm-start auto
"""

from __future__ import annotations

import argparse
import subprocess
import sys

CHILD = r"""
import sys
import numpy as np
import opboost
from opboost.api.numerics.memory_limit import stacked_fit_bytes

n, k, d, warm_start = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rng = np.random.default_rng(0)
logs = opboost.LoggedBandit(rng.normal(size=(n, d)), rng.integers(0, k, n), np.full(n, 1 / k),
                            rng.random(n), k)

def peak():
    text = open("/proc/self/status").read()
    return int(text.split("VmHWM:")[1].split()[0]) * 1024

before = peak()
opboost.Booster(n_rounds=3, warm_start=warm_start, base_learner_params={"num_threads": 1},
                random_state=0).fit(logs)
rows = n * k
print(f"{n:>6} {k:>7} {d:>3} {warm_start:>5} {(peak() - before) / rows:>9.1f} "
      f"{stacked_fit_bytes(logs)[0] / rows:>9.1f}")
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=300)
    parser.add_argument("--actions", type=int, default=30000)
    parser.add_argument("--features", type=int, nargs="+", default=[2, 20])
    parser.add_argument("--warm-start", default="none", help="'none' or 'auto' (the default)")
    args = parser.parse_args()
    print("  rows actions   d start  measured  estimate   (bytes per stacked row)")
    for d in args.features:
        command = [sys.executable, "-c", CHILD, str(args.rows), str(args.actions), str(d)]
        subprocess.run([*command, args.warm_start], check=True)


if __name__ == "__main__":
    main()
