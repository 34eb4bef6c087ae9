"""Unit tests of the built-in estimators: formulas, exactness with an oracle, errors."""

from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.sparse as sp

from opboost.algorithms.estimators.direct import DirectMethod, DoublyRobust, action_features
from opboost.algorithms.estimators.ips import IPS, TruncatedIPS
from opboost.algorithms.estimators.plugin import opboost_register_estimators
from opboost.algorithms.estimators.snips import SNIPS
from opboost.api.data.logged import LoggedBandit
from opboost.api.exceptions import InvalidParameterError

CLASSES = {
    "ips": IPS,
    "truncated_ips": TruncatedIPS,
    "snips": SNIPS,
    "dm": DirectMethod,
    "dr": DoublyRobust,
}
ALL = list(CLASSES)


def _dense(X):
    return X.toarray() if sp.issparse(X) else np.asarray(X)


class OracleModel:
    """Predicts the true expected reward: context column 0 is the row, the last K the action."""

    def __init__(self, table: np.ndarray):
        self.table = table

    def fit(self, X, y):
        return self

    def predict(self, X):
        X = _dense(X)
        k = self.table.shape[1]
        return self.table[X[:, 0].astype(int), X[:, -k:].argmax(axis=1)]


class ConstantModel:
    """Predicts the same value for every (x, a)."""

    def __init__(self, value: float):
        self.value = value

    def fit(self, X, y):
        return self

    def predict(self, X):
        return np.full(X.shape[0], self.value)


class LeakDetector:
    """Predicts 1 for rows (by context column 0) it was trained on, 0 for unseen rows."""

    def fit(self, X, y):
        self.seen_ = set(_dense(X)[:, 0].astype(int).tolist())
        return self

    def predict(self, X):
        return np.array([float(i in self.seen_) for i in _dense(X)[:, 0].astype(int)])


def _sparse_copy(data: LoggedBandit) -> LoggedBandit:
    return LoggedBandit(
        sp.csr_matrix(np.asarray(data.contexts)),
        data.actions,
        data.propensities,
        data.rewards,
        data.n_actions,
        data.logging_probs,
    )


def test_builtin_hook_registers_every_estimator_by_name():
    """The built-in estimator hook returns the five one-action classes and the four slate
    ones, keyed by their names."""
    from opboost.algorithms.estimators.slate import (
        SlateIndependentIPS,
        SlateRewardInteractionIPS,
    )
    from opboost.algorithms.estimators.slate_dr import SlateCascadeDR, SlateIndependentDR

    slates = [SlateIndependentIPS, SlateRewardInteractionIPS, SlateIndependentDR, SlateCascadeDR]
    classes = opboost_register_estimators()
    assert {cls.name: cls for cls in classes} == {**CLASSES, **{c.name: c for c in slates}}
    assert all(cls.kind == "estimator" for cls in classes)


def test_ips_round_values_are_reward_times_weight(synthetic_log):
    """IPS round values are r_i pi(a_i|x_i) / p_i."""
    data, probs = synthetic_log.data, synthetic_log.target_probs
    rows = np.arange(len(data))
    expected = data.rewards * probs[rows, data.actions] / data.propensities
    np.testing.assert_allclose(IPS().round_values(data, probs), expected, rtol=1e-12)


def test_truncated_ips_with_infinite_max_weight_equals_ips(synthetic_log):
    """max_weight=inf disables truncation: values and coefficients equal IPS."""
    data, probs = synthetic_log.data, synthetic_log.target_probs
    trunc = TruncatedIPS(max_weight=np.inf)
    assert trunc.estimate_value(data, probs) == pytest.approx(IPS().estimate_value(data, probs))
    np.testing.assert_allclose(trunc.coefficients(data), IPS().coefficients(data), rtol=1e-14)


def test_truncated_ips_coefficients_clip_inverse_propensity(synthetic_log):
    """Truncated coefficients are r_i min(1/p_i, M)."""
    data = synthetic_log.data
    expected = data.rewards * np.minimum(1 / data.propensities, 2.0)
    np.testing.assert_allclose(TruncatedIPS(max_weight=2.0).coefficients(data), expected)


@pytest.mark.parametrize("value", [pytest.param(-1.0, id="negative"), pytest.param(0.0, id="zero")])
def test_truncated_ips_rejects_nonpositive_max_weight(synthetic_log, value):
    """A max_weight <= 0 names the parameter, the value and the fix."""
    message = (
        f"The 'max_weight' parameter of TruncatedIPS must be a float > 0.0. "
        f"Got {value!r} instead; use inf to disable truncation."
    )
    with pytest.raises(InvalidParameterError, match=f"^{re.escape(message)}$"):
        TruncatedIPS(max_weight=value).estimate_value(
            synthetic_log.data, synthetic_log.target_probs
        )


@pytest.mark.parametrize("name", [pytest.param(n, id=n) for n in ALL])
def test_action_probs_shape_error_names_expected_shape(synthetic_log, name):
    """action_probs of the wrong shape is rejected with both shapes in the message."""
    est = CLASSES[name]()
    data = synthetic_log.data
    with pytest.raises(InvalidParameterError, match=r"must have shape \(300, 4\).*Got \(300, 3\)"):
        est.estimate_value(data, synthetic_log.target_probs[:, :3])


@pytest.mark.parametrize("name", [pytest.param(n, id=n) for n in ["snips"]])
def test_evaluation_only_estimators_give_no_coefficients(synthetic_log, name):
    """SNIPS refuses to drive training and says which estimators can."""
    with pytest.raises(InvalidParameterError, match=f"'{name}' gives no training coefficients"):
        CLASSES[name]().coefficients(synthetic_log.data)


# --- SNIPS -------------------------------------------------------------------------------


@pytest.mark.parametrize("shift", [pytest.param(c, id=f"c={c}") for c in (-3.0, -0.5, 0.7, 10.0)])
def test_snips_is_invariant_to_reward_translation(synthetic_log, shift):
    """SNIPS(r + c) = SNIPS(r) + c."""
    data, probs = synthetic_log.data, synthetic_log.target_probs
    shifted = data.with_rewards(data.rewards + shift)
    assert SNIPS().estimate_value(shifted, probs) == pytest.approx(
        SNIPS().estimate_value(data, probs) + shift, abs=1e-12
    )


@pytest.mark.parametrize(
    ("prob_scale", "propensity_scale"),
    [
        pytest.param(3.0, 1.0, id="scale-policy"),
        pytest.param(1.0, 0.5, id="scale-propensities"),
        pytest.param(0.2, 0.25, id="scale-both"),
    ],
)
def test_snips_is_invariant_to_weight_scaling(synthetic_log, prob_scale, propensity_scale):
    """Multiplying every importance weight by a constant leaves SNIPS unchanged."""
    data, probs = synthetic_log.data, synthetic_log.target_probs
    scaled = LoggedBandit(
        data.contexts,
        data.actions,
        data.propensities * propensity_scale,
        data.rewards,
        data.n_actions,
    )
    assert SNIPS().estimate_value(scaled, probs * prob_scale) == pytest.approx(
        SNIPS().estimate_value(data, probs), rel=1e-12
    )


def test_snips_round_values_average_to_the_estimate(synthetic_log):
    """mean(w r / mean(w)) equals sum(w r) / sum(w)."""
    data, probs = synthetic_log.data, synthetic_log.target_probs
    rows = np.arange(len(data))
    w = probs[rows, data.actions] / data.propensities
    expected = np.sum(w * data.rewards) / np.sum(w)
    assert SNIPS().estimate_value(data, probs) == pytest.approx(expected, rel=1e-12)
    assert np.mean(SNIPS().round_values(data, probs)) == pytest.approx(expected, rel=1e-12)


def test_snips_of_the_logging_policy_is_the_mean_reward_with_the_ips_interval(synthetic_log):
    """With all weights 1 the delta-method interval reduces to the t-interval of the rewards."""
    data = synthetic_log.data
    snips = SNIPS().estimate_interval(data, data.logging_probs, alpha=0.1)
    ips = IPS().estimate_interval(data, data.logging_probs, alpha=0.1)
    assert snips.value == pytest.approx(data.rewards.mean(), rel=1e-12)
    assert (snips.low, snips.high) == pytest.approx((ips.low, ips.high), rel=1e-12)


def test_snips_rejects_a_policy_with_zero_weight_on_every_logged_action(synthetic_log):
    """A policy that never plays a logged action makes SNIPS 0/0: an error, not a NaN."""
    data = synthetic_log.data
    probs = np.zeros((len(data), data.n_actions))
    probs[np.arange(len(data)), (data.actions + 1) % data.n_actions] = 1.0
    with pytest.raises(InvalidParameterError, match="probability 0 to every logged action"):
        SNIPS().estimate_value(data, probs)


# --- DM and DR -----------------------------------------------------------------------------


@pytest.mark.parametrize("sparse", [pytest.param(False, id="dense"), pytest.param(True, id="csr")])
@pytest.mark.parametrize(
    "n_folds", [pytest.param(1, id="no-crossfit"), pytest.param(3, id="3-fold")]
)
@pytest.mark.parametrize(
    "cls", [pytest.param(DirectMethod, id="dm"), pytest.param(DoublyRobust, id="dr")]
)
def test_exact_reward_model_gives_the_true_value(synthetic_log, cls, n_folds, sparse):
    """With an exact reward model and deterministic rewards, DM and DR equal the true value."""
    data = _sparse_copy(synthetic_log.data) if sparse else synthetic_log.data
    est = cls(reward_model=OracleModel(synthetic_log.table), n_folds=n_folds, random_state=0)
    value = est.estimate_value(data, synthetic_log.target_probs)
    assert abs(value - synthetic_log.true_value) < 1e-10


def test_dr_with_a_zero_reward_model_is_ips(synthetic_log):
    """q = 0 removes the direct term: DR round values equal IPS round values."""
    data, probs = synthetic_log.data, synthetic_log.target_probs
    dr = DoublyRobust(reward_model=ConstantModel(0.0), n_folds=1)
    np.testing.assert_allclose(
        dr.round_values(data, probs), IPS().round_values(data, probs), rtol=1e-12
    )


def test_dm_with_a_constant_reward_model_returns_the_constant(synthetic_log):
    """q = c gives DM = c for any policy whose rows sum to 1."""
    dm = DirectMethod(reward_model=ConstantModel(0.37), n_folds=2, random_state=1)
    value = dm.estimate_value(synthetic_log.data, synthetic_log.target_probs)
    assert value == pytest.approx(0.37, rel=1e-12)


@pytest.mark.parametrize(
    ("n_folds", "expected"),
    [
        pytest.param(1, 1.0, id="no-crossfit-sees-its-rows"),
        pytest.param(2, 0.0, id="crossfit-never-does"),
    ],
)
def test_cross_fitting_never_predicts_training_rows(synthetic_log, n_folds, expected):
    """With n_folds > 1 every prediction comes from a model that did not see that row."""
    dm = DirectMethod(reward_model=LeakDetector(), n_folds=n_folds, random_state=0)
    q = dm.reward_predictions(synthetic_log.data)
    assert q.shape == (300, 4)
    assert np.all(q == expected)


@pytest.mark.parametrize("sparse", [pytest.param(False, id="dense"), pytest.param(True, id="csr")])
def test_default_reward_model_is_seeded_and_accurate_on_dense_and_sparse(synthetic_log, sparse):
    """The default LightGBM model runs on CSR too, repeats under a seed, and beats a constant."""
    data = _sparse_copy(synthetic_log.data) if sparse else synthetic_log.data
    dr = DoublyRobust(random_state=3)
    q = dr.reward_predictions(data)
    np.testing.assert_array_equal(q, dr.reward_predictions(data))
    mse = np.mean((q - synthetic_log.table) ** 2)
    assert mse < np.var(synthetic_log.table)


def test_reward_model_is_not_fitted_in_place(synthetic_log):
    """The user's reward model is cloned per fold; the object passed in stays unfitted."""
    model = LeakDetector()
    DoublyRobust(reward_model=model, n_folds=2, random_state=0).estimate_value(
        synthetic_log.data, synthetic_log.target_probs
    )
    assert not hasattr(model, "seen_")


def test_action_features_stack_contexts_and_onehot():
    """[x; onehot(a)] has shape (m, d + K), dense for dense input and CSR for CSR input."""
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    expected = np.array([[1.0, 2.0, 0, 0, 1], [3.0, 4.0, 1, 0, 0]])
    np.testing.assert_array_equal(action_features(x, np.array([2, 0]), 3), expected)
    sparse = action_features(sp.csr_matrix(x), np.array([2, 0]), 3)
    assert sp.issparse(sparse) and sparse.format == "csr"
    np.testing.assert_array_equal(sparse.toarray(), expected)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        pytest.param(
            {"n_folds": 0},
            r"The 'n_folds' parameter of DoublyRobust must be an int "
            r">= 1\. Got 0 instead; use 1 to fit",
            id="zero-folds",
        ),
        pytest.param(
            {"n_folds": 2.0},
            r"'n_folds' parameter of DoublyRobust must be an int\. "
            r"Got 2\.0",
            id="float-folds",
        ),
        pytest.param(
            {"n_folds": 301},
            r"must be <= the number of rows \(300\)\. Got 301",
            id="more-folds-than-rows",
        ),
        pytest.param(
            {"reward_model": "ridge"},
            r"'reward_model' parameter of DoublyRobust "
            r"must be None or a regressor with fit\(X, y\) and predict\(X\)\. "
            r"Got 'ridge'",
            id="not-a-model",
        ),
    ],
)
def test_reward_model_estimator_parameter_errors(synthetic_log, params, match):
    """Bad n_folds or reward_model values name the parameter, the value and the fix."""
    with pytest.raises(InvalidParameterError, match=match):
        DoublyRobust(**params).estimate_value(synthetic_log.data, synthetic_log.target_probs)


# --- intervals -----------------------------------------------------------------------------


def _make(name):
    if name in ("dm", "dr"):
        return CLASSES[name](n_folds=2, random_state=0)
    return CLASSES[name]()


@pytest.mark.parametrize("name", [pytest.param(n, id=n) for n in ALL])
def test_interval_contains_the_estimate_and_widens_with_level(log_factory, name):
    """low <= value <= high, the value equals estimate_value, and 99% is wider than 80%."""
    log = log_factory(n=200, bernoulli=True, seed=5)
    est = _make(name)
    narrow = est.estimate_interval(log.data, log.target_probs, alpha=0.2)
    wide = est.estimate_interval(log.data, log.target_probs, alpha=0.01)
    assert narrow.low <= narrow.value <= narrow.high
    assert narrow.value == pytest.approx(est.estimate_value(log.data, log.target_probs))
    assert wide.value == pytest.approx(narrow.value)
    assert wide.low < narrow.low and wide.high > narrow.high
    assert (narrow.level, wide.level) == pytest.approx((0.8, 0.99))
