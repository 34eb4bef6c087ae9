"""Both entry points, the same capabilities: string action ids through ``Booster.fit(X, y)``
as through ``LoggedBandit.from_dataframe``, ids from ``PolicyChoice.predict``, feature names
kept by a saved policy, and ``reward_start_`` None when there was no reward-model start."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest

import opboost
from opboost.api.data.tabular import ActionCatalogueWarning
from opboost.api.exceptions import InvalidParameterError

IDS = ["ad-a", "ad-b", "ad-c"]
LGB = {"num_leaves": 4, "min_data_in_leaf": 5, "num_threads": 1}


def frame(n: int = 300, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Contexts (two numeric columns) and feedback with string action ids: the ad of the
    sign of ``age`` pays."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"age": rng.normal(size=n), "score": rng.normal(size=n)})
    actions = rng.integers(0, 3, n)
    best = np.where(X["age"] > 0, 2, 0)
    y = pd.DataFrame(
        {
            "action": np.asarray(IDS, dtype=object)[actions],
            "propensity": np.full(n, 1 / 3),
            "reward": (actions == best).astype(float),
        }
    )
    return X, y


def test_fit_with_string_action_ids_works_like_from_dataframe():
    X, y = frame()
    booster = opboost.Booster(n_rounds=5, base_learner_params=LGB, random_state=0)
    booster.fit(X, y, actions=IDS)
    logs = opboost.LoggedBandit.from_dataframe(
        pd.concat([X, y], axis=1), contexts=["age", "score"], action="action",
        propensity="propensity", reward="reward", actions=IDS,
    )  # fmt: skip
    same = opboost.Booster(n_rounds=5, base_learner_params=LGB, random_state=0).fit(logs)
    probe = pd.DataFrame({"score": [0.0, 0.0], "age": [1.0, -1.0]})  # any column order
    np.testing.assert_array_equal(booster.predict(probe, return_ids=True), ["ad-c", "ad-a"])
    np.testing.assert_array_equal(booster.decision_function(probe), same.decision_function(probe))
    np.testing.assert_array_equal(booster.predict(probe.to_numpy()[:, ::-1]), [2, 0])
    # numpy contexts: the ids still come back, and a DataFrame is read by position
    array = opboost.Booster(n_rounds=5, base_learner_params=LGB, random_state=0)
    array.fit(X.to_numpy(), y.to_numpy(), actions=IDS)
    assert not hasattr(array, "feature_names_in_")
    np.testing.assert_array_equal(
        array.predict(probe[["age", "score"]], return_ids=True), ["ad-c", "ad-a"]
    )


def test_fit_infers_the_catalogue_with_a_warning_and_names_an_unknown_id():
    X, y = frame()
    with pytest.warns(ActionCatalogueWarning, match="the 3 action ids seen"):
        booster = opboost.Booster(n_rounds=2, base_learner_params=LGB).fit(X, y)
    assert booster.policy_.n_actions == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        wider = opboost.Booster(n_rounds=2, base_learner_params=LGB)
        wider.fit(X, y, actions=[*IDS, "ad-new"])  # a catalogue: no warning, 4 actions
    assert wider.policy_.n_actions == 4
    with pytest.raises(InvalidParameterError) as exc:
        opboost.Booster(n_rounds=2).fit(X, y, actions=IDS[:2])
    assert re.fullmatch(
        r"Booster\.fit: column 'action' has action 'ad-c' at row \d+ \(index \d+\), which "
        r"is not in the action catalogue \(actions=, 2 ids\); add it to actions= or drop the "
        r"rows\.",
        str(exc.value),
    )


def test_policy_choice_returns_action_ids():
    X, y = frame(seed=1)
    logs = opboost.LoggedBandit.from_dataframe(
        pd.concat([X, y], axis=1), contexts=["age", "score"], action="action",
        propensity="propensity", reward="reward", actions=IDS,
    )  # fmt: skip
    choice = opboost.PolicyChoice(
        random_state=0, booster_params={"n_rounds": 5, "base_learner_params": LGB}
    ).fit(logs)
    probe = pd.DataFrame({"age": [1.0, -1.0], "score": [0.0, 0.0]})
    ids = choice.predict(probe, return_ids=True)
    np.testing.assert_array_equal(ids, np.asarray(IDS, dtype=object)[choice.predict(probe)])
    assert set(ids) <= set(IDS)


def test_a_loaded_policy_keeps_the_feature_names(tmp_path):
    X, y = frame(seed=2)
    booster = opboost.Booster(n_rounds=3, base_learner_params=LGB, random_state=0)
    booster.fit(X, y.assign(action=np.searchsorted(IDS, y["action"])))
    booster.save(tmp_path / "policy")
    loaded = opboost.load_policy(tmp_path / "policy")
    np.testing.assert_array_equal(loaded.feature_names_in_, ["age", "score"])
    assert loaded.n_features_in_ == 2
    swapped = X[["score", "age"]].iloc[:5]  # matched by name, as the booster does
    np.testing.assert_array_equal(loaded.predict(swapped), booster.predict(swapped))
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['age'\] of the policy's 2"):
        loaded.predict(X[["score"]])
    unnamed = opboost.Booster(n_rounds=2, base_learner_params=LGB).fit(
        X.to_numpy(), y.assign(action=np.searchsorted(IDS, y["action"])).to_numpy()
    )
    unnamed.save(tmp_path / "unnamed")
    assert not hasattr(opboost.load_policy(tmp_path / "unnamed"), "feature_names_in_")


def test_reward_start_is_none_without_a_reward_model_start():
    X, y = frame(seed=3)
    y = y.assign(action=np.searchsorted(IDS, y["action"]))
    none = opboost.Booster(n_rounds=2, warm_start="none", base_learner_params=LGB).fit(X, y)
    assert none.reward_start_ is None
    sklearn = opboost.Booster(n_rounds=2, base_learner="sklearn_tree").fit(X, y)
    assert sklearn.reward_start_ is None  # "auto": this learner has no reward model of its own
    default = opboost.Booster(n_rounds=2, base_learner_params=LGB).fit(X, y)
    assert default.reward_start_["family"] in ("trees", "linear+trees")
