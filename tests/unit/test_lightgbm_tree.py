"""Unit tests of the ``lightgbm_tree`` base learner and its LightGBM-text ensemble."""

from __future__ import annotations

import json

import lightgbm as lgb
import numpy as np
import pytest
import scipy.sparse as sp

from opboost.algorithms.learners.lightgbm_tree import LightGBMTree
from opboost.api.exceptions import InvalidParameterError
from opboost.api.learner import BaseProblem
from opboost.api.numerics.design import action_rows
from opboost.lgbm.ensemble import LightGBMEnsemble
from opboost.lgbm.rows import ROW_WISE_MAX_BINS, design_rows, histogram_layout

N, D, K = 400, 4, 3
DESIGNS = ["stacked", "stacked_onehot", "per_action"]


@pytest.fixture(scope="module")
def contexts() -> np.ndarray:
    return np.random.default_rng(0).normal(size=(N, D))


def _problem(seed: int, n: int = N, zero_rows: int = 0) -> BaseProblem:
    """Targets depending on the action plus noise; per-example weights, some rows zero."""
    rng = np.random.default_rng(seed)
    targets = rng.normal(size=(n, K)) + np.arange(K)
    weights = np.repeat(rng.exponential(size=(n, 1)), K, axis=1)
    weights[:zero_rows] = 0.0
    return BaseProblem("regression", targets, weights)


def _learner(design: str = "stacked", **kw) -> LightGBMTree:
    params = {
        "num_leaves": 6,
        "min_data_in_leaf": 10,
        "num_threads": 1,
        "random_state": 0,
        "action_design": design,
    }
    return LightGBMTree(**{**params, **kw})


def _boost(learner: LightGBMTree, X, alphas, seed: int = 1) -> np.ndarray:
    """Run len(alphas) rounds; return F = sum_t alpha_t f_t on the training rows."""
    learner.prepare(X, K)
    F = np.zeros((X.shape[0], K))
    for t, alpha in enumerate(alphas):
        f = learner.fit_round(_problem(seed + t, n=X.shape[0]))
        learner.commit_round(alpha)
        F += alpha * f
    return F


def _new_tree_prediction(learner: LightGBMTree, X) -> np.ndarray:
    """LightGBM's own predict of the last iteration's tree(s) on the designed rows (n, K)."""
    booster = learner.booster_
    last = booster.num_trees() // learner._per_iter - 1
    rows = design_rows(X, K, learner.action_design)
    return booster.predict(rows, start_iteration=last, num_iteration=1, raw_score=True).reshape(
        X.shape[0], K
    )


@pytest.mark.parametrize("design", DESIGNS)
def test_fit_round_returns_new_tree_predictions(contexts, design):
    """fit_round's f equals a LightGBM predict of the new tree on the training rows."""
    learner = _learner(design)
    learner.prepare(contexts, K)
    learner.fit_round(_problem(1))
    learner.commit_round(0.7)
    f = learner.fit_round(_problem(2))
    assert f.shape == (N, K) and f.flags.c_contiguous
    np.testing.assert_allclose(f, _new_tree_prediction(learner, contexts), rtol=0, atol=1e-12)
    assert np.ptp(f) > 0


@pytest.mark.parametrize("design", DESIGNS)
def test_ensemble_native_prediction_equals_internal_scores(contexts, design):
    """The LightGBM ensemble's native prediction equals the booster's internal scores F."""
    learner = _learner(design)
    alphas = [0.5, -1.3, 2.0, 0.01, 0.8]
    F = _boost(learner, contexts, alphas)
    ensemble = learner.ensemble()
    assert ensemble.n_rounds == len(alphas)
    np.testing.assert_allclose(ensemble.decision_function(contexts), F, rtol=0, atol=1e-12)


@pytest.mark.parametrize("design", DESIGNS)
def test_leaf_values_are_weighted_means(contexts, design):
    """Every leaf's value is the weighted mean of the targets of its rows (weighted LS)."""
    learner = _learner(design, min_sum_hessian_in_leaf=0.0)
    learner.prepare(contexts, K)
    problem = _problem(3, zero_rows=50)
    f = learner.fit_round(problem)
    rows = design_rows(contexts, K, design)
    leaves = learner.booster_.predict(rows, pred_leaf=True).reshape(N, K)  # (n, K) leaf ids
    y, w = problem.targets, problem.weights
    for action_tree in range(K if design == "per_action" else 1):
        cols = [action_tree] if design == "per_action" else list(range(K))
        leaf, yy, ww, ff = (a[:, cols].ravel() for a in (leaves, y, w, f))
        for value in np.unique(leaf):
            mask = (leaf == value) & (ww > 0)
            mean = np.sum(ww[mask] * yy[mask]) / np.sum(ww[mask])
            np.testing.assert_allclose(ff[leaf == value], mean, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("design", ["stacked", "stacked_onehot"])
def test_stacked_trees_split_on_contexts_when_targets_cancel_over_actions(design):
    """Softmax targets e_a - pi sum to 0 over actions in every row; with K = 2 the stacked
    rows of a context cancel exactly, so every context feature has zero gain at the root.
    The tree must still split on the context below the action split (LightGBM would mark
    the features unsplittable without the learner's per-action weight tilt)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 3))
    sign = np.where(X[:, 0] > 0, 1.0, -1.0)
    targets = np.column_stack([sign, -sign]) * 0.5  # rows sum to exactly 0
    problem = BaseProblem("regression", targets, np.ones_like(targets))
    learner = LightGBMTree(num_leaves=8, num_threads=1, random_state=0, action_design=design)
    learner.prepare(X, 2)
    f = learner.fit_round(problem)
    tree = learner.booster_.dump_model()["tree_info"][0]
    assert tree["num_leaves"] > 2
    # the fit recovers the sign of x0 for both actions
    assert np.mean(np.sign(f[:, 0]) == sign) > 0.95
    assert np.mean(np.sign(f[:, 1]) == -sign) > 0.95


def test_weight_scale_invariance(contexts):
    """Scaling every weight by a constant leaves the fitted tree unchanged."""
    problem = _problem(4)
    fits = []
    for scale in (1.0, 1e-4, 3e3):
        learner = _learner()
        learner.prepare(contexts, K)
        scaled = BaseProblem("regression", problem.targets, problem.weights * scale)
        fits.append(learner.fit_round(scaled))
    np.testing.assert_allclose(fits[1], fits[0], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(fits[2], fits[0], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("design", DESIGNS)
def test_raw_hessian_units_apply_min_hessian_to_the_weights_as_given(contexts, design):
    """hessian_units="raw": min_sum_hessian_in_leaf counts the objective's weights (XGBoost's
    min_child_weight); "mean" counts typical rows whatever the weights' scale."""
    problem = _problem(5)
    # Just over half the total weight of every designed row: no split can leave that much on
    # both sides, so in raw units the tree is a single leaf.
    blocked = K * float(problem.weights[:, 0].sum()) / 2.0 * 1.01
    for scale in (1e-3, 1e3):
        scaled = BaseProblem("regression", problem.targets, problem.weights * scale)
        raw = _learner(design, hessian_units="raw", min_sum_hessian_in_leaf=blocked * scale)
        raw.prepare(contexts, K)
        f_raw = raw.fit_round(scaled)
        assert np.ptp(f_raw) < 1e-9, "raw units: the weights forbid every split"
        typical = _learner(design, min_sum_hessian_in_leaf=blocked * scale)
        typical.prepare(contexts, K)
        f_mean = typical.fit_round(scaled)
        # In typical-row units (mean weight 1, N*K rows) 1e-3 * blocked allows splits and
        # 1e3 * blocked forbids them, whatever the weights' scale.
        assert (np.ptp(f_mean) < 1e-9) == (scale > 1)


@pytest.mark.parametrize("design", DESIGNS)
def test_dumps_loads_bit_identical(contexts, design):
    """dumps/loads round trip keeps the header and gives bit-identical predictions."""
    learner = _learner(design)
    _boost(learner, contexts, [0.3, -0.9, 1.7])
    ensemble = learner.ensemble()
    text = ensemble.dumps()
    header = json.loads(text.partition("\n")[0])
    header.pop("sha256")
    assert header == {
        "format": "lightgbm_text_v1",
        "n_actions": K,
        "action_design": design,
        "n_features": D,
        "n_rounds": 3,
    }
    loaded = LightGBMEnsemble.loads(text)
    assert loaded.dumps() == text
    np.testing.assert_array_equal(
        loaded.decision_function(contexts), ensemble.decision_function(contexts)
    )


@pytest.mark.parametrize(
    "mutate, match",
    [
        pytest.param(lambda t: "hello world", "Not a lightgbm_text_v1", id="foreign"),
        pytest.param(
            lambda t: t.replace('"n_actions": 3', '"n_actions": "x"'), "header", id="bad-header"
        ),
        pytest.param(lambda t: t[: len(t) // 2], "SHA-256", id="truncated"),
        pytest.param(
            lambda t: t.replace('"n_features": 4', '"n_features": 9'), "columns", id="wrong-width"
        ),
        pytest.param(
            lambda t: t.replace("leaf_value=", "leaf_value=abc "), "SHA-256", id="garbled-tree"
        ),
    ],
)
def test_loads_rejects_corrupted_text(contexts, mutate, match):
    """loads raises ValueError naming the problem on foreign or corrupted text."""
    learner = _learner()
    _boost(learner, contexts, [0.5, 0.5])
    with pytest.raises(ValueError, match=match):
        LightGBMEnsemble.loads(mutate(learner.ensemble().dumps()))


@pytest.mark.parametrize("design", DESIGNS)
def test_sparse_contexts_match_dense(contexts, design):
    """CSR contexts train and predict like the same dense contexts."""
    sparse = contexts.copy()
    sparse[np.abs(sparse) < 0.8] = 0.0
    F_dense = _boost(_learner(design), sparse, [0.5, 1.0, -0.4])
    learner = _learner(design)
    F_sparse = _boost(learner, sp.csr_matrix(sparse), [0.5, 1.0, -0.4])
    np.testing.assert_allclose(F_sparse, F_dense, rtol=0, atol=1e-10)
    scores = learner.ensemble().decision_function(sp.csr_matrix(sparse))
    np.testing.assert_allclose(scores, F_sparse, rtol=0, atol=1e-12)


@pytest.mark.parametrize("design", ["stacked", "stacked_onehot"])
def test_stacked_dataset_trains_like_the_stacked_matrix(contexts, design):
    """Trees on the Dataset built from binned contexts equal trees on the explicit n*K rows."""
    learner = _learner(design)
    F = _boost(learner, contexts, [0.5, 1.0])
    rows = design_rows(contexts, K, design)
    params = learner._lgb_params(0) | {"force_col_wise": True}
    categorical = [D] if design == "stacked" else "auto"
    # Bins found on the n contexts (each once, action i % K), as the learner does.
    once = action_rows(contexts, np.arange(N) % K, K, action_encoding=design[8:] or "index")
    bins = lgb.Dataset(once, categorical_feature=categorical, params=params).construct()
    dataset = lgb.Dataset(rows, categorical_feature=categorical, params=params, reference=bins)
    booster = lgb.Booster(params, dataset)
    F_matrix = np.zeros((N, K))
    for t, alpha in enumerate([0.5, 1.0]):
        problem = _problem(1 + t)
        w = problem.weights / problem.weights[problem.weights > 0].mean()
        grad = (-w * problem.targets * learner._tilt).astype(np.float32).ravel()
        hess = (w * learner._tilt).astype(np.float32).ravel()
        booster.update(fobj=lambda *_, g=grad, h=hess: (g, h))
        f = booster.predict(rows, start_iteration=t, num_iteration=1).reshape(N, K)
        F_matrix += alpha * f
    np.testing.assert_allclose(F, F_matrix, rtol=0, atol=1e-9)


@pytest.mark.parametrize("design", DESIGNS)
def test_histogram_layout_changes_speed_not_trees(contexts, design):
    """Row-wise and column-wise histograms give the same trees, so the layout is free."""
    trees, scores = [], []
    for layout in ("force_row_wise", "force_col_wise"):
        learner = _learner(design, params={layout: True})
        scores.append(_boost(learner, contexts, [0.4, 0.9, -0.2]))
        trees.append(learner.booster_.dump_model()["tree_info"])
    assert trees[0] == trees[1]
    np.testing.assert_array_equal(scores[0], scores[1])


def test_histogram_layout_follows_the_bin_count(contexts):
    """Stacked designs go row-wise up to ROW_WISE_MAX_BINS bins in all; per_action col-wise."""
    learner = _learner()
    learner.prepare(contexts, K)
    dataset = learner.booster_.train_set
    n_bins = sum(dataset.feature_num_bin(j) for j in range(dataset.num_feature()))
    assert n_bins <= ROW_WISE_MAX_BINS
    assert histogram_layout(dataset, "stacked") == "force_row_wise"
    assert histogram_layout(dataset, "per_action") == "force_col_wise"
    wide = np.random.default_rng(1).normal(size=(N, ROW_WISE_MAX_BINS // 50))
    learner = _learner()
    learner.prepare(wide, K)
    dataset = learner.booster_.train_set
    assert sum(dataset.feature_num_bin(j) for j in range(dataset.num_feature())) > ROW_WISE_MAX_BINS
    assert histogram_layout(dataset, "stacked") == "force_col_wise"


def test_large_fits_time_both_layouts_on_their_dataset(contexts, monkeypatch):
    """From PROBE_MIN_ROWS designed rows, where the bin rule says column-wise, the layout is
    timed on the fit's own Dataset (both layouts, seeded gradients): whichever wins, the fit
    grows the same trees as with either layout forced, and the probe boosters leave the fit's
    Booster at round 0."""
    import opboost.lgbm.layout as layout

    timed = []
    real = layout.update_one_iter
    monkeypatch.setattr(layout, "PROBE_MIN_ROWS", 1)
    monkeypatch.setattr(layout, "histogram_layout", lambda dataset, design: "force_col_wise")
    monkeypatch.setattr(layout, "update_one_iter", lambda b, g, h: timed.append(b) or real(b, g, h))
    learner = _learner()
    learner.prepare(contexts, K)
    assert learner.histogram_layout_ in layout.LAYOUTS
    assert len(timed) == 2 * layout.PROBE_ROUNDS and learner.booster_.num_trees() == 0
    probed = _boost(_learner(), contexts, [0.4, 0.9, -0.2])
    monkeypatch.setattr(layout, "PROBE_MIN_ROWS", 10**9)
    for forced in layout.LAYOUTS:
        scores = _boost(_learner(params={forced: True}), contexts, [0.4, 0.9, -0.2])
        np.testing.assert_array_equal(probed, scores)


def test_per_action_adds_k_trees_and_stacked_one(contexts):
    """The stacked designs add one tree per round, per_action one per action."""
    for design, per_round in (("stacked", 1), ("stacked_onehot", 1), ("per_action", K)):
        learner = _learner(design)
        _boost(learner, contexts, [1.0, 1.0])
        assert learner.booster_.num_trees() == 2 * per_round


@pytest.mark.parametrize("design", DESIGNS)
def test_seeded_fits_are_deterministic(contexts, design):
    """Two fits with the same seed and feature_fraction < 1 give identical models."""
    texts = []
    for _ in range(2):
        learner = _learner(design, feature_fraction=0.5, random_state=7)
        _boost(learner, contexts, [0.4, 0.9, -0.2])
        texts.append(learner.ensemble().dumps())
    assert texts[0] == texts[1]


def test_alpha_zero_discards_the_round(contexts):
    """commit_round(0) removes the round: no tree, no score change, next f is the next tree."""
    learner = _learner()
    F = _boost(learner, contexts, [0.6])
    learner.fit_round(_problem(50))
    learner.commit_round(0.0)
    assert learner.booster_.num_trees() == 1 and learner.n_rounds_ == 1
    f = learner.fit_round(_problem(51))
    np.testing.assert_allclose(f, _new_tree_prediction(learner, contexts), atol=1e-12)
    learner.commit_round(2.0)
    np.testing.assert_allclose(
        learner.ensemble().decision_function(contexts), F + 2.0 * f, atol=1e-12
    )


def test_uncommitted_round_is_left_out_of_the_ensemble(contexts):
    """ensemble() excludes a fitted but uncommitted round; an unfitted one predicts 0."""
    learner = _learner()
    learner.prepare(contexts, K)
    learner.fit_round(_problem(5))
    empty = learner.ensemble()
    assert empty.n_rounds == 0
    np.testing.assert_array_equal(empty.decision_function(contexts), np.zeros((N, K)))
    assert LightGBMEnsemble.loads(empty.dumps()).booster.num_trees() == 0


def test_all_zero_weights_give_zero_f(contexts):
    """With every weight zero nothing is learnt: f is 0 and no tree is added."""
    learner = _learner()
    learner.prepare(contexts, K)
    problem = BaseProblem("regression", np.ones((N, K)), np.zeros((N, K)))
    np.testing.assert_array_equal(learner.fit_round(problem), np.zeros((N, K)))
    learner.commit_round(1.0)
    assert learner.booster_.num_trees() == 0 and learner.n_rounds_ == 0


def test_predict_round_and_warm_start(contexts):
    """predict_round gives the last f_t on new rows, the same before and after the committed
    leaves are scaled (reading the model scales them); warm_start continues a saved ensemble."""
    learner = _learner()
    F = _boost(learner, contexts, [0.5, -1.5])
    before = learner.predict_round(contexts)
    saved = LightGBMEnsemble.loads(learner.ensemble().dumps())
    f_last = _new_tree_prediction(learner, contexts) / -1.5
    np.testing.assert_allclose(before, f_last, atol=1e-12)
    np.testing.assert_array_equal(learner.predict_round(contexts), before)
    resumed = _learner()
    resumed.prepare(contexts, K)
    resumed.warm_start(saved)
    f = resumed.fit_round(_problem(9))
    resumed.commit_round(0.25)
    assert resumed.ensemble().n_rounds == 3
    np.testing.assert_allclose(
        resumed.ensemble().decision_function(contexts), F + 0.25 * f, atol=1e-12
    )


@pytest.mark.parametrize(
    "params, match",
    [
        pytest.param({"num_leaves": 1}, "'num_leaves' parameter of LightGBMTree", id="leaves"),
        pytest.param({"min_data_in_leaf": 0}, "'min_data_in_leaf'", id="min-data"),
        pytest.param({"feature_fraction": 0.0}, "'feature_fraction'", id="fraction"),
        pytest.param({"lambda_l2": -1.0}, "'lambda_l2'", id="l2"),
        pytest.param({"max_depth": -2}, "use -1 for no depth limit", id="depth"),
        pytest.param({"num_threads": -1}, "'num_threads'", id="threads"),
        pytest.param({"action_design": "tiled"}, "'action_design'.*'per_action'", id="design"),
        pytest.param({"hessian_units": "sum"}, "'hessian_units'.*'raw'", id="units"),
        pytest.param(
            {"params": {"objective": "l2"}}, r"may not set \['objective'\]", id="reserved"
        ),
        pytest.param({"params": {"num_leaves": 3}}, "named parameters", id="named"),
        pytest.param({"params": [1]}, "'params' parameter", id="params-type"),
    ],
)
def test_bad_parameters_are_named(contexts, params, match):
    """Invalid parameters fail at prepare with a message naming the parameter and value."""
    with pytest.raises(InvalidParameterError, match=match):
        _learner(**params).prepare(contexts, K)


def test_bad_problems_are_rejected(contexts):
    """fit_round rejects wrong shapes, negative weights and the classification reduction."""
    learner = _learner()
    with pytest.raises(InvalidParameterError, match="call prepare"):
        learner.fit_round(_problem(0))
    learner.prepare(contexts, K)
    with pytest.raises(InvalidParameterError, match=r"shape \(n, K\) = \(400, 3\)"):
        learner.fit_round(_problem(0, n=N - 1))
    bad = _problem(0)
    with pytest.raises(InvalidParameterError, match=">= 0"):
        learner.fit_round(BaseProblem("regression", bad.targets, -bad.weights))
    with pytest.raises(InvalidParameterError, match="'regression' reduction"):
        learner.fit_round(BaseProblem("classification", bad.targets, bad.weights))
    learner.fit_round(bad)
    learner.commit_round(1.0)
    with pytest.raises(InvalidParameterError, match="contexts have 5 features but"):
        learner.ensemble().decision_function(np.zeros((2, D + 1)))


def test_init_does_not_validate():
    """__init__ only stores parameters (scikit-learn convention); get_params round-trips."""
    learner = LightGBMTree(num_leaves=-5, params={"x": 1})
    assert learner.get_params()["num_leaves"] == -5
    assert LightGBMTree.name == "lightgbm_tree" and LightGBMTree.reduction == "regression"
    assert LightGBMTree.ensemble_class is LightGBMEnsemble
    assert isinstance(lgb.__version__, str)


def test_predict_round_designs_read_only_contexts_once(monkeypatch):
    """Evaluation contexts (read-only, as a LoggedBandit's) are designed once, not every round;
    writable contexts are designed on every call, so an in-place edit is never served stale."""
    import opboost.lgbm.rows as module

    rng = np.random.default_rng(0)
    X, K = rng.normal(size=(80, 3)), 3
    learner = LightGBMTree(num_leaves=4, random_state=0)
    learner.prepare(X, K, random_state=0)
    targets = rng.normal(size=(80, K))
    calls = []
    real = module.design_rows
    monkeypatch.setattr(module, "design_rows", lambda *a: calls.append(1) or real(*a))
    frozen = X[:20].copy()
    frozen.flags.writeable = False
    writable = X[:20].copy()
    for _ in range(3):
        learner.fit_round(BaseProblem("regression", targets, np.ones((80, K))))
        learner.commit_round(0.5)
        f_frozen, f_writable = learner.predict_round(frozen), learner.predict_round(writable)
        np.testing.assert_array_equal(f_frozen, f_writable)
    assert len(calls) == 1 + 3  # frozen once, writable every round
    writable[:] = 0.0
    np.testing.assert_array_equal(
        learner.predict_round(writable), learner.predict_round(np.zeros((20, 3)))
    )


@pytest.mark.parametrize("design", ["stacked", "stacked_onehot", "per_action"])
@pytest.mark.parametrize("sparse", [False, True])
def test_start_from_rewards_puts_the_scaled_reward_model_in_front(contexts, design, sparse):
    """F_0 returned on the training rows is what the ensemble predicts (the reward model's
    trees, scaled by ``scale(q)``; per-action trees hold each stacked tree once per action),
    it is not a round, it follows the rewards (the action paid more gets the higher score),
    and the rounds after it add to it."""
    rng = np.random.default_rng(3)
    X = sp.csr_matrix(contexts) if sparse else contexts
    actions = rng.integers(0, K, N)
    rewards = (actions == (contexts[:, 0] > 0)).astype(float)  # action 1 pays where x_0 > 0
    learner = _learner(design)
    learner.prepare(X, K, random_state=0)
    seen = []

    def scale(q):
        seen.append(q.copy())
        return 3.0

    f0 = learner.start_from_rewards(X, actions, rewards, scale)
    np.testing.assert_allclose(f0, 3.0 * seen[0], rtol=1e-12)
    np.testing.assert_allclose(learner.ensemble().decision_function(X), f0, rtol=1e-9, atol=1e-12)
    assert learner.n_rounds_ == 0 and learner.ensemble().n_rounds == 0
    positive = contexts[:, 0] > 0
    assert np.mean(f0[positive, 1] > f0[positive, 0]) > 0.9
    assert np.mean(f0[~positive, 0] > f0[~positive, 1]) > 0.9
    f = learner.fit_round(_problem(1))
    learner.commit_round(0.5)
    np.testing.assert_allclose(
        learner.ensemble().decision_function(X), f0 + 0.5 * f, rtol=1e-9, atol=1e-9
    )
    with pytest.raises(InvalidParameterError, match="right after prepare"):
        learner.start_from_rewards(X, actions, rewards, scale)


def test_per_action_trees_start_from_rewards_only_when_asked():
    """Every regression design offers the start; warm_start="auto" takes it on stacked rows
    only (per-action trees from F_0 = 0 won where they are for)."""
    for design in ("stacked", "stacked_onehot", "per_action"):
        assert _learner(design).offers_reward_start()
        assert _learner(design).prefers_reward_start() == (design != "per_action")


@pytest.mark.parametrize("design", ["stacked", "stacked_onehot"])
def test_the_fit_dataset_keeps_no_python_row_index(contexts, design):
    """LightGBM's subset() keeps its row indices as a Python list (about 36 bytes per stacked
    row, a third of the fit's Python memory); the fit's Dataset drops it once built."""
    learner = _learner(design)
    learner.prepare(contexts, K)
    dataset = learner.booster_.train_set
    assert dataset.used_indices is None and dataset.num_data() == N * K
    f = learner.fit_round(_problem(1))
    assert f.shape == (N, K) and np.abs(f).max() > 0


def test_the_reward_start_uses_reward_regressions_settings():
    """The reward model behind warm_start="reward_model" is fitted with the defaults of the
    reward_regression policy learner (what docs/benchmarks/defaults.md measured both with)."""
    from opboost.algorithms.learners.lightgbm_reward_start import REWARD_MODEL_PARAMS
    from opboost.algorithms.policy_learners.reward_regression import RewardRegression

    rr = RewardRegression().get_params()
    assert REWARD_MODEL_PARAMS["num_iterations"] == rr["n_estimators"]
    assert REWARD_MODEL_PARAMS["learning_rate"] == rr["learning_rate"]
    assert REWARD_MODEL_PARAMS["num_leaves"] == rr["num_leaves"]
    assert REWARD_MODEL_PARAMS["min_data_in_leaf"] == rr["min_child_samples"]


@pytest.mark.parametrize("design", ["stacked", "stacked_onehot"])
def test_a_draw_of_columns_without_the_action_grows_the_round_again(design):
    """feature_fraction < 1 may leave a stacked tree no action column: that tree changes no
    policy, and its alpha of 0 ended the fit at round 1 (a uniform policy). The round is
    grown again on another draw, so every committed tree splits on an action."""
    from opboost import Booster
    from opboost.simulation.datasets.bundled import SyntheticMulticlass
    from opboost.simulation.supervised import supervised_to_bandit

    data = SyntheticMulticlass(
        n_samples=3000, n_features=8, n_classes=4, n_informative=6, random_state=0
    ).load()
    sim = supervised_to_bandit(data.X, data.y, n_actions=4, random_state=0)
    learner = {"feature_fraction": 0.5, "num_threads": 1, "action_design": design}
    booster = Booster(warm_start="none", n_rounds=20, random_state=0, base_learner_params=learner)
    booster.fit(sim.logged)
    assert booster.n_rounds_ == 20, booster.stop_reason_
    model = booster.policy_.ensemble.booster.dump_model()
    for tree in model["tree_info"]:
        nodes, features = [tree["tree_structure"]], set()
        while nodes:
            node = nodes.pop()
            if "split_feature" in node:
                features.add(node["split_feature"])
                nodes += [node["left_child"], node["right_child"]]
        assert max(features) >= 8  # an action column
    assert np.mean(booster.predict(data.X) == data.y) > np.mean(sim.logged.rewards) + 0.2
