"""Time per boosting round of ``Booster(random_state=0)``: this checkout against another one
(``--before``, e.g. a checkout of an older commit), in alternating processes.

Per data set, the logs of ``bench_peers.py``'s protocol (seed 0, at most ``--max-rows`` rows);
each process fits once to warm up and once timed, and reports the wall and CPU milliseconds of
the boosting rounds (the engine's ``run_rounds``, the reward-model start left out) divided
by the rounds run. The two checkouts' processes alternate ``--repeats`` times; the table gives
the medians and their ratio (this / before). ``--threads 1`` fits with one LightGBM thread
(``base_learner_params={"num_threads": 1}``: the Python work per round); ``--threads default``
with each checkout's own default. Wall-clock and CPU times on a shared machine: the load
average is printed with the table.

    git worktree add /tmp/before 2a064fa
    python examples/benchmarks/bench_round_time.py --data-dir "$OPBOOST_DATA" --before /tmp/before
    python examples/benchmarks/bench_round_time.py --data-dir "$OPBOOST_DATA" \\
        --before /tmp/before --threads default

The plugins register through entry points, which name their modules: a checkout from before
the modules moved (``opboost.core``, ``opboost.algorithms``: issue 38) needs an environment of
its own, ``--before-python /tmp/before-venv/bin/python`` (``pip install -e /tmp/before``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DATASETS = ("adult", "car", "nursery")


def child(args: argparse.Namespace) -> None:
    """In a process whose ``sys.path`` starts with a checkout: per data set, the per-round
    wall and CPU milliseconds of one timed fit (after one to warm up), as JSON."""
    sys.path.insert(0, str(HERE))
    from bench_peers import load

    import opboost
    from opboost import Booster

    try:  # the module whose run_rounds a fit calls: the engine's, or an older tree's Booster's
        import opboost.core.loop as loop_module
    except ImportError:
        import opboost.booster as loop_module

    timings: list[tuple[float, float, int]] = []
    run_rounds = loop_module.run_rounds

    def timed(fit, n_rounds, *rest, **options):
        wall, cpu = time.perf_counter(), time.process_time()
        run_rounds(fit, n_rounds, *rest, **options)
        timings.append((time.perf_counter() - wall, time.process_time() - cpu, fit.round))

    loop_module.run_rounds = timed
    params = {} if args.threads == "default" else {"num_threads": int(args.threads)}
    out = {}
    for name in args.datasets:
        source = load(name, args.data_dir, args.max_rows)
        if isinstance(source, str):
            out[name] = source
            continue
        logged = source.trial(0).logged
        for _ in range(2):  # the first warms up
            # every round in one fit (older checkouts take validation_fraction=None too)
            Booster(random_state=0, base_learner_params=params, validation_fraction=None).fit(
                logged
            )
        wall, cpu, rounds = timings[-1]
        out[name] = [1e3 * wall / rounds, 1e3 * cpu / rounds]
    print(json.dumps({"package": str(Path(opboost.__file__).parents[1]), "ms": out}))


def run_child(checkout: Path, args: argparse.Namespace, python: str = sys.executable) -> dict:
    """One child process of ``python`` with ``checkout`` first on its path."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(checkout), str(HERE)])}
    command = [python, __file__, "--child", "--threads", args.threads]
    command += ["--max-rows", str(args.max_rows), "--datasets", *args.datasets]
    if args.data_dir:
        command += ["--data-dir", args.data_dir]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if Path(result["package"]).resolve() != checkout.resolve():
        raise SystemExit(f"the child imported opboost from {result['package']}, not {checkout}")
    return result["ms"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="the other checkout (its repository root)")
    parser.add_argument(
        "--before-python",
        default=sys.executable,
        help="the interpreter for --before (default this one): its environment's opboost entry "
        "points must name the built-in plugins where that checkout has them",
    )
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--max-rows", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", default="1", help='"1" (default) or "default"')
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args)
        return
    if args.before is None:
        parser.error("--before is required: the checkout to compare with")
    this = HERE.parents[1]
    runs: dict[str, list[dict]] = {"this": [], "before": []}
    for _ in range(args.repeats):
        runs["this"].append(run_child(this, args))
        runs["before"].append(run_child(args.before, args, args.before_python))
    print(f"Command: `python {' '.join(sys.argv)}`\n")
    print(
        "| data set | before: wall ms/round | CPU ms | this: wall ms/round | CPU ms | "
        "ratio: wall | CPU |"
    )
    print("|---|--:|--:|--:|--:|--:|--:|")
    for name in args.datasets:
        if isinstance(runs["this"][0][name], str):
            print(f"| {name} | skipped: {runs['this'][0][name]} | | | | | |")
            continue
        med = {k: np.median([r[name] for r in v], axis=0) for k, v in runs.items()}
        ratio = med["this"] / med["before"]
        print(
            f"| {name} | {med['before'][0]:.3f} | {med['before'][1]:.3f} | {med['this'][0]:.3f} | "
            f"{med['this'][1]:.3f} | {ratio[0]:.2f} | {ratio[1]:.2f} |"
        )
    print(f"\nLoad average at the end: {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs).")


if __name__ == "__main__":
    main()
