"""The README's main job: simulated logs from a bundled data set, five policies, one table.

For each seed: a stratified train/test split of the labelled rows, the supervised-to-bandit
conversion of the training rows, then the logging policy, the uniform policy, a reward
regression baseline, BOPL and BOPL-S, each scored by its TRUE expected reward on the test rows
(argmax actions for learned policies). Prints the mean and a 95% interval over seeds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from opboost.estimators.base import normal_interval
from opboost.registry import make
from opboost.simulate import expected_reward, supervised_to_bandit

__all__ = ["QUICKSTART_BOOSTER", "run_quickstart"]

#: Booster settings of the quickstart (chosen on the digits validation rows; see docs).
QUICKSTART_BOOSTER: dict[str, Any] = {
    "base_learner": "lightgbm_tree",
    "base_learner_params": {"num_leaves": 15, "min_data_in_leaf": 10},
    "n_rounds": 100,
}


def _one_hot(actions: np.ndarray, n_actions: int) -> np.ndarray:
    return np.eye(n_actions)[actions]


def _policies(n_rounds: int | None) -> dict[str, Callable]:
    from opboost.baselines import RewardRegression
    from opboost.booster import Booster

    params = dict(QUICKSTART_BOOSTER)
    if n_rounds is not None:
        params["n_rounds"] = n_rounds

    def boosted(objective: str) -> Callable:
        def fit(logged, seed):
            return Booster(objective=objective, random_state=seed, **params).fit(logged)

        return fit

    return {
        "reward regression (LightGBM)": lambda logged, seed: RewardRegression(
            random_state=seed
        ).fit(logged),
        "BOPL": boosted("bopl"),
        "BOPL-S": boosted("bopl_s"),
    }


def run_quickstart(
    dataset: str = "digits",
    n_seeds: int = 3,
    n_rounds: int | None = None,
    data_dir: str | None = None,
    test_fraction: float = 0.25,
    echo: Callable[[str], None] = print,
) -> dict[str, list[float]]:
    """Run the comparison; return {policy: [true test reward per seed]} and print a table."""
    from sklearn.model_selection import train_test_split

    data = make("dataset", dataset).load(data_dir)
    if data.task == "regression":
        raise ValueError(f"quickstart needs a classification data set; {dataset!r} is regression.")
    echo(
        f"opboost quickstart: {data.name} ({len(data)} rows, {data.X.shape[1]} features, "
        f"{data.n_actions} actions), {n_seeds} simulated logs"
    )
    scores: dict[str, list[float]] = {"logging policy": [], "uniform policy": []}
    learners = _policies(n_rounds)
    for name in learners:
        scores[name] = []
    start = time.perf_counter()
    rows = np.arange(len(data))
    for seed in range(n_seeds):
        stratify = data.y if data.task == "multiclass" else None
        train, test = train_test_split(
            rows, test_size=test_fraction, random_state=seed, stratify=stratify
        )
        X_train, X_test = data.X[train], data.X[test]
        y_train, y_test = data.y[train], data.y[test]
        sim = supervised_to_bandit(
            X_train, y_train, n_actions=data.n_actions, reward=data.reward, random_state=seed
        )
        k = data.n_actions
        scores["logging policy"].append(
            expected_reward(sim.logging_policy.predict_proba(X_test), y_test, data.reward)
        )
        scores["uniform policy"].append(
            expected_reward(np.full((len(test), k), 1.0 / k), y_test, data.reward)
        )
        for name, fit in learners.items():
            policy = fit(sim.logged, seed)
            scores[name].append(
                expected_reward(_one_hot(policy.predict(X_test), k), y_test, data.reward)
            )
        echo(f"  seed {seed}: done ({time.perf_counter() - start:.1f} s)")
    echo("")
    echo(f"{'policy':<30} {'true test reward':>18}   95% interval")
    for name, values in scores.items():
        ci = normal_interval(np.asarray(values), 0.95)
        echo(f"{name:<30} {ci.value:>18.4f}   [{ci.low:.4f}, {ci.high:.4f}]")
    echo(f"\n{n_seeds} seeds in {time.perf_counter() - start:.1f} s")
    return scores
