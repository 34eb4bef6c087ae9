"""Where the rounds after the default's start help: the true test reward of ``Booster()`` after
t rounds (t = 0: the reward-model start alone), on ``bench_peers.py``'s logs.

One fit per (data set, seed) of ``Booster(random_state=seed)`` (``--n-rounds``, default the
Booster's); the fitted ensemble is then scored on the labelled test rows with its first t rounds
only, for each t of ``--stages``. The table gives the mean over the seeds at each stage and, per
stage, the paired difference against the last one (mean ± Student-t 95% half-width): a stage
above the last where the rounds overfit the logs, below it where they help. Issue 18, item 4
(rounds that follow the data) is measured against this: an oracle stopping round per data set
would gain the largest positive difference.

    python examples/benchmarks/bench_staged_rounds.py --datasets digits wine
    python examples/benchmarks/bench_staged_rounds.py --data-dir "$OPBOOST_DATA" --seeds 5
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

from opboost import Booster
from opboost.api.learner_toolkit import as_contexts
from opboost.lgbm.rows import design_rows

sys.path.insert(0, str(Path(__file__).resolve().parent))  # examples/benchmarks: not a package
from _bench_common import t_interval
from bench_peers import DATASETS, load


def stage_scores(booster: Booster, X: Any, last: int | None = None) -> list[np.ndarray]:
    """Scores (m, K) of ``booster``'s ensemble on contexts ``X`` after t = 0 .. ``last``
    rounds (default every round it ran; t = 0 is the start alone), each the previous plus one
    round's tree(s): LightGBM sums a prediction's trees in the same order, so each equals the
    prediction with that many trees, at a small part of its cost."""
    ensemble = booster.policy_.ensemble
    K, rounds = ensemble.n_actions, booster.n_rounds_
    start_trees = ensemble.booster.num_trees() - rounds  # the start's trees come first
    rows = design_rows(as_contexts(X, ensemble.n_features), K, ensemble.action_design)

    def predict(**which: int) -> np.ndarray:
        return np.asarray(ensemble.booster.predict(rows, raw_score=True, **which)).reshape(-1, K)

    scores = (
        [predict(num_iteration=start_trees)] if start_trees else [np.zeros((len(rows) // K, K))]
    )
    for t in range(rounds if last is None else min(rounds, last)):
        scores.append(scores[-1] + predict(start_iteration=start_trees + t, num_iteration=1))
    return scores


def staged_rewards(trial, stages: list[int], n_rounds: int | None) -> np.ndarray:
    """True test reward (len(stages),) of the default fitted on ``trial.logged`` after each
    stage's number of rounds (NaN past the rounds the fit ran)."""
    params = {"validation_fraction": None}  # every round: the stages are scored here
    if n_rounds is not None:
        params["n_rounds"] = n_rounds
    booster = Booster(random_state=trial.seed, **params).fit(trial.logged)
    scores = stage_scores(booster, trial.X_test, max(stages))
    values = np.full(len(stages), np.nan)
    for i, t in enumerate(stages):
        if t < len(scores):
            values[i] = trial.value(scores[t].argmax(axis=1))
    return values


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0 .. N-1")
    parser.add_argument("--max-rows", type=int, default=5000)
    parser.add_argument("--n-rounds", type=int, default=None)
    parser.add_argument(
        "--stages", type=lambda s: [int(v) for v in s.split(",")], default=[0, 5, 10, 20, 50, 100]
    )
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args(argv)
    print(f"Command: `python {' '.join(sys.argv)}`\n")
    stages = args.stages
    header = " | ".join(f"t = {t}" for t in stages)
    print(f"| data set | {header} | oracle gain |")
    print("|---|" + "--:|" * (len(stages) + 1))
    for name in args.datasets:
        source = load(name, args.data_dir, args.max_rows)
        if isinstance(source, str):
            print(f"| {name} | skipped: {source} |" + " |" * len(stages))
            continue
        values = np.array(
            [
                staged_rewards(source.trial(seed), stages, args.n_rounds)
                for seed in range(args.seeds)
            ]
        )
        last = values[:, -1]
        cells = []
        for column in values.T:
            mean, half = t_interval(column - last)
            cells.append(f"{np.nanmean(column):.4f} ({mean:+.4f} ± {half:.4f})")
        gain = np.nanmax(np.nanmean(values - last[:, None], axis=0))
        print(f"| {name} | " + " | ".join(cells) + f" | {gain:+.4f} |", flush=True)


if __name__ == "__main__":
    main()
