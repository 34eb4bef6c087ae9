"""Progressive (predict-then-learn) evaluation of online bandit learners.

[`run_bandit`][opboost.simulation.runners.run_bandit] streams labelled rows through a
[`BanditEnvironment`][opboost.simulation.environment.BanditEnvironment] (which hides the labels),
asks the learner for an action on each context, reveals only that action's reward, and lets the
learner learn before the next context. The progressive error rate is the metric of Chen, Lin & Lu
(2014), Table 2.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from opboost.api.bandit import BanditLearner
from opboost.api.data.field_checks import first_missing
from opboost.api.exceptions import InvalidParameterError
from opboost.api.validation import check_scalar
from opboost.simulation.environment import BanditEnvironment
from opboost.simulation.results import BanditRunResult

__all__ = ["run_bandit"]


def run_bandit(
    learner: BanditLearner | str,
    X: Any,
    y: Any,
    *,
    reward: Any = "multiclass",
    n_actions: int | None = None,
    random_state: int | None = None,
    n_passes: int = 1,
    shuffle: bool = True,
    n_curve_points: int = 100,
) -> BanditRunResult:
    """Run ``learner`` online over (X, y) with bandit feedback; return the progressive result.

    Parameters
    ----------
    learner
        a [`BanditLearner`][opboost.api.bandit.BanditLearner], used as given (not cloned): pass a
        fresh one. Build a registered one by name with ``opboost.make("online_learner", name,
        n_actions=K, random_state=seed)``.
    X
        (n, d) contexts.
    y
        labels, in the form ``reward`` expects.
    reward
        "multiclass", "multilabel" or a (classes x actions) matrix
        ([`reward_table`][opboost.simulation.supervised.reward_table]).
    n_actions
        K, inferred from ``reward``/``y`` when None.
    random_state
        seed of the row orderings (the learner has its own ``random_state``).
    n_passes
        passes over the data, each in a fresh order; errors count over all passes.
    shuffle
        shuffle rows (else keep the given order).
    n_curve_points
        about how many points of the running error rate to keep.

    Notes
    -----
    The timing covers the predict/reward/learn loop only.
    """
    check_scalar(n_curve_points, "n_curve_points", "run_bandit", kind=int, low=1)
    env = BanditEnvironment(
        X,
        y,
        reward=reward,
        n_actions=n_actions,
        n_passes=n_passes,
        shuffle=shuffle,
        random_state=random_state,
    )
    if isinstance(learner, str):
        raise InvalidParameterError(
            f"run_bandit: learner must be a BanditLearner. Got the name {learner!r}; build it "
            f"with opboost.make('online_learner', {learner!r}, n_actions={env.n_actions}, "
            f"random_state={random_state!r})."
        )
    if not isinstance(learner, BanditLearner):
        raise InvalidParameterError(
            f"run_bandit: learner must be a BanditLearner (feedback='bandit'). Got "
            f"{type(learner).__name__}; loss-feedback learners have their own runner."
        )
    if getattr(learner, "n_actions", env.n_actions) != env.n_actions:
        raise InvalidParameterError(
            f"run_bandit: the learner has n_actions={learner.n_actions} but the data have "
            f"{env.n_actions} actions; build it with n_actions={env.n_actions}."
        )
    missing = first_missing(X)
    if missing is not None:
        raise InvalidParameterError(
            f"run_bandit: X has a missing value (NaN) at row {missing[0]}, column {missing[1]}, "
            f"and online learner {learner.name!r} cannot take missing values; impute them "
            f"first (sklearn.impute.SimpleImputer, for instance), or learn offline with "
            f"Booster(base_learner='lightgbm_tree'), which routes them natively."
        )
    predict_one, learn_one, answer = learner.predict_one, learner.learn_one, env.reward
    greedy_one, greedy = learner.greedy_action_one, []
    start = time.perf_counter()
    for _, x in env:
        action = predict_one(x)
        greedy.append(greedy_one())
        learn_one(x, action, answer(action))
    seconds = time.perf_counter() - start
    history = env.history()
    wrong = np.cumsum(~history["optimal"])
    greedy_error = None
    if greedy and None not in greedy:
        table = history["reward_table"]
        chosen = table[np.arange(len(greedy)), np.asarray(greedy, dtype=np.int64)]
        greedy_error = float(np.mean(chosen < table.max(axis=1)))
    n = len(wrong)
    steps = np.unique(np.linspace(1, n, num=min(n_curve_points, n)).round().astype(np.int64))
    return BanditRunResult(
        learner=getattr(learner, "name", type(learner).__name__),
        params={k: v for k, v in learner.get_params().items()},
        n_examples=n,
        n_passes=n_passes,
        error_rate=float(wrong[-1] / n),
        greedy_error_rate=greedy_error,
        mean_reward=float(history["rewards"].mean()),
        seconds=seconds,
        examples_per_second=n / seconds if seconds > 0 else float("inf"),
        seed=random_state,
        curve_steps=steps.tolist(),
        curve_error=(wrong[steps - 1] / steps).tolist(),
    )
