"""Fixtures of the reliability tests: a saved policy whose metadata holds a table schema."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from policy_tables import ACTION_IDS, CATEGORIES

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
