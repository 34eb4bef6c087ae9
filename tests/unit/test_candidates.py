"""LoggedBandit.candidates (issue 19, item 1): the per-row mask of eligible actions, dense or
sparse, its validation messages, subsets and the obp adapters (which have no candidates)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from opboost.api.data.logged import LoggedBandit

N, K = 5, 4
MASK = np.array(
    [
        [1, 1, 0, 0],
        [0, 1, 1, 1],
        [1, 0, 0, 1],
        [0, 0, 1, 0],
        [1, 1, 1, 1],
    ],
    dtype=bool,
)
ACTIONS = np.array([1, 3, 0, 2, 2])


def _log(candidates=MASK, **overrides) -> LoggedBandit:
    """A log whose logger is uniform over each row's candidates."""
    logging = MASK / MASK.sum(axis=1, keepdims=True)
    fields = {
        "contexts": np.arange(2.0 * N).reshape(N, 2),
        "actions": ACTIONS,
        "propensities": logging[np.arange(N), ACTIONS],
        "rewards": np.array([1.0, 0.0, 1.0, 0.5, 0.0]),
        "n_actions": K,
        "logging_probs": logging,
        "candidates": candidates,
    }
    fields.update(overrides)
    return LoggedBandit(**fields)


def _dense(candidates) -> np.ndarray:
    return candidates.toarray() if sp.issparse(candidates) else np.asarray(candidates)


# --- storage --------------------------------------------------------------------------------


def test_dense_input_is_a_read_only_bool_copy():
    given = MASK.astype(int)
    data = _log(given)
    assert isinstance(data.candidates, np.ndarray) and data.candidates.dtype == bool
    assert not data.candidates.flags.writeable
    given[0, 0] = 0  # a copy: the caller's array does not reach the log
    np.testing.assert_array_equal(data.candidates, MASK)
    np.testing.assert_array_equal(data.n_candidates, [2, 3, 2, 1, 4])
    assert data.n_candidates.dtype == np.int64
    assert "candidates per row=2.4" in repr(data)


@pytest.mark.parametrize("make", [sp.csr_matrix, sp.csc_matrix, sp.coo_array, sp.csr_array])
def test_sparse_input_is_a_read_only_canonical_boolean_csr(make):
    data = _log(make(MASK.astype(float)))
    stored = data.candidates
    assert isinstance(stored, sp.csr_matrix) and stored.dtype == bool
    assert stored.has_canonical_format and stored.nnz == MASK.sum()
    assert not any(p.flags.writeable for p in (stored.data, stored.indices, stored.indptr))
    np.testing.assert_array_equal(stored.toarray(), MASK)
    np.testing.assert_array_equal(data.n_candidates, [2, 3, 2, 1, 4])


def test_sparse_explicit_zeros_and_duplicates():
    rows, cols = np.nonzero(MASK)
    # an explicit False at (0, 2) and the candidate (1, 1) stored twice
    data = sp.coo_matrix(
        (np.r_[np.ones(len(rows)), 0, 1], (np.r_[rows, 0, 1], np.r_[cols, 2, 1])), shape=(N, K)
    )
    stored = _log(data).candidates
    assert stored.nnz == MASK.sum()
    np.testing.assert_array_equal(stored.toarray(), MASK)


def test_without_candidates_every_action_counts():
    data = _log(candidates=None, logging_probs=None)
    assert data.candidates is None
    np.testing.assert_array_equal(data.n_candidates, np.full(N, K))
    assert "candidates" not in repr(data)


# --- validation: exact messages -------------------------------------------------------------

_BAD_VALUE = MASK.astype(float)
_BAD_VALUE[2, 3] = 2.0
_EMPTY_ROW = MASK.copy()
_EMPTY_ROW[3] = False
_NO_LOGGED = MASK.copy()
_NO_LOGGED[1, 3] = False
_SPREAD = MASK / MASK.sum(axis=1, keepdims=True)
_SPREAD[2] = [0.25, 0.25, 0.0, 0.5]  # mass on action 1, not a candidate of row 2


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        pytest.param(
            {"candidates": MASK[:, :3]},
            "LoggedBandit: candidates must have shape (5, 4) (rows x actions), a boolean mask "
            "of each row's eligible actions. Got shape (5, 3).",
            id="shape",
        ),
        pytest.param(
            {"candidates": _BAD_VALUE},
            "LoggedBandit: candidates must be 0/1 or boolean; index (2, 3) has 2.0. Pass a "
            "boolean mask (or 0/1 values): True where the action is eligible.",
            id="value",
        ),
        pytest.param(
            {"candidates": _EMPTY_ROW},
            "LoggedBandit: candidates row 3 has no candidate; every row needs at least one "
            "eligible action (its logged action). Drop the row or fix its candidate set.",
            id="empty-row",
        ),
        pytest.param(
            {"candidates": _NO_LOGGED, "logging_probs": None},
            "LoggedBandit: actions must be candidates of their row; index 1 has 3. "
            "candidates[1, 3] is False, but a logger can only play an eligible action: fix "
            "the candidate set or the logged action.",
            id="logged-action",
        ),
        pytest.param(
            {"logging_probs": _SPREAD, "propensities": _SPREAD[np.arange(N), ACTIONS]},
            "LoggedBandit: logging_probs must be 0 outside the row's candidates; index (2, 1) "
            "has 0.25. The logger can only play eligible actions: zero the others and "
            "renormalise.",
            id="logging-mass",
        ),
    ],
)
def test_invalid_candidates_exact_messages(overrides, message, sparse):
    if sparse and "candidates" in overrides:
        overrides = {**overrides, "candidates": sp.csr_matrix(overrides["candidates"])}
    candidates = sp.csr_matrix(MASK) if sparse else MASK
    with pytest.raises(ValueError) as info:
        _log(**{"candidates": candidates, **overrides})
    assert str(info.value) == message


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_non_numeric_candidates(sparse):
    strings = np.where(MASK, "y", "n")
    if sparse:
        candidates = sp.csr_matrix(MASK.astype(complex))
        dtype = "complex128"
    else:
        candidates, dtype = strings, "<U1"
    with pytest.raises(ValueError) as info:
        _log(candidates)
    assert str(info.value) == (
        f"LoggedBandit: candidates must be a boolean mask. Got dtype {dtype}; pass bool or "
        f"0/1 values, True where the action is eligible."
    )


def test_fields_cannot_be_written():
    data = _log()
    with pytest.raises(ValueError, match="read-only"):
        data.candidates[0, 2] = True
    with pytest.raises(AttributeError):
        data.candidates = None


# --- subsets and adapters -------------------------------------------------------------------


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_subset_split_and_with_rewards_keep_the_rows_candidates(sparse):
    data = _log(sp.csr_matrix(MASK) if sparse else MASK)
    rows = np.array([4, 1, 3])
    part = data.subset(rows)
    assert sp.issparse(part.candidates) == sparse
    np.testing.assert_array_equal(_dense(part.candidates), MASK[rows])
    np.testing.assert_array_equal(part.n_candidates, [4, 3, 1])
    masked = data.subset(data.n_candidates >= 2)
    np.testing.assert_array_equal(_dense(masked.candidates), MASK[[0, 1, 2, 4]])
    train, test = data.split(0.4, random_state=0)
    for side in (train, test):
        assert sp.issparse(side.candidates) == sparse
        for i, row in enumerate(side.contexts[:, 0] // 2):  # contexts encode the row
            np.testing.assert_array_equal(_dense(side.candidates)[i], MASK[int(row)])
    shifted = data.with_rewards(data.rewards - 1)
    np.testing.assert_array_equal(_dense(shifted.candidates), MASK)


def test_obp_has_no_candidates():
    data = _log()
    feedback = data.to_obp()
    assert not any("candidate" in key for key in feedback)
    again = LoggedBandit.from_obp(feedback)
    assert again.candidates is None
    np.testing.assert_array_equal(again.logging_probs, data.logging_probs)
    # the candidates can be put back from the caller's own mask
    restored = LoggedBandit(**{**_fields(again), "candidates": data.candidates})
    np.testing.assert_array_equal(restored.candidates, MASK)


def _fields(data: LoggedBandit) -> dict:
    names = ("contexts", "actions", "propensities", "rewards", "n_actions", "logging_probs")
    return {name: getattr(data, name) for name in names}


def test_a_large_sparse_catalogue_stays_small():
    n, k, c = 20_000, 50_000, 5
    rng = np.random.default_rng(0)
    items = np.sort(rng.choice(k, size=(n, c)), axis=1)  # duplicates are allowed here
    candidates = sp.csr_matrix(
        (np.ones(n * c, bool), items.ravel(), np.arange(0, n * c + 1, c)), shape=(n, k)
    )
    data = LoggedBandit(
        contexts=np.ones((n, 1)),
        actions=items[:, 0],
        propensities=np.full(n, 1 / c),
        rewards=np.zeros(n),
        n_actions=k,
        candidates=candidates,
    )
    stored = data.candidates
    assert stored.data.nbytes + stored.indices.nbytes + stored.indptr.nbytes < 40 * n * c
    assert data.n_candidates.max() <= c


def test_dense_and_sparse_masks_agree_on_random_logs():
    """200 seeded random logs, some invalid: the dense and the sparse form of each mask both
    pass with the same counts, or both fail with the same message."""
    rng = np.random.default_rng(19)
    failures = 0
    for _ in range(200):
        n, k = int(rng.integers(1, 8)), int(rng.integers(2, 6))
        mask = rng.random((n, k)) < rng.uniform(0.2, 0.9)
        actions = rng.integers(0, k, n)
        if rng.random() < 0.7:  # usually a consistent log, sometimes not
            mask[np.arange(n), actions] = True
        logging = None
        if rng.random() < 0.5:
            logging = mask / np.maximum(mask.sum(axis=1, keepdims=True), 1)
            if rng.random() < 0.3:
                logging = np.full((n, k), 1 / k)
        fields = {
            "contexts": np.ones((n, 1)),
            "actions": actions,
            "propensities": np.full(n, 0.5) if logging is None else logging[np.arange(n), actions],
            "rewards": np.zeros(n),
            "n_actions": k,
            "logging_probs": logging,
        }
        outcomes = []
        for candidates in (mask, sp.csr_matrix(mask)):
            try:
                data = LoggedBandit(**fields, candidates=candidates)
                outcomes.append(data.n_candidates.tolist())
            except ValueError as exc:
                outcomes.append(str(exc))
        assert outcomes[0] == outcomes[1]
        failures += isinstance(outcomes[0], str)
    assert 20 < failures < 180
