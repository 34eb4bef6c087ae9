"""Label-free model selection: held-out SNIPS/DR scoring of every round, truncation of the
ensemble to the selected round, agreement with selection by true labels on digits, the safe
fallback to the best constant action, and the parameter errors."""

from __future__ import annotations

import numpy as np
import pytest
from action_only_data import action_only_log

from opboost import Booster, load_policy
from opboost.api.data.logged import LoggedBandit
from opboost.api.exceptions import InvalidParameterError
from opboost.api.policy import ConstantPolicy
from opboost.api.serving.tie_order import constant_action_values
from opboost.core.callbacks import Callback, EarlyStopping
from opboost.core.selection import action_probs, logs_scorer
from opboost.simulation.supervised import expected_reward, supervised_to_bandit

LGB = {"num_threads": 1, "num_leaves": 8}


class FullPolicy(Callback):
    """Keeps the untruncated policy of the last round (the checkpoint snapshot)."""

    def on_fit_end(self, env):
        self.policy = env.snapshot()["policy"]


@pytest.fixture(scope="module")
def digits_log(digits):
    sim = supervised_to_bandit(digits.X[:1200], digits.y[:1200], n_actions=10, random_state=0)
    return sim.logged, digits.X[1200:], digits.y[1200:]


def test_constant_action_values_are_per_action_snips():
    data = LoggedBandit(
        np.zeros((5, 1)),
        np.array([0, 0, 1, 1, 1]),
        np.array([0.5, 0.25, 0.5, 0.5, 1.0]),
        np.array([1.0, 0.0, 1.0, 0.0, 1.0]),
        3,
    )
    values = constant_action_values(data)
    assert values[0] == pytest.approx(2.0 / 6.0)
    assert values[1] == pytest.approx(3.0 / 5.0)
    assert np.isnan(values[2])


def test_selected_rounds_match_true_label_selection_within_one_interval(digits_log):
    """SNIPS on 20% held-out logs picks a round whose TRUE test reward is within one
    interval width of the best round's; the policy predicts with the selected rounds only."""
    logged, X_test, y_test = digits_log
    full = FullPolicy()
    booster = Booster(
        n_rounds=40,
        warm_start="none",  # from F_0 = 0: staged rounds are the boosting rounds
        base_learner_params={"num_threads": 1},
        validation_fraction=0.2,
        refit=False,
        random_state=0,
    ).fit(logged, callbacks=[full])
    eye = np.eye(10)
    true = np.array(
        [
            expected_reward(eye[np.argmax(s, axis=1)], y_test)
            for s in full.policy.ensemble.staged_decision_function(X_test)
        ]
    )
    assert len(true) == booster.n_rounds_ == 40
    t_sel = booster.best_round_
    values = booster.history_["select_value"]
    assert t_sel == int(np.argmax(values)) + 1
    width = booster.selection_["high"] - booster.selection_["low"]
    assert 0 < width < 0.5
    assert true.max() - true[t_sel - 1] <= width
    # truncation: the fitted policy is the ensemble of the first t_sel rounds
    assert booster.policy_.n_rounds == t_sel < 40
    staged = list(full.policy.ensemble.staged_decision_function(X_test))[t_sel - 1]
    np.testing.assert_allclose(booster.decision_function(X_test), staged, atol=1e-9)
    assert booster.fallback_ is None
    assert booster.selection_["beats_logging"] and booster.selection_["beats_constant"]


def test_refit_uses_all_logs_for_the_selected_rounds(digits_log):
    """refit=True (default) ends with the fit on ALL logs for best_round_ rounds: the policy
    equals Booster(n_rounds=best_round_) on the full logs; the holdout report is kept."""
    logged, X_test, _ = digits_log
    params = {"base_learner_params": LGB, "random_state": 0, "warm_start": "none"}
    booster = Booster(n_rounds=15, validation_fraction=0.2, **params).fit(logged)
    t_sel = booster.best_round_
    assert 0 < t_sel <= 15 and booster.selection_["refit_rounds"] == t_sel
    assert booster.policy_.n_rounds == t_sel
    assert booster.policy_.metadata["selected_round"] == t_sel
    full = Booster(n_rounds=t_sel, **params).fit(logged)
    np.testing.assert_allclose(
        booster.decision_function(X_test), full.decision_function(X_test), atol=1e-9
    )
    assert len(booster.history_["select_value"]) == booster.n_rounds_


def test_refit_selection_copies_no_ensemble_per_round(digits_log, monkeypatch):
    """With refit the held-out fit's rounds are refitted, so the selection keeps only the
    best round's number: the learner's ensemble is copied a bounded number of times (not
    once per improving round), and the round chosen is the one refit=False keeps."""
    from opboost.algorithms.learners.lightgbm_tree import LightGBMTree

    logged, _, _ = digits_log
    params = {"base_learner_params": LGB, "random_state": 0, "warm_start": "none", "n_rounds": 30}
    calls = []
    copy = LightGBMTree.ensemble
    monkeypatch.setattr(LightGBMTree, "ensemble", lambda self: calls.append(1) or copy(self))
    kept = Booster(validation_fraction=0.2, refit=False, **params).fit(logged)
    copies_kept = len(calls)
    calls.clear()
    refitted = Booster(validation_fraction=0.2, **params).fit(logged)
    assert refitted.best_round_ == kept.best_round_ >= 10  # digits improves for many rounds
    values = kept.history_["select_value"]
    improved = int(np.sum(values > np.maximum.accumulate(np.r_[-np.inf, values[:-1]])))
    assert copies_kept >= improved > 4  # refit=False: a copy each time a round improved
    assert len(calls) <= 4  # init, select's stand-in, the two fits' final policies


def test_dr_selection_and_label_free_early_stopping(digits_log):
    """DR scores every round; EarlyStopping on select_value stops the fit without labels."""
    logged, _, _ = digits_log
    booster = Booster(
        n_rounds=200,
        base_learner_params=LGB,
        validation_fraction=0.25,
        selection="dr",
        random_state=0,
    ).fit(logged, callbacks=[EarlyStopping(metric="select_value", patience=5)])
    assert booster.n_rounds_ < 200
    assert "select_value" in booster.stop_reason_
    values = booster.history_["select_value"]
    assert np.all(np.isfinite(values))
    # the start (round 0) is a candidate too: the best round is the best of start and rounds
    best = booster.best_round_
    assert booster.selection_["value"] >= values.max()
    assert best == 0 or booster.selection_["value"] == values[best - 1]
    assert booster.selection_["method"] == "dr" and booster.selection_["n_holdout"] == 270


def test_safe_falls_back_to_best_constant_action(tmp_path):
    """Nothing beyond the best constant action is learnable: the learned policy's lower bound
    does not beat it, so the booster plays that constant action, and can save it."""
    data = action_only_log()
    booster = Booster(
        n_rounds=10, base_learner_params=LGB, validation_fraction=0.3, safe=True, random_state=0
    ).fit(data)
    assert booster.fallback_ == "constant"
    assert isinstance(booster.policy_, ConstantPolicy)
    assert booster.selection_["constant_action"] == 2
    X = np.zeros((7, 3))
    np.testing.assert_array_equal(booster.predict(X), np.full(7, 2))
    np.testing.assert_array_equal(booster.predict_proba(X), np.eye(4)[np.full(7, 2)])
    assert booster.policy_.metadata["fallback"] == "constant"
    assert booster.policy_.metadata["action"] == 2
    loaded = load_policy(booster.save(tmp_path / "p.json"))  # a fallback saves like any policy
    assert isinstance(loaded, ConstantPolicy) and loaded.action == 2
    np.testing.assert_array_equal(loaded.predict(X), np.full(7, 2))
    assert loaded.metadata["selection"]["beats_constant"] is False  # why it fell back
    unsafe = Booster(
        n_rounds=10, base_learner_params=LGB, validation_fraction=0.3, random_state=0
    ).fit(data)
    assert unsafe.fallback_ is None and not isinstance(unsafe.policy_, ConstantPolicy)


def test_holdout_scorer_snips_matches_estimator(digits_log):
    """SNIPS on fixed logs gives the SNIPS estimator's value of the one-hot policy."""
    from opboost.algorithms.estimators.snips import SNIPS

    logged, _, _ = digits_log
    scores = np.random.default_rng(0).normal(size=(len(logged), 10))
    got = logs_scorer(logged, "snips", 0).interval(action_probs(scores, "argmax"))
    probs = np.eye(10)[np.argmax(scores, axis=1)]
    want = SNIPS().estimate_interval(logged, probs)
    assert (got.value, got.low, got.high) == pytest.approx((want.value, want.low, want.high))


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (
            {"validation_fraction": 1.5},
            r"The 'validation_fraction' parameter of Booster must be a float > 0\.0 and "
            r"< 1\.0\. Got 1\.5 instead; use None \(no selection\), 'auto' or a fraction "
            r"such as 0\.2\.",
        ),
        (
            {"validation_fraction": 0.2, "selection": "oracle"},
            r"The 'selection' parameter of Booster must be 'auto' or a registered estimator "
            r"name, one of .*snips.*\. Got 'oracle' instead\.",
        ),
        (
            {"validation_fraction": 0.2, "refit": "yes"},
            r"The 'refit' parameter of Booster must be True or False\. Got 'yes' instead\.",
        ),
        (
            {"validation_fraction": 0.2, "selection_policy": "sample"},
            r"The 'selection_policy' parameter of Booster must be one of "
            r"\{'argmax', 'softmax'\}\. Got 'sample' instead\.",
        ),
        (
            {"safe": True, "validation_fraction": None},
            r"The 'safe' parameter of Booster needs held-out logs .* Got safe=True with "
            r"validation_fraction=None; set validation_fraction=0\.2 \(or safe=False\)\.",
        ),
        (
            {"validation_fraction": 0.001},
            r"The 'validation_fraction' parameter of Booster: LoggedBandit\.split: "
            r"test_size=0\.001 leaves an empty side for n=300 rows\.",
        ),
    ],
)
def test_invalid_selection_parameters(synthetic_log, params, message):
    with pytest.raises(InvalidParameterError, match=message):
        Booster(n_rounds=2, **params).fit(synthetic_log.data)
