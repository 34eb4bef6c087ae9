"""Estimators read a policy as (n, K) probabilities, (n,) integer actions or obp's (n, K, 1)
action_dist, through ``check_action_probs``; bad shapes and actions raise clear errors."""

from __future__ import annotations

import numpy as np
import pytest
from estimator_cases import ESTIMATORS

from opboost.algorithms.estimators.ips import IPS
from opboost.algorithms.estimators.snips import SNIPS
from opboost.api.estimator import check_action_probs
from opboost.api.exceptions import InvalidParameterError


def _actions(synthetic_log) -> np.ndarray:
    """A deterministic policy: the argmax of the target policy."""
    return np.argmax(synthetic_log.target_probs, axis=1)


@pytest.mark.parametrize("make", ESTIMATORS)
def test_actions_equal_one_hot_probabilities(synthetic_log, make):
    """(n,) integer actions give the same value, interval and round values as one-hot rows."""
    data, actions = synthetic_log.data, _actions(synthetic_log)
    one_hot = np.eye(data.n_actions)[actions]
    est = make()
    assert est.estimate_value(data, actions) == pytest.approx(
        est.estimate_value(data, one_hot), rel=1e-12
    )
    a, b = est.estimate_interval(data, actions), est.estimate_interval(data, one_hot)
    assert (a.value, a.low, a.high) == pytest.approx((b.value, b.low, b.high), rel=1e-12)
    np.testing.assert_allclose(est.round_values(data, actions), est.round_values(data, one_hot))


@pytest.mark.parametrize("make", ESTIMATORS)
def test_obp_action_dist_equals_matrix(synthetic_log, make):
    """obp's (n, K, 1) action_dist gives the same estimate as the (n, K) matrix."""
    data, probs = synthetic_log.data, synthetic_log.target_probs
    est = make()
    assert est.estimate_value(data, probs[:, :, None]) == pytest.approx(
        est.estimate_value(data, probs), rel=1e-12
    )
    np.testing.assert_allclose(
        est.round_values(data, probs[:, :, None]), est.round_values(data, probs)
    )


def test_unsigned_actions_and_one_hot_dtype(synthetic_log):
    """Unsigned actions are accepted; the result is a float one-hot matrix."""
    data, actions = synthetic_log.data, _actions(synthetic_log)
    probs = check_action_probs(data, actions.astype(np.uint8), "IPS")
    assert probs.dtype == np.float64 and probs.shape == (len(data), data.n_actions)
    np.testing.assert_array_equal(probs.argmax(axis=1), actions)
    np.testing.assert_array_equal(probs.sum(axis=1), 1.0)


@pytest.mark.parametrize(
    ("bad_action", "match"),
    [(4, r"action 4 at row 7 is out of range; .*\[0, 4\)"), (-1, r"action -1 at row 7")],
)
def test_out_of_range_action_names_row_and_range(synthetic_log, bad_action, match):
    """An action outside [0, K) names the action, its row and the valid range."""
    actions = _actions(synthetic_log)
    actions[7] = bad_action
    with pytest.raises(InvalidParameterError, match=match):
        SNIPS().estimate_value(synthetic_log.data, actions)


@pytest.mark.parametrize(
    ("make_input", "match"),
    [
        (lambda n, k: np.zeros(n, dtype=float), r"must be integers .* Got dtype float64"),
        (lambda n, k: np.zeros(n - 1, dtype=int), r"need shape \(300,\)\. Got \(299,\)"),
        (lambda n, k: np.full((n, k + 1), 0.2), r"must have shape \(300, 4\)"),
        (lambda n, k: np.full((n, k, 2), 0.25), r"2 slots .*the data have no positions"),
        (lambda n, k: np.full((n - 1, k, 1), 0.25), r"shape \(299, 4, 1\) does not fit"),
        (lambda n, k: np.full((n, k, 1, 1), 0.25), r"must have shape \(300, 4\)"),
        (lambda n, k: np.array(["a"] * n * k).reshape(n, k), r"must be numeric"),
    ],
    ids=["float_1d", "short_1d", "wrong_k", "multi_slot", "short_3d", "4d", "strings"],
)
def test_wrong_shapes_and_dtypes_raise(synthetic_log, make_input, match):
    """Every malformed input raises InvalidParameterError listing the accepted forms."""
    data = synthetic_log.data
    bad = make_input(len(data), data.n_actions)
    with pytest.raises(InvalidParameterError, match=match) as info:
        IPS().estimate_value(data, bad)
    assert "IPS:" in str(info.value)


def test_negative_probability_still_names_the_row(synthetic_log):
    """The (n, K) checks are unchanged: a negative entry names its row."""
    probs = synthetic_log.target_probs.copy()
    probs[5, 1] = -0.1
    with pytest.raises(InvalidParameterError, match=r"finite and >= 0; row 5"):
        IPS().estimate_value(synthetic_log.data, probs)
