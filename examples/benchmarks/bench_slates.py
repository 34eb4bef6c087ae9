"""The boosted slate policy (``slate_boost``) against the rankers users fit on position-biased
slate logs (issue 51, deliverable 4), by the TRUE expected clicks on simulated slate worlds.

    python examples/benchmarks/bench_slates.py [--rows 3000] [--test-rows 3000]
        [--seeds reporting|tuning] [--n-seeds 5] [--worlds default|variations|all|NAME ...]
        [--methods ...] [--open-bandit DIR]

Seeds: ``TUNING_SEEDS`` (0-4) are the only ones any default of ``slate_boost`` may be chosen
on; ``REPORTING_SEEDS`` (100-104, the default) are the ones reported; ``--n-seeds`` takes the
first n of the chosen set. Seed s builds world s, logs it with seed 1000 + s and draws the
test contexts with seed 2000 + s.

Worlds (``make_slate_world``; ``--worlds`` takes suite names or world names):

* ``default`` (``DEFAULT_WORLDS``, the worlds ``slate_boost``'s defaults were tuned on, with
  the tuning seeds): 20 items, 8 candidates, 3 positions, examination 1/k; the
  position-based and cascade click models, each logged by a skewed (Plackett–Luce
  temperature 0.5) and a flat (2.0) logger; ``--rows`` logged impressions;
* ``variations`` (``VARIATION_WORLDS``; only the held-out rule's settings, ``selection_share``,
  ``confidence`` and ``patience``, were chosen on them, with the tuning seeds like every
  default): one change each from a default world
  (temperature 1 unless the change is the logger): 5 positions; a catalogue of 100 items with
  20 candidates; stronger (eta = 2) and weaker (eta = 0.5) position bias; a third and
  ten-thirds of ``--rows`` (1,000 and 10,000 by default); a nearly uniform (temperature 10)
  and a very skewed (0.2) logger; every one with position bias.

Methods,
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

Every ranker reads [x; phi(a)] and ranks the top L of each test row's candidates. Printed: each
seed's values, then per world each method's mean and slate_boost's paired difference with
a Student-t 95% interval over seeds.

    python examples/benchmarks/bench_slates.py --open-bandit DIR [--methods ...]

reads the Open Bandit sample as slates from DIR (the data directory holding
``open_bandit/{random,bts}/all/all.csv``, as ``$OPBOOST_DATA``), fits every method on one
logging policy's slates and ranks the other's contexts among all items (``slate_boost``
with the position-based click model: the files hold no cascade propensities); printed, for
random -> bts and bts -> random, each method's estimated clicks per impression by
``slate_iips`` and ``slate_idr`` with 95% intervals (``logger``: the evaluated logs' own
logger, on-policy, by ``slate_iips`` only: the files hold only the logged item's propensity,
not the logger's whole distribution that the DR baseline needs).
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

TUNING_SEEDS = range(0, 5)
REPORTING_SEEDS = range(100, 105)
SEED_SETS = {"tuning": TUNING_SEEDS, "reporting": REPORTING_SEEDS}

DEFAULT_WORLDS = {
    "pbm_skewed": {"click_model": "pbm", "logging_temperature": 0.5},
    "pbm_flat": {"click_model": "pbm", "logging_temperature": 2.0},
    "cascade_skewed": {"click_model": "cascade", "logging_temperature": 0.5},
    "cascade_flat": {"click_model": "cascade", "logging_temperature": 2.0},
}
# One change each from a default world; "rows_factor" scales --rows. Tuned on only with
# TUNING_SEEDS (the held-out rule's settings); reported with REPORTING_SEEDS.
VARIATION_WORLDS = {
    "pbm_long": {"click_model": "pbm", "slate_size": 5},
    "cascade_long": {"click_model": "cascade", "slate_size": 5},
    "pbm_catalogue": {"click_model": "pbm", "n_items": 100, "n_candidates": 20},
    "cascade_catalogue": {"click_model": "cascade", "n_items": 100, "n_candidates": 20},
    "pbm_strong_bias": {"click_model": "pbm", "eta": 2.0},
    "cascade_weak_bias": {"click_model": "cascade", "eta": 0.5},
    "pbm_few_logs": {"click_model": "pbm", "rows_factor": 1 / 3},
    "cascade_many_logs": {"click_model": "cascade", "rows_factor": 10 / 3},
    "pbm_uniform_logger": {"click_model": "pbm", "logging_temperature": 10.0},
    "cascade_very_skewed": {"click_model": "cascade", "logging_temperature": 0.2},
}
WORLDS = {**DEFAULT_WORLDS, **VARIATION_WORLDS}
SUITES = {
    "default": list(DEFAULT_WORLDS),
    "variations": list(VARIATION_WORLDS),
    "all": list(WORLDS),
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
OPEN_BANDIT_ESTIMATORS = ("slate_iips", "slate_idr")


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


def method_rankings(logs, contexts, mask, methods, seed: int, click_model: str) -> dict:
    """Each learned method's (m, L) ranking of the test ``contexts`` over ``mask``, fitted on
    ``logs`` (``slate_boost`` with ``click_model``); the logger is not a ranking."""
    length = logs.slate_size
    rankings = {}
    for method in methods:
        if method in ("slate_boost", "slate_start"):
            rounds = {"n_rounds": 0} if method == "slate_start" else {}
            model = SlateBooster(click_model=click_model, random_state=seed, **rounds)
            rankings[method] = model.fit(logs).rank(contexts, candidates=mask)
            continue
        if method == "reward_model":
            rows, _ = logs.per_position_rows()
            model = RewardRegression(n_estimators=ROUNDS, random_state=seed).fit(rows)
            scores = model.decision_function(contexts, action_features=logs.item_features)
        elif method.startswith("lambdarank"):
            position = method == "lambdarank_position"
            scores = lambdarank_scores(logs, contexts, mask, position=position, seed=seed)
        elif method == "xgb_unbiased":
            scores = xgb_unbiased_scores(logs, contexts, mask, seed=seed)
        else:
            continue
        rankings[method] = _top(scores, mask, length)
    return rankings


def method_values(world, logs, contexts, mask, methods, seed: int) -> dict[str, np.ndarray]:
    """Each method's true expected clicks per test impression, (m,)."""
    rankings = method_rankings(logs, contexts, mask, methods, seed, world.click_model)
    values = {}
    for method in methods:
        if method == "logger":
            scores = np.where(mask, world.logits(contexts), -np.inf)
            values[method] = world.plackett_luce_value(contexts, scores, world.logging_temperature)
        else:
            values[method] = world.expected_clicks(contexts, rankings[method])
    return values


def open_bandit_values(data_dir, methods, seed: int = 0) -> dict:
    """``{(trained on, evaluated on): {method: {estimator: interval}}}`` on the Open Bandit
    sample (``data_dir/open_bandit/{random,bts}/all``): each method fitted on one logger's
    slates ranks the other's contexts among every item, valued by ``slate_iips`` and
    ``slate_idr`` (95%) with the other's propensities; ``logger`` is that logger itself
    (``slate_iips`` only)."""
    from opboost.api.slates import SlatePolicy
    from opboost.core.registry import make
    from opboost.simulation.datasets.open_bandit_slates import open_bandit_slates

    logs = {name: open_bandit_slates(name, data_dir=data_dir) for name in ("random", "bts")}
    logs = _common_contexts(logs, data_dir)
    out = {}
    for train, target in (("random", "bts"), ("bts", "random")):
        test = logs[target]
        mask = np.ones((len(test), test.n_items), dtype=bool)
        policies = method_rankings(logs[train], test.contexts, mask, methods, seed, "pbm")
        if "logger" in methods:
            policies["logger"] = SlatePolicy(test.marginal_propensities, test.marginal_propensities)
        out[train, target] = {
            method: {
                name: make("estimator", name).estimate_interval(test, policies[method])
                for name in OPEN_BANDIT_ESTIMATORS
                if method != "logger" or name == "slate_iips"  # DR needs its full distribution
            }
            for method in methods
        }
    return out


def _common_contexts(logs: dict, data_dir) -> dict:
    """``logs`` with their contexts re-encoded over the union of both files' user-feature
    categories: each file's one-hot (first category dropped, ``OpenBandit``'s encoding)
    covers the categories that file holds, so the two can differ in width."""
    from dataclasses import replace

    import pandas as pd

    from opboost.simulation.datasets.open_bandit import OpenBandit

    seen = {}
    for name in logs:
        path = OpenBandit(behavior_policy=name).folder(data_dir) / "all.csv"
        users = pd.read_csv(path, usecols=lambda c: c.startswith("user_feature"), dtype=str)
        seen[name] = {c: sorted(users[c].unique()) for c in users.columns}
    columns = list(next(iter(seen.values())))
    union = {c: sorted(set().union(*(seen[n][c] for n in seen))) for c in columns}
    out = {}
    for name, slates in logs.items():
        blocks, start = [], 0
        for c in columns:
            own = seen[name][c]
            block = slates.contexts[:, start : start + len(own) - 1]
            start += len(own) - 1
            code = np.argmax(np.column_stack([1 - block.sum(axis=1), block]), axis=1)
            position = np.searchsorted(union[c], np.asarray(own)[code])
            blocks.append(np.eye(len(union[c]))[position][:, 1:])
        out[name] = replace(slates, contexts=np.hstack([*blocks, slates.contexts[:, start:]]))
    return out


def print_open_bandit(values: dict, data_dir) -> None:
    """The Open Bandit table: per direction, each method's estimates and 95% intervals."""
    print(f"Open Bandit sample ({data_dir}), campaign all: estimated clicks per impression")
    for (train, target), per_method in values.items():
        print(f"trained on {train}, evaluated on {target}:")
        print("| method | " + " | ".join(f"{e} [95%]" for e in OPEN_BANDIT_ESTIMATORS) + " |")
        print("|---" * (1 + len(OPEN_BANDIT_ESTIMATORS)) + "|")
        for method, intervals in per_method.items():
            cells = [
                f"{ci.value:.5f} [{ci.low:.5f}, {ci.high:.5f}]" if ci else "—"
                for ci in (intervals.get(e) for e in OPEN_BANDIT_ESTIMATORS)
            ]
            print(f"| {method} | " + " | ".join(cells) + " |")


def _available(methods: list[str]) -> list[str]:
    try:
        import xgboost  # noqa: F401
    except ImportError:
        if "xgb_unbiased" in methods:
            print("note: xgboost is not installed; xgb_unbiased skipped")
        return [m for m in methods if m != "xgb_unbiased"]
    return methods


def world_names(chosen: list[str]) -> list[str]:
    """The worlds of ``--worlds``: suite names expanded, duplicates dropped, in order."""
    return list(dict.fromkeys(w for c in chosen for w in SUITES.get(c, [c])))


def world_and_logs(name: str, seed: int, rows: int):
    """World ``name`` built with ``seed`` (eta 1 and temperature 1 unless it says otherwise)
    and its logs (``rows`` impressions, times its ``rows_factor``), logged with 1000 + seed."""
    spec = {"eta": 1.0, "logging_temperature": 1.0, **WORLDS[name]}
    n = round(rows * spec.pop("rows_factor", 1.0))
    world = make_slate_world(seed=seed, **spec)
    return world, world.simulate(n, seed=1000 + seed)


def main(argv: list[str] | None = None) -> dict[str, dict[str, list[np.ndarray]]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=3000)
    parser.add_argument("--test-rows", type=int, default=3000)
    parser.add_argument("--seeds", choices=list(SEED_SETS), default="reporting")
    parser.add_argument("--n-seeds", type=int, default=5)
    parser.add_argument(
        "--worlds", nargs="+", choices=[*SUITES, *WORLDS], default=["default"], metavar="WORLD"
    )
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--open-bandit", metavar="DIR", default=None)
    args = parser.parse_args(argv)
    methods = _available(list(dict.fromkeys(["slate_boost", *args.methods])))
    seeds = list(SEED_SETS[args.seeds])[: args.n_seeds]
    if args.open_bandit is not None:
        values = open_bandit_values(args.open_bandit, methods, seeds[0])
        print_open_bandit(values, args.open_bandit)
        return values
    results: dict[str, dict[str, list[np.ndarray]]] = {}
    for name in world_names(args.worlds):
        per_method: dict[str, list[np.ndarray]] = {m: [] for m in methods}
        for seed in seeds:
            world, logs = world_and_logs(name, seed, args.rows)
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
        print(f"{name}: slate_boost minus each method, paired over {len(seeds)} seeds (95%)")
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
