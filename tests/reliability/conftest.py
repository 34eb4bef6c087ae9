"""Fixtures of the reliability tests: saved policies whose metadata holds a table schema or
an item-feature schema."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from policy_tables import ACTION_IDS, CATEGORIES, item_table

import opboost
from opboost.api.data.logged import LoggedBandit


@pytest.fixture(scope="session")
def tabular_policy(tmp_path_factory) -> Path:
    """A 3-round policy (no reward-model start: a small model text) fitted on a DataFrame
    with a numeric column "x", a categorical column "c" and string action ids, saved as a
    directory: its metadata holds categories and a catalogue."""
    rng = np.random.default_rng(0)
    n = 120
    frame = pd.DataFrame(
        {
            "x": rng.normal(size=n),
            "c": rng.choice(CATEGORIES, n),
            "action": rng.choice(ACTION_IDS, n),
            "p": 1 / 3,
            "r": rng.uniform(size=n),
        }
    )
    frame["r"] += (frame["c"] == "a") & (frame["action"] == "red")
    logs = LoggedBandit.from_dataframe(
        frame, contexts=["x", "c"], action="action", propensity="p", reward="r", actions=ACTION_IDS
    )
    booster = opboost.Booster(
        n_rounds=3, warm_start="none", base_learner_params={"num_threads": 1}, random_state=0
    ).fit(logs)
    return booster.policy_.save(tmp_path_factory.mktemp("tabular") / "policy")


@pytest.fixture(scope="session")
def catalogue_policy(tmp_path_factory) -> Path:
    """A 3-round policy fitted on (context, item) pairs: 2 numeric contexts and a catalogue
    of 6 items with a numeric column "price" and a categorical column "colour" whose rewards
    depend on the colour, saved as a directory: its metadata holds an action schema."""
    rng = np.random.default_rng(1)
    n, items = 150, item_table()
    contexts = rng.normal(size=(n, 2))
    actions = rng.integers(0, len(items), n)
    colour = items["colour"].to_numpy()[actions]
    rewards = rng.uniform(size=n) + 2 * (colour == "red") + (colour == "green")
    logs = LoggedBandit(
        contexts, actions, np.full(n, 1 / len(items)), rewards, len(items), action_features=items
    )
    params = {"num_threads": 1, "num_leaves": 4, "min_data_in_leaf": 5}
    booster = opboost.Booster(
        n_rounds=3, warm_start="none", base_learner_params=params, random_state=0
    ).fit(logs)
    return booster.policy_.save(tmp_path_factory.mktemp("catalogue") / "policy")
