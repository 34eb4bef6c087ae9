"""What the default costs against reward regression, by log size (issue 48, item 4).

One user-like table (``opboost.simulation.tabular_worlds.tabular_world``, world ``--world``)
drawn at each of ``--rows`` logged rows; ``RewardRegression()`` and ``Booster()`` (both with
their default threads) are fitted alternately ``--repeats`` times in this process, and the
table gives their median wall seconds, the ratio of the medians, what the default kept
(``best_round_``: 0 is the start alone; ``fallback_``), how many rounds it grew before its
paired rule stopped them (``n_rounds_``) and both policies' true value on the world's test
contexts. ``--busy`` runs a process that keeps one core busy beside the fits (a user's machine
is rarely idle). The load average is printed with the table.

    python examples/benchmarks/bench_default_cost.py --rows 10000 100000
    python examples/benchmarks/bench_default_cost.py --rows 10000 100000 --busy
    python examples/benchmarks/bench_default_cost.py --rows 1000000 --repeats 1
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import time
from typing import Any

import numpy as np

from opboost import Booster
from opboost.algorithms.policy_learners.reward_regression import RewardRegression
from opboost.simulation.tabular_worlds import tabular_world


def _burn(stop: Any) -> None:  # pragma: no cover - runs in the busy process
    x = 0.0
    while not stop.is_set():
        for i in range(100_000):
            x += i * 1e-9


def timed(world: Any, repeats: int) -> dict[str, Any]:
    """Median seconds of each method over ``repeats`` alternating fits, and the default's
    choice."""
    logs = world.logged_bandit()
    X_test = logs.schema.encode(world.test_contexts, "bench_default_cost")
    seconds: dict[str, list[float]] = {"reward_regression": [], "default": []}
    out: dict[str, Any] = {}
    for _ in range(repeats):
        for name in seconds:
            model = (
                RewardRegression(random_state=0)
                if name == "reward_regression"
                else Booster(random_state=0)
            )
            start = time.perf_counter()
            model.fit(logs)
            seconds[name].append(time.perf_counter() - start)
            out[f"{name}_value"] = world.value(np.asarray(model.predict(X_test)))
            if name == "default":
                out.update(
                    kept=int(model.best_round_),
                    grown=int(model.n_rounds_),
                    fallback=model.fallback_ or "-",
                )
    out.update({name: float(np.median(s)) for name, s in seconds.items()})
    out["ratio"] = out["default"] / out["reward_regression"]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--world", type=int, default=1, help="tabular world seed (default 1)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--busy", action="store_true", help="one busy core beside the fits")
    args = parser.parse_args(argv)
    stop = multiprocessing.Event()
    busy = None
    if args.busy:
        busy = multiprocessing.Process(target=_burn, args=(stop,), daemon=True)
        busy.start()
    try:
        print(f"world {args.world}, {args.repeats} alternating fits each, busy core: {args.busy}")
        print(
            "\n| rows | reward_regression s | default s | default / RR | rounds kept | "
            "rounds grown | fallback | RR value | default value |"
        )
        print("|--:|--:|--:|--:|--:|--:|:-:|--:|--:|")
        for n in args.rows:
            world = tabular_world(args.world, n_rows=n, n_test=10_000)
            r = timed(world, args.repeats)
            print(
                f"| {n:,} | {r['reward_regression']:.2f} | {r['default']:.2f} | "
                f"{r['ratio']:.1f} | {r['kept']} | {r['grown']} | {r['fallback']} | "
                f"{r['reward_regression_value']:.4f} | {r['default_value']:.4f} |",
                flush=True,
            )
    finally:
        stop.set()
        if busy is not None:
            busy.join(timeout=5)
    print(f"\nload average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
