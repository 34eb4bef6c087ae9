"""The stacked (and pair) Dataset is built without Python row lists, float64 action columns or
the context Dataset kept alive, and is still the Dataset of before: the same binary file (bins,
binned rows, metadata) and the same trees."""

from __future__ import annotations

import warnings

import lightgbm as lgb
import numpy as np
import pytest

from opboost.algorithms.learners.lightgbm_tree import LightGBMTree
from opboost.api.data.pairs import PairRows
from opboost.api.data.slots import SlotView
from opboost.lgbm.layout import update_one_iter
from opboost.lgbm.rows import missing_categories_as_nan, pairs_dataset, stacked_dataset

N, D, K = 500, 5, 4


def _params() -> dict:
    return LightGBMTree(num_leaves=6, min_data_in_leaf=5, num_threads=1)._lgb_params(3)


def _contexts() -> np.ndarray:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, D)).astype(np.float32)
    X[:, 0] = rng.integers(-1, 6, size=N)  # a categorical column with missing codes
    return X


def _list_built(X, design, params, categorical):
    """The construction before: subset() from a list of Python ints, float64 actions (the
    missing category as NaN, as LightGBM is handed it: a -1 code bins the same but leaves
    its bin finder's lowest value, -1.0, in the file)."""
    X = missing_categories_as_nan(X, categorical)
    n, d = X.shape
    onehot = design == "stacked_onehot"
    names = [f"Column_{j}" for j in range(d + (K if onehot else 1))]
    contexts = lgb.Dataset(
        X, params=params, feature_name=names[:d], categorical_feature=categorical
    )
    rows = contexts.construct().subset(np.repeat(np.arange(n), K).tolist()).construct()
    action = np.tile(np.arange(K), n)
    actions = lgb.Dataset(
        np.eye(K)[action] if onehot else action[:, None].astype(np.float64),
        params=params,
        feature_name=names[d:],
        categorical_feature="auto" if onehot else [0],
    ).construct()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rows.add_features_from(actions)


def _binary(dataset: lgb.Dataset, path) -> bytes:
    dataset.save_binary(str(path))
    return path.read_bytes()


def _trees(dataset: lgb.Dataset, params: dict) -> str:
    booster = lgb.Booster({**params, "force_row_wise": True}, dataset)
    rng = np.random.default_rng(1)
    for _ in range(3):
        grad = rng.normal(size=dataset.num_data()).astype(np.float32)
        update_one_iter(booster, grad, np.ones_like(grad))
    return booster.model_to_string()


@pytest.mark.parametrize("design", ["stacked", "stacked_onehot"])
@pytest.mark.parametrize("categorical", ["auto", [0]])
def test_stacked_dataset_is_the_dataset_built_from_python_lists(tmp_path, design, categorical):
    X, params = _contexts(), _params()
    new = stacked_dataset(X, K, design, params, categorical)
    old = _list_built(X, design, params, categorical)
    assert new.used_indices is None and new.reference is None  # nothing of the build kept
    assert _binary(new, tmp_path / "new.bin") == _binary(old, tmp_path / "old.bin")
    assert _trees(new, params) == _trees(old, params)


def test_pairs_dataset_is_the_dataset_built_from_python_lists(tmp_path):
    X, params = _contexts(), _params()
    rng = np.random.default_rng(2)
    candidates = rng.random((N, 6)) < 0.5
    candidates[:, 0] = True
    view = SlotView.from_candidates(candidates, N, 6)
    phi = rng.normal(size=(6, 2))
    new = pairs_dataset(PairRows(X, phi, view, ()), params)
    names = [f"Column_{j}" for j in range(D + 2)]
    contexts = lgb.Dataset(X, params=params, feature_name=names[:D]).construct()
    rows = contexts.subset(view.rows.tolist()).construct()
    items = lgb.Dataset(phi[view.pair_items], params=params, feature_name=names[D:])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        old = rows.add_features_from(items.construct())
    assert new.reference is None and new.num_data() == view.n_pairs
    assert _binary(new, tmp_path / "new.bin") == _binary(old, tmp_path / "old.bin")


def test_missing_categories_become_nan_only_where_categorical_and_lightgbm_reads_both_alike():
    """-1 and NaN are the same missing category to LightGBM (same bins, same branches), so
    handing it NaN changes no model; only the categorical columns' negative codes change,
    the caller's array is not written, and an array without them is passed as it is."""
    import scipy.sparse as sp

    X = _contexts().astype(np.float64)
    X[:5, 1] = -3.0  # a negative numeric value stays
    before = X.copy()
    Z = missing_categories_as_nan(X, [0])
    np.testing.assert_array_equal(X, before)
    assert np.isnan(Z[:, 0]).sum() == (X[:, 0] < 0).sum() > 0
    np.testing.assert_array_equal(Z[:, 1:], X[:, 1:])
    assert missing_categories_as_nan(X, "auto") is X
    assert missing_categories_as_nan(X.astype(np.float32), [0]).dtype == np.float32  # no 2x copy
    assert missing_categories_as_nan(X.astype(np.int64), [0]).dtype == np.float64  # NaN needs float
    clean = np.abs(X)
    assert missing_categories_as_nan(clean, [0]) is clean
    csr = missing_categories_as_nan(sp.csr_matrix(X), [0]).toarray()
    np.testing.assert_array_equal(np.isnan(csr), np.isnan(Z))
    y = (X[:, 0] == 2) - 2.0 * (X[:, 0] < 0) + np.random.default_rng(1).normal(size=N)
    params = {"objective": "regression", "verbose": -1, "num_threads": 1, "seed": 0,
              "min_data_in_leaf": 5, "max_cat_to_onehot": 64}  # fmt: skip
    models = [
        lgb.train(params, lgb.Dataset(rows, y, categorical_feature=[0]), num_boost_round=20)
        for rows in (X, Z)
    ]
    trees = [m.model_to_string().split("parameters:")[0] for m in models]
    assert trees[0] == trees[1]
    np.testing.assert_array_equal(models[1].predict(X), models[1].predict(Z))
