"""Fit cost on a catalogue with item features and per-row candidate sets against K fixed
one-hot actions at the same n (issue 19, item 7), as ratios measured in one run.

    python examples/benchmarks/bench_candidates.py [--n 20000] [--rounds 100] [--repeats 3]

Cases, each fitted in a fresh subprocess (so peak memory is the fit's own), alternating
over ``--repeats`` rounds, the default Booster on one LightGBM thread:

* ``fixed K=20``: the simulated rows with the logged slot as one of K = 20 fixed actions
  (no candidates, no item features): today's stacked design, n * 20 rows.
* ``catalogue 1000 x 20``: the same rows as logged, a 1,000-item catalogue with 5 item
  features and 20 candidates per row: n * 20 pair rows [x; phi(a)].
* ``catalogue 1000 x 20, d_a=2``: two item features instead of five (the trees' cost grows
  with the columns, as for context features).
* ``catalogue 10000 x 20`` and ``catalogue 1000 x 20, 2n``: memory must follow n * 20, never
  n * catalogue size.

Printed per case: median fit seconds and peak RSS growth over the process's RSS before the
fit (LightGBM's own memory included) of the timed processes, the peak traced Python/numpy
allocation during the fit (tracemalloc, in one more process per case: tracing slows numpy
down, so the timed processes do not trace), and the ratios to ``fixed K=20``.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc

CANDIDATES, D_X, D_ITEM = 20, 10, 5

#: name -> (rows as a multiple of --n, catalogue size, item features (0: fixed actions)).
CASES = {
    "fixed K=20": (1, 1000, 0),
    "catalogue 1000 x 20": (1, 1000, D_ITEM),
    "catalogue 1000 x 20, d_a=2": (1, 1000, 2),
    "catalogue 10000 x 20": (1, 10000, D_ITEM),
    "catalogue 1000 x 20, 2n": (2, 1000, D_ITEM),
}


def _rss_kib() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() // 1024


def run_case(name: str, n: int, rounds: int, trace: bool) -> dict[str, float]:
    """Fit one case in this process; its seconds and memory (MiB; traced only if ``trace``)."""
    from opboost import Booster, LoggedBandit
    from opboost.api.data.slots import SlotView
    from opboost.simulation import simulate_catalogue

    scale, n_items, d_item = CASES[name]
    sim = simulate_catalogue(n * scale, n_items, CANDIDATES, D_X, max(d_item, 1), random_state=0)
    logs = sim.logged
    if not d_item:  # the same rows, the logged slot as one of 20 fixed actions
        view = SlotView.from_candidates(logs.candidates, len(logs), logs.n_actions)
        logs = LoggedBandit(
            logs.contexts, view.slot_of(logs.actions), logs.propensities, logs.rewards,
            CANDIDATES,
        )  # fmt: skip
    del sim
    # F_0 = 0 in both cases: the reward-model start applies to fixed-action logs only
    booster = Booster(
        n_rounds=rounds, warm_start="none", random_state=0, base_learner_params={"num_threads": 1}
    )
    before, peak_before = _rss_kib(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if trace:
        tracemalloc.start()
    start = time.perf_counter()
    booster.fit(logs)
    seconds = time.perf_counter() - start
    traced = tracemalloc.get_traced_memory()[1] if trace else float("nan")
    tracemalloc.stop()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "seconds": seconds,
        "traced_mib": traced / 2**20,
        "rss_mib": (peak - before) / 1024,
        "rss_peak_set_by_fit": peak > peak_before,
        "rows": len(logs),
        "rounds": int(booster.n_rounds_),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        print(json.dumps(run_case(args.case, args.n, args.rounds, args.trace)))
        return

    def run(name: str, trace: bool) -> dict[str, float]:
        command = [sys.executable, __file__, "--case", name, "--n", str(args.n)]
        command += ["--rounds", str(args.rounds)] + (["--trace"] if trace else [])
        out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        return json.loads(out.strip().splitlines()[-1])

    results: dict[str, list[dict[str, float]]] = {name: [] for name in CASES}
    for _ in range(args.repeats):
        for name in CASES:
            results[name].append(run(name, trace=False))
    for name in CASES:
        traced = run(name, trace=True)["traced_mib"]
        for r in results[name]:
            r["traced_mib"] = traced
    print(
        f"n={args.n:,}, {args.rounds} rounds, {CANDIDATES} candidates a row, d_x={D_X}, "
        f"d_item={D_ITEM}, one LightGBM thread, median of {args.repeats} fresh processes "
        f"(traced: one more, tracing)"
    )
    base = {key: statistics.median(r[key] for r in results["fixed K=20"]) for key in
            ("seconds", "traced_mib", "rss_mib")}  # fmt: skip
    header = f"{'case':28} {'rows':>8} {'fit s':>7} {'traced MiB':>11} {'RSS MiB':>8}"
    print(header + f" {'time x':>7} {'traced x':>9} {'RSS x':>6}")
    for name, runs in results.items():
        med = {key: statistics.median(r[key] for r in runs) for key in base}
        ratios = " ".join(
            f"{med[key] / base[key]:>{w}.2f}"
            for key, w in (("seconds", 7), ("traced_mib", 9), ("rss_mib", 6))
        )
        print(
            f"{name:28} {runs[0]['rows']:>8,} {med['seconds']:>7.2f} "
            f"{med['traced_mib']:>11.1f} {med['rss_mib']:>8.1f} {ratios}"
        )
    print("per-repeat fit seconds:")
    for name, runs in results.items():
        print(f"  {name:28} " + ", ".join(f"{r['seconds']:.2f}" for r in runs))


if __name__ == "__main__":
    main()
