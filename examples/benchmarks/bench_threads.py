"""The default thread count (``num_threads="auto"``) against one thread and against every core,
on an idle machine and beside a busy process, in one run.

Per data set, ``Booster(random_state=0, n_rounds=--rounds)`` is fitted on logs simulated from
the data set (``supervised_to_bandit``, seed 0: 90% of the rows logged, 10% train the logger)
with ``base_learner_params={"num_threads": t}`` for t = "auto" (the default), 1 and 0
(LightGBM's own default, every core: the default before issue 36), the settings alternating
``--repeats`` times; then the script starts a busy process (``python -c "while True: pass"``)
and fits "auto" and 1 again beside it (every core beside a busy process is left out: that is
the slow case issue 36 removed), and stops it. The table gives each setting's median wall
seconds, the ratios of the medians, and the threads "auto" chose (read from the fitted model).
The data sets span small logs to a million stacked rows:

* ``small``    the issue's small log: 3,000 rows x 20 features, K = 4 (12,000 stacked rows);
* ``nursery``, ``adult``, ``letter``  the real data sets, all their rows (``--data-dir``,
  default ``$OPBOOST_DATA``; skipped with a note when missing);
* ``large``    100,000 rows x 20 features, K = 10 (1,000,000 stacked rows).

Wall-clock seconds on a shared machine: the load average is printed with the table.

    python examples/benchmarks/bench_threads.py --data-dir "$OPBOOST_DATA"
    python examples/benchmarks/bench_threads.py --datasets small large --repeats 5
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from opboost import Booster
from opboost.simulation.datasets.bundled import SyntheticMulticlass
from opboost.simulation.supervised import supervised_to_bandit

sys.path.insert(0, str(Path(__file__).resolve().parent))  # examples/benchmarks: not a package
from bench_peers import supervised_data

SYNTHETIC = {
    "small": {"n_samples": 3_334, "n_features": 20, "n_classes": 4, "n_informative": 10},
    "large": {"n_samples": 111_112, "n_features": 20, "n_classes": 10, "n_informative": 10},
}
DATASETS = ("small", "nursery", "adult", "letter", "large")
IDLE, BUSY = ("auto", 1, 0), ("auto", 1)


def logs(name: str, data_dir: str | None):
    """Logs simulated from every row of the data set (seed 0), or the reason it is skipped."""
    if name in SYNTHETIC:
        data = SyntheticMulticlass(**SYNTHETIC[name], random_state=0).load()
    else:
        data = supervised_data(name, data_dir)
        if isinstance(data, str):
            return data
    return supervised_to_bandit(data.X, data.y, n_actions=data.n_actions, random_state=0).logged


def fit_seconds(logged, threads, rounds: int) -> tuple[float, int]:
    """Wall seconds of one fit, and the LightGBM threads its rounds used."""
    booster = Booster(random_state=0, n_rounds=rounds, base_learner_params={"num_threads": threads})
    start = time.perf_counter()
    booster.fit(logged)
    seconds = time.perf_counter() - start
    text = booster.policy_.ensemble.booster.model_to_string(num_iteration=1)
    used = re.search(r"\[num_threads: (-?\d+)\]", text)
    return seconds, int(used.group(1)) if used else -1


def timed(logged, settings, repeats: int, rounds: int) -> tuple[dict, int]:
    """Median seconds per setting (alternating), and the threads "auto" chose."""
    seconds: dict = {t: [] for t in settings}
    chosen = -1
    for _ in range(repeats):
        for threads in settings:
            took, used = fit_seconds(logged, threads, rounds)
            seconds[threads].append(took)
            chosen = used if threads == "auto" else chosen
    return {t: float(np.median(s)) for t, s in seconds.items()}, chosen


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args(argv)
    print(f"Command: `python {' '.join(sys.argv)}`\n")
    print(
        "| data set | stacked rows x features | auto's threads (idle, busy) | idle: auto s | "
        "1 thread s | every core s | auto / 1 | auto / every core | busy: auto s | "
        "1 thread s | auto / 1 |"
    )
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for name in args.datasets:
        logged = logs(name, args.data_dir)
        if isinstance(logged, str):
            print(f"| {name} | skipped: {logged} |" + " |" * 9)
            continue
        size = f"{len(logged) * logged.n_actions:,} x {logged.n_features + 1}"
        idle, idle_threads = timed(logged, IDLE, args.repeats, args.rounds)
        busy_process = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            time.sleep(1.0)  # let it settle on a core
            busy, busy_threads = timed(logged, BUSY, args.repeats, args.rounds)
        finally:
            busy_process.kill()
            busy_process.wait()
        print(
            f"| {name} | {size} | {idle_threads}, {busy_threads} | {idle['auto']:.2f} | "
            f"{idle[1]:.2f} | {idle[0]:.2f} | {idle['auto'] / idle[1]:.2f} | "
            f"{idle['auto'] / idle[0]:.2f} | {busy['auto']:.2f} | {busy[1]:.2f} | "
            f"{busy['auto'] / busy[1]:.2f} |",
            flush=True,
        )
    print(f"\nLoad average at the end: {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs).")


if __name__ == "__main__":
    main()
