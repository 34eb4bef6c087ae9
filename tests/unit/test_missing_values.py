"""Missing context values (NaN) end to end: the logs keep them, LightGBM learners route them
as missing (fit, predict, save/load, the reward-model start, DR, PolicyChoice), learners that
cannot take them refuse by name, and infinite values are still refused."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest

import opboost
from opboost.algorithms.estimators.direct import DoublyRobust
from opboost.api.exceptions import InvalidParameterError
from opboost.simulation.runners import run_bandit

N = 600
LGB = {"num_leaves": 4, "min_data_in_leaf": 5, "num_threads": 1}


def missing_logs(seed: int = 0) -> opboost.LoggedBandit:
    """Uniformly logged, 2 actions: action 1 pays where x0 is missing, action 0 where x0 is
    a number (0.0 or 1.0), so only a learner that tells NaN from 0 gets it right."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, 3))
    X[:, 0] = rng.choice([0.0, 1.0, np.nan], N)
    actions = rng.integers(0, 2, N)
    best = np.where(np.isnan(X[:, 0]), 1, 0)
    rewards = (actions == best).astype(float)
    return opboost.LoggedBandit(X, actions, np.full(N, 0.5), rewards, 2)


PROBE = np.array([[np.nan, 0.0, 0.0], [0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])


@pytest.mark.parametrize("warm_start", ["auto", "none"])
def test_lightgbm_routes_missing_values_and_saves_them(warm_start, tmp_path):
    logs = missing_logs()
    booster = opboost.Booster(
        n_rounds=10, warm_start=warm_start, base_learner_params=LGB, random_state=0
    ).fit(logs)
    np.testing.assert_array_equal(booster.predict(PROBE), [1, 0, 0])  # NaN is not 0
    booster.save(tmp_path / "policy")
    loaded = opboost.load_policy(tmp_path / "policy")
    np.testing.assert_array_equal(loaded.decision_function(PROBE), booster.decision_function(PROBE))
    if warm_start == "auto":  # the reward model's linear family reads the other columns only
        start = booster.reward_start_
        assert start["linear_skipped"] is None, start


def test_doubly_robust_training_and_estimates_take_missing_values():
    logs = missing_logs(1)
    booster = opboost.Booster(
        estimator="dr", n_rounds=10, base_learner_params=LGB, random_state=0
    ).fit(logs)
    np.testing.assert_array_equal(booster.predict(PROBE), [1, 0, 0])
    best = np.where(np.isnan(logs.contexts[:, 0]), 1, 0)
    value = DoublyRobust(random_state=0).estimate_value(logs, best)
    assert value > 0.9  # the best policy pays 1 on every row


def test_policy_choice_takes_missing_values():
    choice = opboost.PolicyChoice(
        random_state=0, booster_params={"n_rounds": 10, "base_learner_params": LGB}
    ).fit(missing_logs(2))
    np.testing.assert_array_equal(choice.predict(PROBE), [1, 0, 0])


def test_dataframes_with_missing_numbers_fit_and_predict():
    """NaN, None and pandas' NA in numeric columns, through from_dataframe and fit(X, y)."""
    logs = missing_logs(3)
    X = logs.contexts
    frame = pd.DataFrame({"x0": X[:, 0], "x1": X[:, 1], "x2": X[:, 2]})
    frame["x1"] = frame["x1"].astype(object).where(np.arange(N) % 7 != 0, None)
    frame["count"] = pd.array(np.where(np.arange(N) % 5 == 0, None, 3), dtype="Int64")
    frame["city"] = np.where(np.arange(N) % 2 == 0, "lyon", "nice")
    y = pd.DataFrame(
        {"action": logs.actions, "propensity": logs.propensities, "reward": logs.rewards}
    )
    columns = ["x0", "x1", "x2", "count", "city"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", opboost.api.data.tabular.ActionCatalogueWarning)
        table = opboost.LoggedBandit.from_dataframe(
            pd.concat([frame, y], axis=1), contexts=columns, action="action",
            propensity="propensity", reward="reward", n_actions=2,
        )  # fmt: skip
    assert np.isnan(table.contexts[0, 1]) and np.isnan(table.contexts[0, 3])
    for booster in (
        opboost.Booster(n_rounds=10, base_learner_params=LGB, random_state=0).fit(table),
        opboost.Booster(n_rounds=10, base_learner_params=LGB, random_state=0).fit(frame, y),
    ):
        probe = pd.DataFrame(
            {"x0": PROBE[:, 0], "x1": [None] * 3, "x2": 0.0, "count": pd.NA, "city": "lyon"}
        )
        np.testing.assert_array_equal(booster.predict(probe[columns]), [1, 0, 0])


def test_learners_that_cannot_take_missing_values_refuse_by_name():
    logs = missing_logs(4)
    where = tuple(int(i) for i in np.argwhere(np.isnan(logs.contexts))[0])
    with pytest.raises(InvalidParameterError) as exc:
        opboost.Booster(base_learner="sklearn_tree").fit(logs)
    assert str(exc.value) == (
        f"Booster.fit: data has missing context values (NaN, the first at row {where[0]}, "
        f"column {where[1]}), which base learner 'sklearn_tree' cannot take. Use "
        f"base_learner='lightgbm_tree', which routes missing values natively, or impute them "
        f"(sklearn.impute.SimpleImputer, for instance)."
    )
    labels = np.where(np.isnan(logs.contexts[:, 0]), 1, 0)
    with pytest.raises(InvalidParameterError) as exc:
        banditron = opboost.make("online_learner", "banditron", n_actions=2, random_state=0)
        run_bandit(banditron, logs.contexts, labels, n_actions=2, random_state=0)
    assert str(exc.value) == (
        f"run_bandit: X has a missing value (NaN) at row {where[0]}, column {where[1]}, and "
        f"online learner 'banditron' cannot take missing values; impute them first "
        f"(sklearn.impute.SimpleImputer, for instance), or learn offline with "
        f"Booster(base_learner='lightgbm_tree'), which routes them natively."
    )


def test_infinite_values_are_still_refused():
    logs = missing_logs(5)
    X = np.array(logs.contexts)
    X[2, 1] = np.inf
    message = (
        "LoggedBandit: contexts must be finite or NaN; index (2, 1) has inf. Replace infinite "
        "values: NaN marks a missing value, which LightGBM learners route natively (other "
        "learners refuse it by name)."
    )
    with pytest.raises(ValueError, match=re.escape(message)):
        opboost.LoggedBandit(X, logs.actions, logs.propensities, logs.rewards, 2)
    booster = opboost.Booster(n_rounds=2, base_learner_params=LGB, random_state=0).fit(logs)
    with pytest.raises(InvalidParameterError, match=r"contexts must be finite or NaN; index"):
        booster.predict(X)


def test_model_text_check_reads_an_infinite_threshold_but_not_nan():
    """LightGBM writes ``x <= inf`` (threshold "inf") to split the missing values from every
    number; the structural check before parsing accepts it and still refuses "nan"."""
    from opboost.api.learner_toolkit import loads_checked
    from opboost.lgbm.model_text import check_model_text

    booster = opboost.Booster(
        n_rounds=2, warm_start="none", base_learner_params=LGB, random_state=0
    ).fit(missing_logs(6))
    _, text = loads_checked(booster.policy_.ensemble.dumps(), "lightgbm_text_v1", "test")
    line = next(row for row in text.split("\n") if row.startswith("threshold="))
    assert line.endswith(" inf")  # the missing values' split
    check_model_text(text, n_features=4, trees_per_round=1)
    edited = text.replace(line, line[: -len("inf")] + "nan", 1)  # same length: tree_sizes hold
    expected = r"tree 0: threshold\[\d\] must be a finite number or inf; got 'nan'"
    with pytest.raises(ValueError, match=expected):
        check_model_text(edited, n_features=4, trees_per_round=1)
