"""The boosted slate policy (``slate_boost``) against the rankers users fit on position-biased
slate logs (issue 51, deliverable 4), by the TRUE expected clicks on simulated slate worlds.

    python examples/benchmarks/bench_slates.py [--rows 3000] [--test-rows 3000] [--seeds 5]
        [--first-seed 0] [--worlds pbm_skewed pbm_flat cascade_skewed cascade_flat]
        [--methods ...]

Worlds (``make_slate_world``, 20 items, 8 candidates, 3 positions, examination 1/k): the
position-based and cascade click models, each logged by a skewed (Plackett–Luce temperature
0.5) and a flat (2.0) logger; seed s builds world s and logs it with seed 1000 + s. Methods,
each fitted on the same logs and scored on the same fresh test contexts (true values from
``world.expected_clicks``, so the comparisons are paired):

* ``slate_boost``: ``SlateBooster`` with the world's click model (``pbm`` or ``cascade``);
* ``slate_start``: its reward-model start alone (``n_rounds=0``: q(x, a, k=1), position a
  feature);
* ``reward_model``: ``reward_regression`` on the per-position rows (position ignored), items
  sorted by predicted reward;
* ``lambdarank_clicks``: LightGBM ``lambdarank`` on the clicks, one query per impression;
* ``lambdarank_position``: the same with the Dataset's ``position`` (unbiased LambdaMART);
* ``xgb_unbiased``: XGBoost ``rank:ndcg`` with ``lambdarank_unbiased=True`` (rows of a query
  in position order; skipped with a note when xgboost is not installed);
* ``logger``: the logging policy's exact value.

Every ranker reads [x; phi(a)] and ranks the top 3 of each test row's candidates. Printed: each
seed's values, then per world each method's mean and slate_boost's paired difference with
a Student-t 95% interval over seeds.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench_common import t_interval

from opboost.algorithms.policy_learners.reward_regression import RewardRegression
from opboost.algorithms.policy_learners.slate_boost import SlateBooster
from opboost.simulation import make_slate_world

WORLDS = {
    "pbm_skewed": {"click_model": "pbm", "logging_temperature": 0.5},
    "pbm_flat": {"click_model": "pbm", "logging_temperature": 2.0},
    "cascade_skewed": {"click_model": "cascade", "logging_temperature": 0.5},
    "cascade_flat": {"click_model": "cascade", "logging_temperature": 2.0},
}
METHODS = (
    "slate_boost",
    "slate_start",
    "reward_model",
    "lambdarank_clicks",
    "lambdarank_position",
    "xgb_unbiased",
    "logger",
)
ROUNDS = 100


def _pairs(contexts: np.ndarray, mask: np.ndarray, features: np.ndarray):
    rows, items = np.nonzero(mask)
    return rows, items, np.hstack([contexts[rows], features[items]])


def _top(scores: np.ndarray, mask: np.ndarray, length: int) -> np.ndarray:
    return np.argsort(-np.where(mask, scores, -np.inf), axis=1, kind="stable")[:, :length]


def ranker_rows(logs):
    """The per-position rows as a learning-to-rank set: features [x; phi(a)], clicks,
    positions and the impression (query) of each row, impression-major, top first."""
    rows, impression = logs.per_position_rows()
    features = np.hstack([rows.contexts, logs.item_features[rows.actions]])
    return features, rows.rewards, rows.positions, impression


def lambdarank_scores(logs, contexts, mask, *, position: bool, seed: int = 0) -> np.ndarray:
    """LightGBM lambdarank on the clicks (with the Dataset's ``position`` when asked):
    (m, K) scores of the test ``contexts`` over ``mask``."""
    import lightgbm as lgb

    features, clicks, positions, impression = ranker_rows(logs)
    data = lgb.Dataset(
        features,
        clicks,
        group=np.bincount(impression),
        position=positions if position else None,
    )
    params = {"objective": "lambdarank", "verbose": -1, "num_threads": 1, "seed": seed}
    model = lgb.train(params, data, num_boost_round=ROUNDS)
    rows, items, pairs = _pairs(contexts, mask, logs.item_features)
    out = np.full(mask.shape, -np.inf)
    out[rows, items] = model.predict(pairs)
    return out


def xgb_unbiased_scores(logs, contexts, mask, *, seed: int = 0) -> np.ndarray:
    """XGBoost ``rank:ndcg`` with ``lambdarank_unbiased=True`` (rows in position order)."""
    import xgboost as xgb

    features, clicks, _, impression = ranker_rows(logs)
    model = xgb.XGBRanker(
        objective="rank:ndcg",
        lambdarank_unbiased=True,
        n_estimators=ROUNDS,
        tree_method="hist",
        n_jobs=1,
        random_state=seed,
    )
    model.fit(features, clicks, qid=impression)
    rows, items, pairs = _pairs(contexts, mask, logs.item_features)
    out = np.full(mask.shape, -np.inf)
    out[rows, items] = model.predict(pairs)
    return out


def method_values(world, logs, contexts, mask, methods, seed: int) -> dict[str, np.ndarray]:
    """Each method's true expected clicks per test impression, (m,)."""
    length = world.slate_size
    values = {}
    for method in methods:
        if method == "logger":
            scores = np.where(mask, world.logits(contexts), -np.inf)
            values[method] = world.plackett_luce_value(contexts, scores, world.logging_temperature)
            continue
        if method in ("slate_boost", "slate_start"):
            rounds = {"n_rounds": 0} if method == "slate_start" else {}
            model = SlateBooster(click_model=world.click_model, random_state=seed, **rounds)
            ranking = model.fit(logs).rank(contexts, candidates=mask)
        elif method == "reward_model":
            rows, _ = logs.per_position_rows()
            model = RewardRegression(n_estimators=ROUNDS, random_state=seed).fit(rows)
            scores = model.decision_function(contexts, action_features=logs.item_features)
            ranking = _top(scores, mask, length)
        elif method.startswith("lambdarank"):
            position = method == "lambdarank_position"
            scores = lambdarank_scores(logs, contexts, mask, position=position, seed=seed)
            ranking = _top(scores, mask, length)
        else:
            ranking = _top(xgb_unbiased_scores(logs, contexts, mask, seed=seed), mask, length)
        values[method] = world.expected_clicks(contexts, ranking)
    return values


def _available(methods: list[str]) -> list[str]:
    try:
        import xgboost  # noqa: F401
    except ImportError:
        if "xgb_unbiased" in methods:
            print("note: xgboost is not installed; xgb_unbiased skipped")
        return [m for m in methods if m != "xgb_unbiased"]
    return methods


def main(argv: list[str] | None = None) -> dict[str, dict[str, list[np.ndarray]]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=3000)
    parser.add_argument("--test-rows", type=int, default=3000)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--worlds", nargs="+", choices=list(WORLDS), default=list(WORLDS))
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    args = parser.parse_args(argv)
    methods = _available(list(dict.fromkeys(["slate_boost", *args.methods])))
    results: dict[str, dict[str, list[np.ndarray]]] = {}
    for name in args.worlds:
        per_method: dict[str, list[np.ndarray]] = {m: [] for m in methods}
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            world = make_slate_world(eta=1.0, seed=seed, **WORLDS[name])
            logs = world.simulate(args.rows, seed=1000 + seed)
            rng = np.random.default_rng(2000 + seed)
            contexts, candidates = world.sample_contexts(args.test_rows, rng)
            mask = np.zeros((args.test_rows, world.n_items), dtype=bool)
            mask[np.arange(args.test_rows)[:, None], candidates] = True
            values = method_values(world, logs, contexts, mask, methods, seed)
            for method, value in values.items():
                per_method[method].append(value)
            shown = " ".join(f"{m} {values[m].mean():.4f}" for m in methods)
            print(f"[{name} seed {seed}] {shown}")
        results[name] = per_method
        print(f"{name}: slate_boost minus each method, paired over {args.seeds} seeds (95%)")
        boost = np.array([v.mean() for v in per_method["slate_boost"]])
        for method in methods:
            means = np.array([v.mean() for v in per_method[method]])
            line = f"  {method}: {means.mean():.4f}"
            if method != "slate_boost":
                diff, half = t_interval(boost - means)
                line += f"; difference {diff:+.4f} ± {half:.4f}"
            print(line)
    return results


if __name__ == "__main__":
    main()
