"""Serving path of LightGBM policies: single-thread predict for small batches, designed rows
built without scipy for dense contexts, and scores bit-identical to the previous path."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from opboost.algorithms.learners.lightgbm_tree import LightGBMTree
from opboost.api.exceptions import InvalidParameterError
from opboost.api.learner import BaseProblem
from opboost.api.numerics.design import stacked_design
from opboost.api.policy import Policy
from opboost.lgbm import ensemble as lightgbm_ensemble
from opboost.lgbm import process_threads as lightgbm_threads
from opboost.lgbm import threads
from opboost.lgbm.ensemble import LightGBMEnsemble
from opboost.lgbm.rows import design_rows

N, D, K = 300, 5, 4
DESIGNS = ["stacked", "stacked_onehot", "per_action"]


def _contexts(n: int, seed: int) -> np.ndarray:
    """Normal features with about half the entries exactly 0 (and some -0.0)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D))
    X[rng.random(size=X.shape) < 0.5] = 0.0
    X[rng.random(size=X.shape) < 0.05] = -0.0
    return X


@pytest.fixture(scope="module", params=DESIGNS)
def ensemble(request) -> LightGBMEnsemble:
    X = _contexts(N, 0)
    learner = LightGBMTree(
        num_leaves=8, min_data_in_leaf=5, num_threads=1, random_state=0, action_design=request.param
    )
    learner.prepare(X, K)
    rng = np.random.default_rng(1)
    for _ in range(6):
        targets = rng.normal(size=(N, K)) + X[:, :1] * np.arange(K)
        learner.fit_round(BaseProblem("regression", targets, np.ones((N, K))))
        learner.commit_round(0.5)
    return learner.ensemble()


def _previous_scores(ensemble: LightGBMEnsemble, X) -> np.ndarray:
    """The predict path before the serving change: scipy-built rows, LightGBM's default
    threads, in one block."""
    X = sp.csr_matrix(X) if sp.issparse(X) else np.asarray(X)
    dtype = X.dtype if X.dtype in (np.float32, np.float64) else np.float64
    X = X.astype(dtype)
    m = X.shape[0]
    if ensemble.action_design == "per_action":
        rows = X
    else:
        encoding = "onehot" if ensemble.action_design == "stacked_onehot" else "index"
        rows = stacked_design(X, K, dtype=dtype, action_encoding=encoding)
    return np.asarray(ensemble.booster.predict(rows, raw_score=True)).reshape(m, K)


@pytest.mark.parametrize("m", [1, 2, 37, 1000])
@pytest.mark.parametrize("kind", ["float64", "float32", "int", "csr"])
def test_scores_bit_identical_to_the_previous_path(ensemble, m, kind):
    X = _contexts(m, 10 + m)
    if kind == "float32":
        X = X.astype(np.float32)
    elif kind == "int":
        X = np.round(X * 3).astype(np.int64)
    elif kind == "csr":
        X = sp.csr_matrix(X)
    expected = _previous_scores(ensemble, X)
    scores = ensemble.decision_function(X)
    assert scores.shape == (m, K) and scores.dtype == np.float64
    assert np.array_equal(scores, expected)
    policy = Policy(ensemble, K, {"base_learner": "lightgbm_tree"})
    assert np.array_equal(policy.decision_function(X), expected)
    assert np.array_equal(policy.predict(X), np.argmax(expected, axis=1))
    probs = policy.predict_proba(X)
    assert probs.shape == (m, K) and np.allclose(probs.sum(axis=1), 1.0)


@pytest.mark.parametrize("threshold", [1, 10**12])
def test_threaded_chunked_and_single_thread_paths_agree(ensemble, monkeypatch, threshold):
    """Every batch on two threads, or every batch on one; chunks of 7 contexts (so the chunk
    loop runs, with a short last chunk): the same scores."""
    X = _contexts(50, 3)
    expected = _previous_scores(ensemble, X)
    monkeypatch.setattr(threads, "free_cores", lambda: 2)
    monkeypatch.setattr(lightgbm_ensemble, "PREDICT_WORK_PER_THREAD", threshold)
    assert np.array_equal(ensemble.decision_function(X), expected)
    monkeypatch.setattr(lightgbm_ensemble, "_PREDICT_CHUNK", 7)
    assert np.array_equal(ensemble.decision_function(X), expected)


@pytest.mark.parametrize("design", ["stacked", "stacked_onehot"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("m", [1, 3, 64])
def test_dense_design_rows_equal_stacked_design(design, dtype, m):
    X = _contexts(m, m).astype(dtype)
    encoding = "onehot" if design == "stacked_onehot" else "index"
    expected = stacked_design(X, K, dtype=dtype, action_encoding=encoding)
    rows = design_rows(X, K, design)
    assert rows.dtype == expected.dtype and rows.shape == expected.shape
    assert rows.flags.c_contiguous
    assert np.array_equal(rows, expected)
    assert np.array_equal(np.signbit(rows), np.signbit(expected))  # -0.0 kept


def test_small_predict_leaves_lightgbm_default_threads_unchanged(ensemble):
    """num_threads=1 in a predict overwrites LightGBM's process-wide default thread count;
    the ensemble puts the previous value back (a model trained in this process keeps its
    threads)."""
    default = lightgbm_threads.default_threads()
    if default is None:
        pytest.skip("this LightGBM build does not export LGBM_DEFAULT_NUM_THREADS")
    before = default.value
    try:
        for value in (-1, 2):
            default.value = value
            ensemble.decision_function(_contexts(1, 0))
            assert default.value == value
        # the check is meaningful: LightGBM's own predict does overwrite it
        rows = design_rows(_contexts(1, 0), K, ensemble.action_design)
        ensemble.booster.predict(rows, raw_score=True, num_threads=1)
        assert default.value == 1
    finally:
        default.value = before


@pytest.mark.parametrize("bad", [np.inf, -np.inf])
@pytest.mark.parametrize("sparse", [False, True])
def test_non_finite_contexts_still_rejected(ensemble, bad, sparse):
    X = _contexts(3, 5) + 1.0
    X[1, 2] = bad
    with pytest.raises(InvalidParameterError, match="finite"):
        ensemble.decision_function(sp.csr_matrix(X) if sparse else X)
    with pytest.raises(InvalidParameterError, match="finite"):
        Policy(ensemble, K, {"base_learner": "lightgbm_tree"}).predict(X[1:2])


def test_empty_batch(ensemble):
    X = np.zeros((0, D))
    assert ensemble.decision_function(X).shape == (0, K)
    assert Policy(ensemble, K, {"base_learner": "lightgbm_tree"}).predict(X).shape == (0,)
