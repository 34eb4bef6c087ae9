"""Does the default Booster ever lose to trivial policies? True test reward with 95% intervals.

Per data set and seed: a stratified 70/30 train/test split, supervised-to-bandit logging on the
train rows (London et al., appendix F), then the TRUE expected reward on the labelled test rows
of

* ``logging``      the logging policy (stochastic);
* ``constant``     the best constant action, chosen on the logs by SNIPS;
* ``default``      ``Booster()`` (BOPL-S, IPS, LightGBM trees, 100 rounds), argmax policy;
* ``select``       ``Booster(validation_fraction=0.2)``: rounds chosen by held-out SNIPS;
* ``select_safe``  the same with ``safe=True`` (falls back to the best constant action when
                   the lower 95% bound does not beat it); the number of fallbacks is printed.

Mean and Student-t 95% interval over seeds. Real data sets (car, nursery, dna, ...) are read
from ``--data-dir``.

    python examples/benchmarks/bench_defaults.py --seeds 5
    python examples/benchmarks/bench_defaults.py --datasets car nursery \\
        --data-dir /work/shared/datasets --seeds 3
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
from scipy import stats
from sklearn.model_selection import train_test_split

from opboost import Booster
from opboost.registry import get_registry
from opboost.selection import constant_action_values
from opboost.simulate import expected_reward, supervised_to_bandit

METHODS = ("logging", "constant", "default", "select", "select_safe")


def one_seed(data, seed: int, n_rounds: int) -> dict[str, float]:
    """True test rewards of every method for one seed; plus the fallback indicator."""
    X, y, k = data.X, data.y, data.n_actions
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.3, random_state=seed, stratify=y
    )
    sim = supervised_to_bandit(X_train, y_train, n_actions=k, reward=data.reward, random_state=seed)
    logged, eye = sim.logged, np.eye(k)

    def reward(actions: np.ndarray) -> float:
        return expected_reward(eye[actions], y_test, data.reward)

    best = int(np.nanargmax(constant_action_values(logged)))
    out = {
        "logging": expected_reward(sim.logging_policy.predict_proba(X_test), y_test, data.reward),
        "constant": reward(np.full(X_test.shape[0], best)),
    }
    common = {"n_rounds": n_rounds, "base_learner_params": {"num_threads": 1}, "random_state": 0}
    out["default"] = reward(Booster(**common).fit(logged).predict(X_test))
    select = Booster(validation_fraction=0.2, **common).fit(logged)
    out["select"] = reward(select.predict(X_test))
    safe = Booster(validation_fraction=0.2, safe=True, **common).fit(logged)
    out["select_safe"] = reward(safe.predict(X_test))
    out["fallback"] = float(safe.fallback_ is not None)
    out["best_round"] = float(select.best_round_)
    return out


def summary(values: list[float]) -> str:
    a = np.asarray(values)
    if len(a) < 2:
        return f"{a.mean():.3f}"
    half = stats.t.ppf(0.975, len(a) - 1) * a.std(ddof=1) / np.sqrt(len(a))
    return f"{a.mean():.3f} ± {half:.3f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["digits", "wine", "synthetic_multiclass"])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--n-rounds", type=int, default=100)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--json", default=None, help="write the per-seed results here")
    args = parser.parse_args(argv)
    registry, results = get_registry(), {}
    print("| data set | " + " | ".join(METHODS) + " | fallbacks | mean best round |")
    print("|---" * (len(METHODS) + 3) + "|")
    for name in args.datasets:
        start = time.perf_counter()
        data = registry.get("dataset", name)().load(args.data_dir)
        runs = [one_seed(data, seed, args.n_rounds) for seed in range(args.seeds)]
        results[name] = runs
        cells = [summary([r[m] for r in runs]) for m in METHODS]
        fallbacks = int(sum(r["fallback"] for r in runs))
        rounds = np.mean([r["best_round"] for r in runs])
        print(
            f"| {name} | " + " | ".join(cells) + f" | {fallbacks}/{len(runs)} | {rounds:.1f} |",
            flush=True,
        )
        print(f"  ({name}: {time.perf_counter() - start:.0f} s)", file=sys.stderr, flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
