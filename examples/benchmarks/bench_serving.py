"""Serving speed of a fitted LightGBM policy: one context per call, and large batches.

Fits ``opboost.Booster(n_rounds=100)`` on digits logs, then, in ONE process (ratios only:
absolute times on a shared machine move between runs):

1. single context: ``Policy.predict(x)`` against LightGBM's own single-thread predict of the
   same trees on the same designed rows (``booster.predict(rows, num_threads=1,
   raw_score=True)``, rows built outside the timing), interleaved call by call; p50 and p99
   of each over ``--calls`` calls and their ratio. ``Policy.predict`` with the previous
   (HEAD before the serving change) predict path is timed in the same loop for reference.
2. batch: ``decision_function`` on ``--batch`` contexts (K designed rows each), the current
   path against the previous one, interleaved ``--repeats`` times; the new/old ratio of
   each repeat and their median. Both paths must give bit-identical scores.

Run: ``python examples/benchmarks/bench_serving.py`` (about a minute).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

import opboost
from opboost.api.learner_toolkit import as_contexts
from opboost.api.numerics.design import stacked_design
from opboost.lgbm.ensemble import LightGBMEnsemble
from opboost.lgbm.rows import design_rows
from opboost.simulation.datasets.bundled import Digits
from opboost.simulation.supervised import supervised_to_bandit

_OLD_CHUNK = 1 << 15


def _old_design_rows(X: Any, n_actions: int, design: str) -> Any:
    """``design_rows`` before the serving change (kept for the comparison)."""
    if design == "per_action":
        return X
    encoding = "onehot" if design == "stacked_onehot" else "index"
    dtype = X.dtype if X.dtype in (np.float32, np.float64) else np.float64
    return stacked_design(X, n_actions, dtype=dtype, action_encoding=encoding)


def old_decision_function(ensemble: LightGBMEnsemble, X: Any) -> np.ndarray:
    """``LightGBMEnsemble.decision_function`` before the serving change (kept for the
    comparison): LightGBM's default threads on every call, rows built through scipy."""
    X = as_contexts(X, ensemble.n_features)
    m, K = X.shape[0], ensemble.n_actions
    if ensemble.booster.num_trees() == 0:
        return np.zeros((m, K))
    if ensemble.action_design == "per_action":
        return np.asarray(ensemble.booster.predict(X, raw_score=True)).reshape(m, K)
    out = np.empty((m, K))
    for start in range(0, m, _OLD_CHUNK):
        stop = min(start + _OLD_CHUNK, m)
        rows = _old_design_rows(X[start:stop], K, ensemble.action_design)
        out[start:stop] = ensemble.booster.predict(rows, raw_score=True).reshape(-1, K)
    return out


def _timed(f: Any, *args: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    out = f(*args)
    return time.perf_counter() - start, out


def _us(seconds: list[float], q: float) -> float:
    return float(np.percentile(seconds, q)) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    digits = Digits().load()
    X = np.asarray(digits.X, dtype=np.float64)
    logged = supervised_to_bandit(X, digits.y, n_actions=10, random_state=0).logged
    # F_0 = 0: a policy of exactly --rounds trees (the default's reward-model start adds 200)
    policy = opboost.Booster(n_rounds=args.rounds, warm_start="none", random_state=0)
    policy = policy.fit(logged).policy_
    ensemble = policy.ensemble
    booster, K, design = ensemble.booster, ensemble.n_actions, ensemble.action_design
    print(
        f"policy: {booster.num_trees()} trees, design {design}, K={K}, d={X.shape[1]}; "
        f"lightgbm {opboost.lgbm.ensemble.lgb.__version__}"
    )

    # 1. one context per call, interleaved (the order within a call rotates)
    contexts = [X[i : i + 1] for i in range(X.shape[0])]
    rows = [design_rows(x, K, design) for x in contexts]
    new_t: list[float] = []
    lgb_t: list[float] = []
    old_t: list[float] = []
    for i in range(args.calls + 50):  # the first 50 calls warm up and are dropped
        j = i % len(contexts)
        x, r = contexts[j], rows[j]
        calls = [
            (new_t, policy.predict, (x,)),
            (lgb_t, lambda r: booster.predict(r, num_threads=1, raw_score=True), (r,)),
            (old_t, lambda x: np.argmax(old_decision_function(ensemble, x), axis=1), (x,)),
        ]
        outs = {}
        for k in range(3):
            times, f, a = calls[(i + k) % 3]
            seconds, outs[id(times)] = _timed(f, *a)
            if i >= 50:
                times.append(seconds)
        ref = np.asarray(outs[id(lgb_t)]).reshape(1, K).argmax(axis=1)
        if not (np.array_equal(outs[id(new_t)], ref) and np.array_equal(outs[id(old_t)], ref)):
            raise SystemExit(f"predictions differ on context {j}")
    print(f"\nsingle context, {args.calls} interleaved calls each (microseconds):")
    print(f"{'':34s}{'p50':>9s}{'p99':>10s}")
    for name, t in (
        ("Policy.predict", new_t),
        ("LightGBM predict, num_threads=1", lgb_t),
        ("Policy.predict, previous path", old_t),
    ):
        print(f"{name:34s}{_us(t, 50):9.1f}{_us(t, 99):10.1f}")
    for name, t in (("Policy.predict / LightGBM", new_t), ("previous / LightGBM", old_t)):
        print(
            f"ratio {name:28s}{_us(t, 50) / _us(lgb_t, 50):9.2f}{_us(t, 99) / _us(lgb_t, 99):10.2f}"
        )

    # 2. large batches, new against old, interleaved
    batch = X[np.random.default_rng(0).integers(0, X.shape[0], args.batch)]
    ratios = []
    for repeat in range(args.repeats):
        if repeat % 2:
            t_old, old = _timed(old_decision_function, ensemble, batch)
            t_new, new = _timed(ensemble.decision_function, batch)
        else:
            t_new, new = _timed(ensemble.decision_function, batch)
            t_old, old = _timed(old_decision_function, ensemble, batch)
        if not np.array_equal(new, old):
            raise SystemExit("batch scores differ between the new and the previous path")
        ratios.append(t_new / t_old)
    print(
        f"\nbatch of {args.batch:,} contexts ({args.batch * K:,} designed rows), "
        f"decision_function new/old per repeat: {', '.join(f'{r:.2f}' for r in ratios)}; "
        f"median {np.median(ratios):.2f} (bit-identical scores)"
    )


if __name__ == "__main__":
    main()
