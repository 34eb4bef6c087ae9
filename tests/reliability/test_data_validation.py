"""Issue 20, item 8 (and a seeded fuzz of item 5): bad data is a ValueError naming the field,
the first bad index and the value; predict rejects what fit rejects."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from opboost import Booster
from opboost.api.data.logged import LoggedBandit
from opboost.api.exceptions import ConfigError, InvalidParameterError
from opboost.compose.config import parse_config

N, K = 6, 3


def _fields(**changes):
    rng = np.random.default_rng(0)
    fields = dict(
        contexts=rng.normal(size=(N, 2)),
        actions=np.arange(N) % K,
        propensities=np.full(N, 1 / K),
        rewards=rng.random(N),
        n_actions=K,
    )
    fields.update(changes)
    return fields


@pytest.mark.parametrize(
    "changes, match",
    [
        pytest.param(
            dict(contexts=sp.csr_matrix((0, 2)), actions=[], propensities=[], rewards=[]),
            "contexts has 0 rows",
            id="sparse-0-rows",
        ),
        pytest.param(dict(contexts=np.zeros((N, 0))), "contexts has 0 features", id="0-features"),
        pytest.param(
            dict(contexts=sp.csr_matrix((N, 0))), "contexts has 0 features", id="sparse-0-features"
        ),
        pytest.param(
            dict(contexts=np.zeros((N, 2)) + np.eye(N, 2) * 1j),
            r"contexts must be real numbers; index \(0, 0\) has 1j",
            id="complex-contexts",
        ),
        pytest.param(
            dict(contexts=sp.csr_matrix(np.eye(N, 2) * 1j)),
            r"contexts must be real numbers; index \(0, 0\) has 1j",
            id="complex-sparse-contexts",
        ),
        pytest.param(
            dict(rewards=np.array([0, 0, 2j, 0, 0, 0])),
            "rewards must be real numbers; index 2 has 2j",
            id="complex-rewards",
        ),
        pytest.param(
            dict(propensities=np.full(N, 0.5) + np.eye(1, N, 4)[0] * 1j),
            r"propensities must be real numbers; index 4 has \(0.5\+1j\)",
            id="complex-propensities",
        ),
        pytest.param(
            dict(actions=np.array([0, 1, 2**63, 0, 1, 2], dtype=np.uint64)),
            r"actions must be in \[0, 3\); index 2 has 9223372036854775808\.",
            id="action-2**63",
        ),
        pytest.param(
            dict(actions=np.array([0, 1, 2.0**70, 0, 1, 2])),
            r"actions must be in \[0, 3\); index 2 has 1\.1805916207174113e\+21",
            id="action-2**70-float",
        ),
    ],
)
def test_bad_logged_bandit_input_names_field_index_and_value(changes, match):
    """Each accepted-but-wrong input of item 8 is now a ValueError with field, index, value."""
    with pytest.raises(ValueError, match=match):
        LoggedBandit(**_fields(**changes))


def test_sparse_contexts_are_read_only():
    """All three CSR arrays (data, indices, indptr) are frozen, not only data."""
    data = LoggedBandit(**_fields(contexts=sp.csr_matrix(np.eye(N, 2))))
    for part in (data.contexts.data, data.contexts.indices, data.contexts.indptr):
        assert not part.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            part[0] = 1


def _obp(**changes):
    fields = _fields()
    feedback = {
        "n_rounds": N,
        "n_actions": K,
        "context": fields["contexts"],
        "action": fields["actions"],
        "reward": fields["rewards"],
        "pscore": fields["propensities"],
    }
    feedback.update(changes)
    return feedback


def test_from_obp_rejects_fractional_n_actions():
    """n_actions=3.7 is an error, not truncated to 3; 3.0 is accepted."""
    with pytest.raises(ValueError, match=r"n_actions must be an int >= 2\. Got 3\.7"):
        LoggedBandit.from_obp(_obp(n_actions=3.7))
    assert LoggedBandit.from_obp(_obp(n_actions=3.0)).n_actions == K


def test_from_obp_multi_slot_pi_b_needs_position():
    """pi_b with several slots and no position is refused rather than cut to slot 0; with
    position, row i keeps slot position[i], and a position beyond pi_b's slots is named."""
    pi_b = np.full((N, K, 2), 1 / K)
    with pytest.raises(ValueError, match=r"pi_b has shape \(6, 3, 2\).*no position.*pi_b\[i, :"):
        LoggedBandit.from_obp(_obp(pi_b=pi_b))
    position = np.array([0, 0, 1, 0, 1, 0])
    data = LoggedBandit.from_obp(_obp(pi_b=pi_b, position=position))
    np.testing.assert_array_equal(data.positions, position)
    assert data.logging_probs.shape == (N, K) and data.n_positions == 2
    with pytest.raises(ValueError, match=r"position index 2 has 2, but pi_b .* only 2 slots"):
        LoggedBandit.from_obp(_obp(pi_b=pi_b, position=np.array([0, 0, 2, 0, 1, 0])))
    one_slot = LoggedBandit.from_obp(_obp(pi_b=pi_b[..., :1], position=np.zeros(N, int)))
    assert one_slot.logging_probs.shape == (N, K)


@pytest.mark.parametrize("learner", ["lightgbm_tree", "sklearn_tree"])
@pytest.mark.parametrize("bad", [math.nan, math.inf], ids=["nan", "inf"])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_predict_rejects_non_finite_contexts_like_fit(bad, sparse, learner):
    """LoggedBandit (fit) rejects infinite contexts, so predict does too, naming the index;
    NaN (a missing value) is refused only by a learner that cannot route it."""
    rng = np.random.default_rng(1)
    data = LoggedBandit(
        **_fields(
            contexts=rng.normal(size=(N * 10, 2)),
            actions=np.arange(60) % K,
            propensities=np.full(60, 1 / K),
            rewards=rng.random(60),
        )
    )
    params = {"num_leaves": 2, "min_data_in_leaf": 2, "num_threads": 1}
    if learner == "sklearn_tree":
        params = {"max_depth": 2}
    booster = Booster(n_rounds=2, base_learner=learner, base_learner_params=params).fit(data)
    X = np.zeros((4, 2))
    X[2, 1] = bad
    X = sp.csr_matrix(X) if sparse else X
    contexts = np.where(np.arange(12).reshape(6, 2) == 5, bad, 0.0)
    if math.isnan(bad) and learner == "lightgbm_tree":  # routed as missing
        assert booster.predict(X).shape == (4,) and LoggedBandit(**_fields(contexts=contexts))
        return
    with pytest.raises(InvalidParameterError, match=r"contexts must be finite.*index \(2, 1\)"):
        booster.predict(X)
    if math.isnan(bad):
        return
    with pytest.raises(ValueError, match=r"contexts must be finite or NaN; index \(2, 1\)"):
        LoggedBandit(**_fields(contexts=contexts))


# --- seeded fuzz (item 5): failures are ValueErrors naming the field, never anything else ------

_FIELDS = ("contexts", "actions", "propensities", "rewards", "n_actions", "logging_probs")
_BAD_SCALARS = [math.nan, math.inf, -math.inf, -1, 0, 2, 2**63, 1j, 0.5 + 1j, -0.0, 3.7, 1e308]


def _corrupt(rng: np.random.Generator) -> tuple[str, dict]:
    field = _FIELDS[rng.integers(len(_FIELDS))]
    fields = _fields()
    fields["logging_probs"] = np.full((N, K), 1 / K)
    value = _BAD_SCALARS[rng.integers(len(_BAD_SCALARS))]
    if field == "n_actions":
        fields[field] = value
        return field, fields
    arr = np.array(fields[field], dtype=complex if isinstance(value, complex) else None)
    if rng.random() < 0.2:  # a wrong shape instead of a wrong value
        arr = arr[: rng.integers(arr.shape[0])] if rng.random() < 0.5 else arr[..., None]
    else:
        if arr.dtype.kind in "iu" and not isinstance(value, int):
            arr = arr.astype(float if not isinstance(value, complex) else complex)
        if arr.dtype.kind in "iu" and value >= 2**63:
            arr = arr.astype(np.uint64)
        flat = arr.reshape(-1)
        flat[rng.integers(flat.size)] = value
        arr = flat.reshape(arr.shape)
    if field == "contexts" and rng.random() < 0.3 and arr.dtype.kind != "c" and arr.ndim == 2:
        arr = sp.csr_matrix(arr)
    fields[field] = arr
    return field, fields


def test_fuzz_logged_bandit_failures_are_value_errors_naming_the_field():
    """300 seeded corruptions: each either passes (a harmless value) or is a ValueError whose
    message names the corrupted field (pi_b-style consistency errors may name propensities)."""
    rng = np.random.default_rng(20)
    failures = 0
    for _ in range(300):
        field, fields = _corrupt(rng)
        try:
            LoggedBandit(**fields)
            # a nonzero imaginary part is never silently dropped
            assert not any(np.iscomplexobj(v) and np.any(np.imag(v)) for v in fields.values())
        except ValueError as exc:
            failures += 1
            names = {field, "propensities"} if field == "logging_probs" else {field}
            if field in ("actions", "propensities"):
                names |= {"logging_probs", "propensities", "actions"}
            if field == "n_actions":  # a valid but different K: actions or pi_b disagree
                names |= {"logging_probs", "actions"}
            assert any(name in str(exc) for name in names), (field, str(exc))
        # any other exception type fails the test
    assert failures > 150


_CONFIG_KEYS = [
    ("simulation", "log_fraction"),
    ("simulation", "logging_C"),
    ("simulation", "test_fraction"),
    ("simulation", "epsilon"),
    ("experiment", "confidence"),
    ("experiment", "n_jobs"),
    ("booster", "n_rounds"),
    ("booster", "learning_rate"),
    ("booster", "validation_fraction"),
    ("base_learner", "num_leaves"),
    ("base_learner", "feature_fraction"),
    ("estimator", "max_weight"),
]
_CONFIG_VALUES = [math.nan, math.inf, -math.inf, -2, -2.0, 0, 0.0, 1.5, 2.0, "x", True, [1]]


def test_fuzz_bad_config_values_are_config_errors_naming_the_key():
    """300 seeded bad config values: each parses (a valid value) or is a ConfigError whose key
    is the corrupted setting; never another exception type."""
    rng = np.random.default_rng(12)
    errors = 0
    for _ in range(300):
        table, key = _CONFIG_KEYS[rng.integers(len(_CONFIG_KEYS))]
        value = _CONFIG_VALUES[rng.integers(len(_CONFIG_VALUES))]
        algo = {"label": "a", "booster": {"n_rounds": 3}}
        raw = {"data": {"name": "digits"}, "algorithms": [algo]}
        if table in ("simulation", "experiment"):
            raw[table] = {key: value}
            where = f"{table}.{key}"
        elif table == "booster":
            algo["booster"][key] = value
            where = f"algorithms[0].booster.{key}"
        else:
            name = "lightgbm_tree" if table == "base_learner" else "truncated_ips"
            algo[table] = {"name": name, key: value}
            where = f"algorithms[0].{table}.{key}"
        try:
            parse_config(raw, file="fuzz.toml")
        except ConfigError as exc:
            errors += 1
            assert exc.file == "fuzz.toml"
            # test_fraction + valid_fraction is a whole-table check
            assert exc.key in (where, "simulation"), (where, str(exc))
    assert errors > 200
