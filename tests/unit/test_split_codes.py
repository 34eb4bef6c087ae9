"""The category codes of a LightGBM model's categorical splits, read from its text
(:func:`opboost.lgbm.split_codes.categorical_split_codes`), equal LightGBM's own reading
of the same model, bitsets of several 32-bit words included."""

from __future__ import annotations

import json

import lightgbm as lgb
import numpy as np
import pytest

from opboost import Booster, LoggedBandit
from opboost.lgbm.ensemble import LightGBMEnsemble
from opboost.lgbm.split_codes import categorical_split_codes


def _dumped_codes(booster: lgb.Booster) -> dict[int, list[int]]:
    """{column: codes} of the "==" splits of LightGBM's dump_model (thresholds "a||b||...")."""
    codes: dict[int, set[int]] = {}
    stack = [tree["tree_structure"] for tree in booster.dump_model()["tree_info"]]
    while stack:
        node = stack.pop()
        if "split_feature" in node:
            if node["decision_type"] == "==":
                found = codes.setdefault(node["split_feature"], set())
                found.update(int(c) for c in str(node["threshold"]).split("||"))
            stack += [node["left_child"], node["right_child"]]
    return {column: sorted(c) for column, c in codes.items()}


def test_codes_of_two_categorical_columns_match_lightgbms_dump():
    """Columns of 70 and 5 categories (codes up to 69: three bitset words), one numeric."""
    rng = np.random.default_rng(0)
    n = 3000
    wide, narrow, x = rng.integers(0, 70, n), rng.integers(0, 5, n), rng.normal(size=n)
    y = np.sin(wide) + (narrow == 3) + 0.1 * x + 0.1 * rng.normal(size=n)
    data = lgb.Dataset(np.column_stack([x, wide, narrow]), y, categorical_feature=[1, 2])
    params = {"verbose": -1, "num_threads": 1, "min_data_per_group": 5, "cat_smooth": 1}
    booster = lgb.train(params, data, num_boost_round=8)
    expected = _dumped_codes(booster)
    assert sorted(expected) == [1, 2] and max(expected[1]) >= 64
    found = categorical_split_codes(booster.model_to_string())
    assert {column: codes.tolist() for column, codes in found.items()} == expected


def test_a_model_without_categorical_splits_has_no_codes():
    rng = np.random.default_rng(1)
    data = lgb.Dataset(rng.normal(size=(200, 2)), rng.normal(size=200))
    booster = lgb.train({"verbose": -1, "num_threads": 1}, data, num_boost_round=3)
    assert categorical_split_codes(booster.model_to_string()) == {}


def test_a_fixed_action_header_with_item_columns_is_refused():
    """n_action_features belongs to a model of (context, item) pairs only: in the header of a
    stacked model it would make the policy look like a catalogue model."""
    rng = np.random.default_rng(2)
    n = 200
    logs = LoggedBandit(rng.normal(size=(n, 2)), rng.integers(0, 3, n), np.full(n, 1 / 3),
                        rng.uniform(size=n), 3)  # fmt: skip
    params = {"num_threads": 1, "num_leaves": 4}
    ensemble = Booster(n_rounds=2, warm_start="none", base_learner_params=params).fit(logs)
    header, body = ensemble.policy_.ensemble.dumps().split("\n", 1)
    meta = json.loads(header)
    assert meta["action_design"] == "stacked" and "n_action_features" not in meta
    LightGBMEnsemble.loads(header + "\n" + body)
    text = json.dumps({**meta, "n_action_features": 2}) + "\n" + body
    with pytest.raises(ValueError, match=r"^Corrupted lightgbm_text_v1 header: "):
        LightGBMEnsemble.loads(text)
