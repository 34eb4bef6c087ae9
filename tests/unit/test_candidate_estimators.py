"""Estimators on logs with candidate sets (issue 19, item 2): hand-computed IPS, SNIPS,
truncated IPS, DM and DR values; a policy with mass outside a row's candidates is an error in
every estimator; the reward models of DM and DR are asked only about candidates."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from opboost.algorithms.estimators.direct import DirectMethod, DoublyRobust, action_features
from opboost.algorithms.estimators.ips import IPS, TruncatedIPS
from opboost.algorithms.estimators.snips import SNIPS
from opboost.api.data.logged import LoggedBandit
from opboost.api.exceptions import InvalidParameterError

N, K = 4, 4
MASK = np.array([[1, 1, 0, 0], [0, 1, 1, 1], [1, 0, 0, 1], [0, 0, 1, 0]], dtype=bool)
LOGGING = np.array([[0.25, 0.75, 0, 0], [0, 0.5, 0.25, 0.25], [0.5, 0, 0, 0.5], [0, 0, 1.0, 0]])
ACTIONS = np.array([1, 3, 0, 2])  # propensities 0.75, 0.25, 0.5, 1.0
REWARDS = np.array([1.0, 2.0, 0.0, 0.5])
POLICY = np.array([[1.0, 0, 0, 0], [0, 0.2, 0.2, 0.6], [0.5, 0, 0, 0.5], [0, 0, 1.0, 0]])
# E[r | row, action]; 7.0 marks non-candidates, which no reward model may be asked about
TABLE = np.array(
    [[0.1, 0.9, 7.0, 7.0], [7.0, 0.3, 0.6, 0.2], [0.4, 7.0, 7.0, 0.8], [7.0, 7.0, 0.5, 7.0]]
)


def _log(sparse: bool = False) -> LoggedBandit:
    return LoggedBandit(
        contexts=np.arange(float(N))[:, None],  # column 0 is the row index
        actions=ACTIONS,
        propensities=LOGGING[np.arange(N), ACTIONS],
        rewards=REWARDS,
        n_actions=K,
        logging_probs=LOGGING,
        candidates=sp.csr_matrix(MASK) if sparse else MASK,
    )


class Oracle:
    """Predicts TABLE[row, action] from [row; onehot(a)] and records every pair asked in
    ``asked``, which its deep copies (one per fold) share."""

    def __init__(self) -> None:
        self.asked: list = []

    def __deepcopy__(self, memo):
        return self

    def fit(self, X, y):
        return self

    def predict(self, X):
        rows, actions = X[:, 0].astype(int), X[:, 1:].argmax(axis=1)
        self.asked += list(zip(rows.tolist(), actions.tolist(), strict=True))
        return TABLE[rows, actions]


# Weights w = pi(a_i)/p_i = [0/0.75, 0.6/0.25, 0.5/0.5, 1/1] = [0, 2.4, 1, 1];
# w r = [0, 4.8, 0, 0.5].
HAND = {
    "ips": 5.3 / 4,
    "snips": 5.3 / 4.4,
    "truncated_ips": (0 + 2 * 2.0 + 0 + 0.5) / 4,  # min(w, 2) r
    # DM rows: 0.1; 0.2*0.3 + 0.2*0.6 + 0.6*0.2 = 0.3; 0.5*0.4 + 0.5*0.8 = 0.6; 0.5
    "dm": (0.1 + 0.3 + 0.6 + 0.5) / 4,
    # DR adds w (r - q(a_i)): 0; 2.4 * (2 - 0.2) = 4.32; 1 * (0 - 0.4); 1 * (0.5 - 0.5)
    "dr": (0.1 + (0.3 + 4.32) + (0.6 - 0.4) + 0.5) / 4,
}


def _estimators(oracle=None) -> dict:
    return {
        "ips": IPS(),
        "snips": SNIPS(),
        "truncated_ips": TruncatedIPS(max_weight=2.0),
        "dm": DirectMethod(reward_model=oracle or Oracle(), n_folds=1),
        "dr": DoublyRobust(reward_model=oracle or Oracle(), n_folds=1),
    }


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("name", sorted(HAND))
def test_values_equal_the_hand_computed_ones(name, sparse):
    oracle = Oracle()
    estimator = _estimators(oracle)[name]
    data = _log(sparse)
    assert estimator.estimate_value(data, POLICY) == pytest.approx(HAND[name], abs=1e-12)
    if name in ("dm", "dr"):
        assert oracle.asked and all(MASK[i, a] for i, a in oracle.asked)
        assert len(oracle.asked) == MASK.sum()  # every candidate once, nothing else


def test_reward_predictions_are_zero_outside_the_candidates():
    q = DirectMethod(reward_model=Oracle(), n_folds=1).reward_predictions(_log(True))
    np.testing.assert_array_equal(q, np.where(MASK, TABLE, 0.0))
    gamma = DoublyRobust(reward_model=Oracle(), n_folds=1).coefficients(_log())
    expected = np.where(MASK, TABLE, 0.0)
    expected[np.arange(N), ACTIONS] += (REWARDS - TABLE[np.arange(N), ACTIONS]) / LOGGING[
        np.arange(N), ACTIONS
    ]
    np.testing.assert_allclose(gamma, expected, rtol=0, atol=1e-12)


def test_deterministic_policy_inside_the_candidates():
    actions = np.array([0, 3, 3, 2])  # w = [0, 1/0.25, 0, 1/1] = [0, 4, 0, 1]
    data = _log()
    assert IPS().estimate_value(data, actions) == pytest.approx((0 + 8 + 0 + 0.5) / 4)
    assert SNIPS().estimate_value(data, actions) == pytest.approx(8.5 / 5)


def test_cross_fitted_default_model_predicts_the_candidate_entries_only():
    """With the default LightGBM model and 2 folds, q at the candidates equals the q of the
    same log without candidates (per-pair and per-action predictions agree)."""
    rng = np.random.default_rng(0)
    n, k = 200, 5
    mask = rng.random((n, k)) < 0.5
    mask[np.arange(n), rng.integers(0, k, n)] = True
    logging = mask / mask.sum(axis=1, keepdims=True)
    actions = np.array([rng.choice(np.flatnonzero(row)) for row in mask])
    fields = dict(
        contexts=rng.normal(size=(n, 3)),
        actions=actions,
        propensities=logging[np.arange(n), actions],
        rewards=rng.random(n),
        n_actions=k,
    )
    full = DoublyRobust(random_state=0).reward_predictions(LoggedBandit(**fields))
    for candidates in (mask, sp.csr_matrix(mask)):
        q = DoublyRobust(random_state=0).reward_predictions(
            LoggedBandit(**fields, candidates=candidates)
        )
        np.testing.assert_array_equal(q, np.where(mask, full, 0.0))


# --- policies outside the candidates --------------------------------------------------------


ALL = ["ips", "snips", "truncated_ips", "dm", "dr"]
OWNERS = {
    "ips": "IPS",
    "snips": "SNIPS",
    "truncated_ips": "TruncatedIPS",
    "dm": "DirectMethod",
    "dr": "DoublyRobust",
}


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("name", ALL)
def test_mass_outside_the_candidates_names_row_and_action(name, sparse):
    probs = POLICY.copy()
    probs[2] = [0.5, 0.0, 0.125, 0.375]  # action 2 is not a candidate of row 2
    with pytest.raises(InvalidParameterError) as info:
        _estimators()[name].estimate_value(_log(sparse), probs)
    assert str(info.value) == (
        f"{OWNERS[name]}: action_probs put probability 0.125 on action 2 in row 2, which is "
        f"not one of the row's candidates (data.candidates[2, 2] is False). Set the "
        f"probabilities of non-candidate actions to 0 and renormalise each row."
    )


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("name", ALL)
def test_deterministic_action_outside_the_candidates_names_row_and_action(name, sparse):
    with pytest.raises(InvalidParameterError) as info:
        _estimators()[name].estimate_interval(_log(sparse), np.array([1, 0, 3, 2]))
    assert str(info.value) == (
        f"{OWNERS[name]}: action 0 at row 1 is not one of the row's candidates "
        f"(data.candidates[1, 0] is False); choose each row's action among its candidates."
    )


def test_obp_action_dist_is_checked_at_the_rows_slot():
    data = LoggedBandit(**{**_fields(_log()), "positions": [0, 1, 0, 1]})
    dist = np.stack([POLICY, POLICY], axis=2)  # (n, K, 2)
    assert IPS().estimate_value(data, dist) == pytest.approx(HAND["ips"])
    dist[3, 0, 0] = 0.5  # row 3 reads slot 1: mass at slot 0 is not the row's
    assert IPS().estimate_value(data, dist) == pytest.approx(HAND["ips"])
    dist[3, 0, 1] = 0.5
    with pytest.raises(InvalidParameterError, match="on action 0 in row 3"):
        IPS().estimate_value(data, dist)


def _fields(data: LoggedBandit) -> dict:
    names = ("contexts", "actions", "propensities", "rewards", "n_actions", "logging_probs")
    return {name: getattr(data, name) for name in names} | {"candidates": data.candidates}


def test_features_of_the_reward_model_are_unchanged():
    """Candidates change which pairs are predicted, not the reward model's features."""
    X = action_features(np.ones((2, 1)), np.array([0, 3]), K)
    np.testing.assert_array_equal(X, [[1, 1, 0, 0, 0], [1, 0, 0, 0, 1]])
