"""LoggedBandit's positions and action_features (issue 19): validation, subsets, adapters and
obp's (n, K, L) action_dist read at each row's position by every estimator."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from estimator_cases import ESTIMATORS

from opboost.algorithms.estimators.ips import IPS
from opboost.algorithms.estimators.snips import SNIPS
from opboost.api.data.logged import LoggedBandit
from opboost.api.estimator import check_action_probs
from opboost.api.exceptions import InvalidParameterError

N, K, L = 9, 4, 3


def _slate_log(n: int = N, k: int = K, slots: int = L, seed: int = 0, **overrides):
    """A seeded slate log: every row one (context, position, action) impression."""
    rng = np.random.default_rng(seed)
    positions = np.arange(n) % slots
    logging = rng.dirichlet(np.ones(k), size=n)
    actions = np.arange(n) % k
    fields = {
        "contexts": rng.normal(size=(n, 2)),
        "actions": actions,
        "propensities": logging[np.arange(n), actions],
        "rewards": rng.integers(0, 2, n).astype(float),
        "n_actions": k,
        "logging_probs": logging,
        "positions": positions,
        "action_features": rng.normal(size=(k, 3)),
    }
    fields.update(overrides)
    return LoggedBandit(**fields)


# --- validation -----------------------------------------------------------------------------


def test_fields_are_kept_read_only_with_n_positions():
    data = _slate_log()
    assert data.positions.dtype == np.int64 and data.n_positions == L
    assert data.action_features.shape == (K, 3)
    assert not data.positions.flags.writeable and not data.action_features.flags.writeable
    assert "n_positions=3" in repr(data)
    no_slots = _slate_log(positions=None, action_features=None)
    assert no_slots.n_positions == 1 and no_slots.positions is None
    assert "n_positions" not in repr(no_slots)


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        pytest.param(
            {"positions": np.array([0, 1, 2, 0, -1, 2, 0, 1, 2])},
            r"LoggedBandit: positions must be slot indices in \[0, 2\*\*31\); index 4 has -1\. "
            r".*subtract 1 from 1-based",
            id="negative",
        ),
        pytest.param(
            {"positions": np.array([0, 1, 2, 0, 1, 2.5, 0, 1, 2])},
            r"positions must be integers; index 5 has 2\.5",
            id="fraction",
        ),
        pytest.param(
            {"positions": np.array([0, 1, np.nan, 0, 1, 2, 0, 1, 2])},
            r"positions must be integers; index 2 has nan",
            id="nan",
        ),
        pytest.param(
            {"positions": np.zeros(8, int)},
            r"positions must have shape \(9,\) to match the rows\. Got shape \(8,\)",
            id="length",
        ),
        pytest.param(
            {"positions": np.array(["a"] * N)},
            r"positions must be integers >= 0\. Got dtype <U1",
            id="strings",
        ),
        pytest.param(
            {"action_features": np.ones((K + 1, 2))},
            r"action_features must have shape \(4, d_a\) with d_a >= 1.*Got shape \(5, 2\)",
            id="rows",
        ),
        pytest.param(
            {"action_features": np.ones(K)},
            r"action_features must have shape \(4, d_a\).*Got shape \(4,\)",
            id="1-d",
        ),
        pytest.param(
            {"action_features": np.array([[0.0, 1.0], [2.0, np.inf], [0, 0], [0, 0]])},
            r"action_features must be finite; index \(1, 1\) has inf",
            id="inf",
        ),
        pytest.param(
            {"action_features": np.array([["a", "b"]] * K)},
            r"action_features must be numeric",
            id="strings-features",
        ),
    ],
)
def test_invalid_fields_name_field_index_and_value(overrides, match):
    with pytest.raises(ValueError, match=match):
        _slate_log(**overrides)


def test_whole_float_positions_are_integers():
    data = _slate_log(positions=(np.arange(N) % L).astype(float))
    assert data.positions.dtype == np.int64
    np.testing.assert_array_equal(data.positions, np.arange(N) % L)


# --- subsets and adapters -------------------------------------------------------------------


def _assert_same(a: LoggedBandit, b: LoggedBandit) -> None:
    for field in ("contexts", "actions", "propensities", "rewards", "logging_probs"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    np.testing.assert_array_equal(a.positions, b.positions)
    np.testing.assert_array_equal(a.action_features, b.action_features)
    assert a.n_actions == b.n_actions


def test_subset_split_and_with_rewards_keep_the_fields():
    data = _slate_log()
    rows = np.array([1, 4, 8])
    part = data.subset(rows)
    np.testing.assert_array_equal(part.positions, data.positions[rows])
    np.testing.assert_array_equal(part.action_features, data.action_features)
    np.testing.assert_array_equal(part.positions, [1, 1, 2])
    np.testing.assert_array_equal(data.subset(data.positions == 2).positions, [2, 2, 2])
    assert data.subset(data.positions == 0).n_positions == 1  # L is max(positions) + 1
    train, test = data.split(1 / 3, random_state=0)
    assert sorted([*train.positions, *test.positions]) == sorted(data.positions)
    assert train.action_features is not None and test.action_features is not None
    shifted = data.with_rewards(data.rewards + 1)
    np.testing.assert_array_equal(shifted.positions, data.positions)
    np.testing.assert_array_equal(shifted.action_features, data.action_features)


def test_obp_round_trip_keeps_positions_action_context_and_pi_b():
    data = _slate_log()
    feedback = data.to_obp()
    np.testing.assert_array_equal(feedback["position"], data.positions)
    np.testing.assert_array_equal(feedback["action_context"], data.action_features)
    assert feedback["pi_b"].shape == (N, K, L)
    rows = np.arange(N)
    # obp reads row i's logging distribution at slot position[i]
    np.testing.assert_array_equal(
        feedback["pi_b"][rows, :, feedback["position"]], data.logging_probs
    )
    _assert_same(LoggedBandit.from_obp(feedback), data)


def test_from_obp_reads_each_rows_slot_of_pi_b():
    rng = np.random.default_rng(3)
    pi_b = rng.dirichlet(np.ones(K), size=(N, L)).transpose(0, 2, 1)  # (n, K, L)
    positions = np.array([2, 0, 1, 1, 2, 0, 0, 2, 1])
    actions = np.arange(N) % K
    rows = np.arange(N)
    feedback = {
        "n_rounds": N,
        "n_actions": K,
        "context": rng.normal(size=(N, 2)),
        "action": actions,
        "position": positions,
        "reward": np.ones(N),
        "pscore": pi_b[rows, actions, positions],
        "pi_b": pi_b,
        "action_context": np.eye(K),
    }
    data = LoggedBandit.from_obp(feedback)
    np.testing.assert_array_equal(data.logging_probs, pi_b[rows, :, positions])
    np.testing.assert_array_equal(data.action_features, np.eye(K))
    # no position: obp's dict of a one-slot log, as before
    plain = LoggedBandit.from_obp({**feedback, "position": None, "pi_b": None})
    assert plain.positions is None and plain.n_positions == 1


def test_from_dataframe_optional_position_column():
    df = pd.DataFrame(
        {
            "x": [0.1, 0.2, 0.3],
            "arm": [0, 2, 1],
            "slot": [0, 1, 1],
            "p": [0.5, 0.25, 0.25],
            "click": [1.0, 0.0, 0.0],
        }
    )
    features = np.eye(3)
    data = LoggedBandit.from_dataframe(
        df,
        contexts=["x"],
        action="arm",
        propensity="p",
        reward="click",
        n_actions=3,
        position="slot",
        action_features=features,
    )
    np.testing.assert_array_equal(data.positions, [0, 1, 1])
    np.testing.assert_array_equal(data.action_features, features)
    assert (
        LoggedBandit.from_dataframe(
            df, contexts=["x"], action="arm", propensity="p", reward="click", n_actions=3
        ).positions
        is None
    )
    with pytest.raises(ValueError, match=r"column\(s\) \['pos'\] not in the DataFrame"):
        LoggedBandit.from_dataframe(
            df, contexts=["x"], action="arm", propensity="p", reward="click", position="pos"
        )


# --- estimators: obp's (n, K, L) action_dist --------------------------------------------------


def _action_dist(n: int, k: int, slots: int, seed: int = 1) -> np.ndarray:
    """obp's (n, K, L) action_dist: a distribution over actions at every slot."""
    return np.random.default_rng(seed).dirichlet(np.ones(k), size=(n, slots)).transpose(0, 2, 1)


@pytest.mark.parametrize("slots", [1, 2, 3])
def test_ips_and_snips_equal_obps_formulas_by_hand(slots):
    """obp: IPS = mean_i r_i pi_e(a_i | x_i, pos_i) / p_i; SNIPS = sum w_i r_i / sum w_i."""
    n = 50
    data = _slate_log(n=n, slots=slots, seed=slots)
    dist = _action_dist(n, K, slots)
    weights = [dist[i, data.actions[i], data.positions[i]] / data.propensities[i] for i in range(n)]
    ips = sum(w * r for w, r in zip(weights, data.rewards, strict=True)) / n
    snips = sum(w * r for w, r in zip(weights, data.rewards, strict=True)) / sum(weights)
    assert IPS().estimate_value(data, dist) == pytest.approx(ips, abs=1e-12, rel=1e-12)
    assert SNIPS().estimate_value(data, dist) == pytest.approx(snips, abs=1e-12, rel=1e-12)
    assert IPS().estimate_interval(data, dist).value == pytest.approx(ips, abs=1e-12)
    assert SNIPS().estimate_interval(data, dist).value == pytest.approx(snips, abs=1e-12)
    # the values differ from reading slot 0 for every row (when there are several slots)
    if slots > 1:
        assert IPS().estimate_value(data, dist[:, :, :1].repeat(slots, 2)) != pytest.approx(ips)


@pytest.mark.parametrize("make", ESTIMATORS)
def test_every_estimator_reads_the_rows_slot(make):
    """(n, K, L) with positions is the (n, K) matrix of each row's slot, for every estimator."""
    data = _slate_log(n=60)
    dist = _action_dist(60, K, L)
    rows_slot = dist[np.arange(60), :, data.positions]
    est = make()
    assert est.estimate_value(data, dist) == pytest.approx(
        est.estimate_value(data, rows_slot), rel=1e-12
    )


def test_one_slot_and_matrix_inputs_work_as_before():
    data = _slate_log(positions=None)
    dist = _action_dist(N, K, 1)
    np.testing.assert_array_equal(check_action_probs(data, dist, "IPS"), dist[:, :, 0])
    # an (n, K) matrix with positions: the same distribution at every position
    slates = _slate_log()
    np.testing.assert_array_equal(check_action_probs(slates, dist[:, :, 0], "IPS"), dist[:, :, 0])
    # more slots than the data use is fine (a subset may not reach the last slot)
    wide = _action_dist(N, K, L + 2)
    np.testing.assert_array_equal(
        check_action_probs(slates, wide, "IPS"), wide[np.arange(N), :, slates.positions]
    )


def test_multi_slot_dist_without_positions_names_the_fix():
    data = _slate_log(positions=None)
    with pytest.raises(
        InvalidParameterError,
        match=r"IPS: action_probs of shape \(9, 4, 3\) has 3 slots .*no positions.*"
        r"LoggedBandit\(\.\.\., positions=\.\.\.\)",
    ):
        IPS().estimate_value(data, _action_dist(N, K, L))


def test_too_few_slots_for_the_positions_names_the_row():
    data = _slate_log()  # positions 0, 1, 2, 0, ...
    with pytest.raises(
        InvalidParameterError,
        match=r"SNIPS: .*shape \(9, 4, 2\) has 2 slot\(s\), but data.positions index 2 has 2",
    ):
        SNIPS().estimate_value(data, _action_dist(N, K, 2))
