"""Unit tests of LoggedBandit: validation rules, immutability, subsets, adapters."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from opboost.api.data.logged import LoggedBandit
from opboost.api.data.tabular import ActionCatalogueWarning
from opboost.api.exceptions import InvalidParameterError

N, K = 6, 3


def _fields(**overrides):
    """Valid constructor arguments for a 6-row, 3-action log, with ``overrides`` applied."""
    logging = np.tile([0.5, 0.3, 0.2], (N, 1))
    actions = np.array([0, 1, 2, 0, 1, 2])
    fields = {
        "contexts": np.arange(N * 2, dtype=float).reshape(N, 2),
        "actions": actions,
        "propensities": logging[np.arange(N), actions],
        "rewards": np.array([1.0, 0.0, 0.5, -1.0, 0.0, 2.0]),
        "n_actions": K,
        "logging_probs": None,
    }
    fields.update(overrides)
    return fields


def _with(field, index, value, dtype=float):
    array = np.array(_fields()[field], dtype=dtype)
    array[index] = value
    return _fields(**{field: array})


def test_valid_log_has_shapes_and_repr():
    """A valid log reports n, d, K and mean reward."""
    data = LoggedBandit(**_fields())
    assert (len(data), data.n_rounds, data.n_features, data.n_actions) == (6, 6, 2, 3)
    assert not data.is_sparse
    assert repr(data) == "LoggedBandit(n=6, d=2 features, n_actions=3, mean reward=0.4167)"


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        pytest.param(
            _fields(actions=np.zeros(5, int)),
            r"actions must have shape \(6,\) to match "
            r"contexts \(6, 2\)\. Got shape \(5,\)",
            id="actions-length",
        ),
        pytest.param(
            _fields(propensities=np.ones((6, 1))),
            r"propensities must have shape "
            r"\(6,\).*Got shape \(6, 1\)",
            id="propensities-2d",
        ),
        pytest.param(
            _fields(rewards=np.ones(7)),
            r"rewards must have shape \(6,\).*Got shape "
            r"\(7,\)",
            id="rewards-length",
        ),
        pytest.param(
            _fields(contexts=np.ones(6)),
            r"contexts must be a 2-D \(n, d\) array\. Got "
            r"shape \(6,\); reshape",
            id="contexts-1d",
        ),
        pytest.param(
            _fields(
                contexts=np.ones((0, 2)),
                actions=np.zeros(0, int),
                propensities=np.ones(0),
                rewards=np.ones(0),
            ),
            "contexts has 0 rows",
            id="no-rows",
        ),
        pytest.param(
            _fields(contexts=[["a", "b"]] * 6), "contexts must be numeric", id="contexts-strings"
        ),
    ],
)
def test_shape_rules(fields, match):
    """Shapes must agree with the contexts; the message gives both shapes."""
    with pytest.raises(ValueError, match=match):
        LoggedBandit(**fields)


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        pytest.param(
            _with("contexts", (4, 0), np.inf),
            r"contexts must be finite or NaN; index \(4, 0\) has inf\. Replace infinite "
            r"values: NaN marks a missing value",
            id="contexts-inf",
        ),
        pytest.param(
            _with("rewards", 3, np.nan),
            r"rewards must be finite; index 3 has nan\. "
            r"Drop or impute",
            id="rewards-nan",
        ),
        pytest.param(
            _with("rewards", 5, -np.inf),
            r"rewards must be finite; index 5 has -inf",
            id="rewards-inf",
        ),
        pytest.param(
            _with("propensities", 1, np.nan),
            r"propensities must be in \(0, 1\]; "
            r"index 1 has nan",
            id="propensities-nan",
        ),
        pytest.param(
            _with("propensities", 2, np.inf),
            r"propensities must be in \(0, 1\]; "
            r"index 2 has inf",
            id="propensities-inf",
        ),
        pytest.param(
            _with("actions", 4, np.nan),
            r"actions must be integers; index 4 has nan",
            id="actions-nan",
        ),
    ],
)
def test_nonfinite_values_are_rejected_with_field_and_index(fields, match):
    """NaN or inf in any field is an error naming the field, the first bad index and value."""
    with pytest.raises(ValueError, match=match):
        LoggedBandit(**fields)


@pytest.mark.parametrize(("value", "index"), [(np.inf, (3, 1)), (-np.inf, (5, 0))])
def test_nonfinite_sparse_contexts_report_row_and_column(value, index):
    """In CSR contexts the error gives the (row, column) of the first stored bad value."""
    dense = np.arange(1, N * 2 + 1, dtype=float).reshape(N, 2)
    dense[index] = value
    with pytest.raises(
        ValueError,
        match=rf"contexts must be finite or NaN; index \({index[0]}, "
        rf"{index[1]}\) has {value}",
    ):
        LoggedBandit(**_fields(contexts=sp.csr_matrix(dense)))


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_missing_context_values_are_kept(sparse):
    """NaN is a missing value: the logs keep it where it was (LightGBM routes it)."""
    dense = np.arange(1, N * 2 + 1, dtype=float).reshape(N, 2)
    dense[3, 1] = np.nan
    data = LoggedBandit(**_fields(contexts=sp.csr_matrix(dense) if sparse else dense))
    kept = data.contexts.toarray() if sparse else data.contexts
    np.testing.assert_array_equal(kept, dense)  # NaN compares equal to NaN here


@pytest.mark.parametrize(
    ("actions", "match"),
    [
        pytest.param(
            [0, 1, 3, 0, 1, 2],
            r"actions must be in \[0, 3\); index 2 has 3\. Encode "
            r"actions as 0\.\.K-1 or raise n_actions",
            id="too-large",
        ),
        pytest.param(
            [0, -1, 2, 0, 1, 2], r"actions must be in \[0, 3\); index 1 has -1", id="negative"
        ),
        pytest.param(
            [0.0, 1.5, 2, 0, 1, 2], r"actions must be integers; index 1 has 1\.5", id="fractional"
        ),
        pytest.param(
            list("abcabc"), r"actions must be integers in \[0, 3\)\. Got dtype <U1", id="strings"
        ),
    ],
)
def test_actions_must_be_integers_in_range(actions, match):
    """Actions outside 0..K-1 name the index and the value."""
    props = np.full(N, 0.5)
    with pytest.raises(ValueError, match=match):
        LoggedBandit(**_fields(actions=np.array(actions), propensities=props))


def test_integral_float_actions_are_accepted():
    """Float actions holding whole numbers are converted to int64."""
    data = LoggedBandit(**_fields(actions=np.array([0.0, 1, 2, 0, 1, 2])))
    assert data.actions.dtype == np.int64


ZERO_FIX = r"Drop or re-log zero-propensity rows"
ABOVE_ONE_FIX = (
    r"Propensities are the logging policy's probabilities of the logged action, at most 1; "
    r"pass those, not inverse-propensity weights, counts or scores\.$"
)


@pytest.mark.parametrize(
    ("index", "value", "fix"),
    [
        pytest.param(0, 0.0, ZERO_FIX, id="zero"),
        pytest.param(4, -0.1, ZERO_FIX, id="negative"),
        pytest.param(5, 1.2, ABOVE_ONE_FIX, id="above-one"),
    ],
)
def test_propensities_must_be_in_open_unit_interval(index, value, fix):
    """A propensity <= 0 or > 1 names 'propensities', the index and the value, with the fix
    for that side (above 1: not advice about zero propensities)."""
    with pytest.raises(
        ValueError,
        match=rf"propensities must be in \(0, 1\]; index {index} has {value}\. {fix}",
    ):
        LoggedBandit(**_with("propensities", index, value))


def test_propensity_of_one_is_valid():
    """p = 1 (a deterministic logger) is allowed."""
    assert LoggedBandit(**_fields(propensities=np.ones(N))).propensities.max() == 1.0


@pytest.mark.parametrize(
    ("n_actions", "match"),
    [
        pytest.param(1, r"n_actions must be an int >= 2\. Got 1; a bandit problem needs", id="one"),
        pytest.param(2.0, r"n_actions must be an int >= 2\. Got 2\.0\.", id="float"),
        pytest.param(True, r"n_actions must be an int >= 2\. Got True\.", id="bool"),
    ],
)
def test_n_actions_must_be_an_int_at_least_two(n_actions, match):
    """n_actions < 2 or not an int is rejected."""
    with pytest.raises(ValueError, match=match):
        LoggedBandit(**_fields(n_actions=n_actions, actions=np.zeros(N, int)))


def test_numpy_integer_n_actions_becomes_int():
    """np.int64 n_actions is accepted and stored as a Python int."""
    assert type(LoggedBandit(**_fields(n_actions=np.int64(3))).n_actions) is int


@pytest.mark.parametrize(
    ("logging_probs", "match"),
    [
        pytest.param(
            np.full((N, 2), 0.5),
            r"logging_probs must have shape \(6, 3\)\. Got "
            r"\(6, 2\)",
            id="shape",
        ),
        pytest.param(
            np.tile([1.5, -0.3, -0.2], (N, 1)),
            r"logging_probs must be in \[0, 1\]; "
            r"index \(0, 0\) has 1\.5",
            id="out-of-range",
        ),
        pytest.param(
            np.tile([0.5, 0.3, 0.3], (N, 1)),
            r"logging_probs rows must sum to 1; "
            r"index 0 has 1\.1",
            id="row-sum",
        ),
        pytest.param(
            np.tile([0.3, 0.5, 0.2], (N, 1)),
            r"propensities must equal "
            r"logging_probs\[i, actions\[i\]\]; index 0 has 0\.5\. logging_probs gives "
            r"0\.3",
            id="inconsistent",
        ),
    ],
)
def test_logging_probs_rules(logging_probs, match):
    """logging_probs must be (n, K) probabilities consistent with the propensities."""
    with pytest.raises(ValueError, match=match):
        LoggedBandit(**_fields(logging_probs=logging_probs))


def test_consistent_logging_probs_are_kept_read_only():
    """Valid logging_probs are stored, read-only."""
    data = LoggedBandit(**_fields(logging_probs=np.tile([0.5, 0.3, 0.2], (N, 1))))
    assert data.logging_probs.shape == (N, K) and not data.logging_probs.flags.writeable


# --- immutability ----------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["contexts", "actions", "propensities", "rewards"])
def test_arrays_are_read_only(field):
    """Every stored array refuses in-place writes."""
    data = LoggedBandit(**_fields())
    with pytest.raises(ValueError, match="read-only"):
        getattr(data, field)[0] = 0


def test_fields_cannot_be_reassigned():
    """The dataclass is frozen."""
    data = LoggedBandit(**_fields())
    with pytest.raises(dataclasses.FrozenInstanceError):
        data.rewards = np.zeros(N)


def test_input_arrays_are_copied():
    """Changing the caller's array afterwards does not change the log."""
    fields = _fields()
    data = LoggedBandit(**fields)
    fields["rewards"][0] = 99.0
    fields["contexts"][0, 0] = 99.0
    assert data.rewards[0] == 1.0 and data.contexts[0, 0] == 0.0


def test_sparse_contexts_are_accepted_as_read_only_csr():
    """COO or CSR contexts are stored as CSR with read-only data."""
    dense = np.eye(N, 4)
    data = LoggedBandit(**_fields(contexts=sp.coo_matrix(dense)))
    assert data.is_sparse and data.contexts.format == "csr"
    np.testing.assert_array_equal(data.contexts.toarray(), dense)
    with pytest.raises(ValueError, match="read-only"):
        data.contexts.data[0] = 5.0
    assert "sparse features" in repr(data)


# --- subsets ---------------------------------------------------------------------------------


def test_subset_by_indices_and_mask():
    """subset takes integer positions or a boolean mask and keeps every field aligned."""
    data = LoggedBandit(**_fields(logging_probs=np.tile([0.5, 0.3, 0.2], (N, 1))))
    part = data.subset([4, 1])
    np.testing.assert_array_equal(part.actions, [1, 1])
    np.testing.assert_array_equal(part.rewards, [0.0, 0.0])
    np.testing.assert_array_equal(part.contexts, data.contexts[[4, 1]])
    assert part.logging_probs.shape == (2, K)
    masked = data.subset(data.rewards > 0)
    np.testing.assert_array_equal(masked.rewards, [1.0, 0.5, 2.0])


def test_subset_mask_of_wrong_length():
    """A boolean mask must have one entry per row."""
    with pytest.raises(ValueError, match=r"boolean mask must have shape \(6,\)\. Got \(5,\)"):
        LoggedBandit(**_fields()).subset(np.ones(5, bool))


def test_split_sizes_disjoint_and_seeded():
    """split gives disjoint sides covering every row, the same for the same seed."""
    n = 50
    data = LoggedBandit(
        np.arange(n, dtype=float)[:, None],
        np.zeros(n, int),
        np.ones(n),
        np.arange(n, dtype=float),
        2,
    )
    train, test = data.split(0.3, random_state=7)
    assert (len(train), len(test)) == (35, 15)
    ids_train, ids_test = set(train.rewards), set(test.rewards)
    assert not ids_train & ids_test and ids_train | ids_test == set(range(n))
    again = data.split(0.3, random_state=7)[1]
    np.testing.assert_array_equal(again.rewards, test.rewards)
    other = data.split(0.3, random_state=8)[1]
    assert set(other.rewards) != ids_test


def test_split_without_shuffle_takes_the_head_as_test():
    """shuffle=False puts the first rows in the test side."""
    _, test = LoggedBandit(**_fields()).split(0.5, shuffle=False)
    np.testing.assert_array_equal(test.contexts[:, 0], [0.0, 2.0, 4.0])


@pytest.mark.parametrize(
    ("test_size", "match"),
    [
        pytest.param(
            0.0,
            r"The 'test_size' parameter of LoggedBandit\.split must be a float "
            r"> 0\.0 and < 1\.0\. Got 0\.0",
            id="zero",
        ),
        pytest.param(1.0, r"must be a float > 0\.0 and < 1\.0\. Got 1\.0", id="one"),
        pytest.param(0.01, r"test_size=0\.01 leaves an empty side for n=6 rows", id="empty"),
    ],
)
def test_split_bad_test_size(test_size, match):
    """test_size must leave rows on both sides."""
    with pytest.raises(ValueError, match=match):
        LoggedBandit(**_fields()).split(test_size, random_state=0)


def test_with_rewards_replaces_only_rewards():
    """with_rewards returns a validated copy with new rewards and the same other fields."""
    data = LoggedBandit(**_fields())
    shifted = data.with_rewards(data.rewards - 1.0)
    np.testing.assert_array_equal(shifted.rewards, data.rewards - 1.0)
    np.testing.assert_array_equal(shifted.actions, data.actions)
    assert data.rewards[0] == 1.0
    with pytest.raises(ValueError, match="rewards must be finite; index 2 has nan"):
        data.with_rewards(np.array([0, 0, np.nan, 0, 0, 0]))
    with pytest.raises(ValueError, match="rewards"):
        data.with_rewards(np.zeros(5))


def test_with_rewards_shares_the_read_only_fields():
    """The shifted copy a fit with reward_shift makes holds the same contexts (no copy of the
    (n, d) matrix); its rewards are its own and read-only."""
    data = LoggedBandit(**_fields())
    shifted = data.with_rewards(data.rewards + 0.5)
    assert shifted.contexts is data.contexts and shifted.actions is data.actions
    assert type(shifted) is LoggedBandit and not shifted.rewards.flags.writeable
    assert len(shifted) == len(data) and shifted.n_actions == data.n_actions


# --- adapters --------------------------------------------------------------------------------


def _frame():
    f = _fields()
    return pd.DataFrame(
        {
            "x0": f["contexts"][:, 0],
            "x1": f["contexts"][:, 1],
            "a": f["actions"],
            "p": f["propensities"],
            "r": f["rewards"],
        }
    )


def test_from_dataframe_reads_columns():
    """from_dataframe maps named columns to fields; n_actions defaults to max(action) + 1,
    with a warning that a never-logged action above it is unknown."""
    with pytest.warns(ActionCatalogueWarning, match="n_actions is inferred as max"):
        data = LoggedBandit.from_dataframe(
            _frame(), contexts=["x0", "x1"], action="a", propensity="p", reward="r"
        )
    expected = LoggedBandit(**_fields())
    np.testing.assert_array_equal(data.contexts, expected.contexts)
    np.testing.assert_array_equal(data.propensities, expected.propensities)
    assert data.n_actions == 3
    wider = LoggedBandit.from_dataframe(
        _frame(), contexts=["x1"], action="a", propensity="p", reward="r", n_actions=5
    )
    assert (wider.n_actions, wider.n_features) == (5, 1)


def test_from_dataframe_missing_column():
    """A missing column is named, with the available columns."""
    with pytest.raises(
        ValueError,
        match=r"column\(s\) \['x2', 'prop'\] not in the DataFrame\. "
        r"Available: \['x0', 'x1', 'a', 'p', 'r'\]",
    ):
        LoggedBandit.from_dataframe(
            _frame(), contexts=["x0", "x2"], action="a", propensity="prop", reward="r"
        )


def _read(frame, **columns):
    names = {"contexts": ["x0", "x1"], "action": "a", "propensity": "p", "reward": "r"}
    return LoggedBandit.from_dataframe(frame, **{**names, **columns}, n_actions=3)


def test_from_dataframe_names_a_text_reward_column():
    """Issue 49 item 9: a "yes"/"no" reward column is named with its bad value and the
    mapping that fixes it (a6d95a2: pandas' "could not convert string to float: 'no'")."""
    frame = _frame().assign(r=np.where(_frame()["r"] > 0.5, "yes", "no"))
    first = frame["r"].iloc[0]
    with pytest.raises(
        ValueError,
        match=rf"^LoggedBandit\.from_dataframe: the reward column 'r' must hold numbers; row 0 "
        rf"has '{first}', so map its values to numbers first, e\.g\. df\['r'\] = "
        rf"df\['r'\]\.map\(\{{'no': 0\.0, 'yes': 1\.0\}}\)\.$",
    ):
        _read(frame)


def test_from_dataframe_names_a_propensity_above_one():
    """Issue 49 item 9: a propensity of 1.5 names the column, row and value, with advice for
    values above 1 (a6d95a2: advice about zero propensities)."""
    frame = _frame()
    frame.loc[3, "p"] = 1.5
    with pytest.raises(
        ValueError,
        match=r"^LoggedBandit\.from_dataframe: the propensity column 'p' must be in \(0, 1\]; "
        rf"row 3 has 1\.5\. {ABOVE_ONE_FIX}",
    ):
        _read(frame)


def test_from_dataframe_refuses_a_string_propensity_column():
    """Issue 49 item 9: propensities given as strings are refused, naming the column (a6d95a2
    read them silently); numbers in an object column are read."""
    frame = _frame().assign(p=_frame()["p"].astype(str))
    with pytest.raises(
        ValueError,
        match=r"^LoggedBandit\.from_dataframe: the propensity column 'p' must hold numbers; "
        rf"row 0 has '{frame['p'].iloc[0]}', so convert it first: "
        r"df\['p'\] = pd\.to_numeric\(df\['p'\]\)\.$",
    ):
        _read(frame)
    objects = _read(_frame().assign(p=_frame()["p"].astype(object)))
    np.testing.assert_array_equal(objects.propensities, _frame()["p"].to_numpy())


@pytest.mark.parametrize(("field", "column"), [("action", "a"), ("reward", "r")])
def test_from_dataframe_refuses_a_field_among_the_contexts(field, column):
    """Issue 49 item 9: the action (or reward) column listed among the contexts is refused,
    naming it (a6d95a2 accepted it silently as a context feature)."""
    with pytest.raises(
        ValueError,
        match=rf"^LoggedBandit\.from_dataframe: column '{column}' is the {field} column and "
        rf"is also listed in contexts; contexts are what is known before the action is "
        rf"chosen, so drop '{column}' from contexts\.$",
    ):
        _read(_frame(), contexts=["x0", column])


@pytest.mark.parametrize(
    "with_pi_b", [pytest.param(False, id="no-pi_b"), pytest.param(True, id="pi_b")]
)
def test_obp_round_trip(with_pi_b):
    """to_obp gives OBP's keys and shapes, and from_obp rebuilds an equal log."""
    logging = np.tile([0.5, 0.3, 0.2], (N, 1)) if with_pi_b else None
    data = LoggedBandit(**_fields(logging_probs=logging))
    feedback = data.to_obp()
    assert {"n_rounds", "n_actions", "context", "action", "reward", "pscore"} <= set(feedback)
    assert (feedback["n_rounds"], feedback["n_actions"]) == (6, 3)
    assert ("pi_b" in feedback) is with_pi_b
    if with_pi_b:
        assert feedback["pi_b"].shape == (N, K, 1)
    back = LoggedBandit.from_obp(feedback)
    for field in ("contexts", "actions", "propensities", "rewards"):
        np.testing.assert_array_equal(getattr(back, field), getattr(data, field))
    if with_pi_b:
        np.testing.assert_array_equal(back.logging_probs, logging)


def test_to_obp_densifies_sparse_contexts():
    """OBP wants a dense context array."""
    data = LoggedBandit(**_fields(contexts=sp.csr_matrix(np.eye(N, 4))))
    np.testing.assert_array_equal(data.to_obp()["context"], np.eye(N, 4))


def test_from_obp_missing_key():
    """A feedback dict without a required key names the missing keys."""
    feedback = LoggedBandit(**_fields()).to_obp()
    del feedback["pscore"]
    with pytest.raises(ValueError, match=r"bandit_feedback lacks key\(s\) \['pscore'\]"):
        LoggedBandit.from_obp(feedback)


def test_from_obp_inconsistent_n_rounds():
    """n_rounds must match the number of context rows."""
    feedback = LoggedBandit(**_fields()).to_obp()
    feedback["n_rounds"] = 10
    with pytest.raises(ValueError, match="n_rounds is 10 but context has 6 rows"):
        LoggedBandit.from_obp(feedback)


def test_validation_errors_are_value_errors_not_parameter_errors():
    """Data errors are plain ValueError (a data problem, not a component parameter)."""
    with pytest.raises(ValueError) as info:
        LoggedBandit(**_with("propensities", 0, 0.0))
    assert not isinstance(info.value, InvalidParameterError)


@pytest.mark.parametrize("sparse", [False, True])
def test_float32_contexts_stay_float32_and_fit_the_same_policy(digits, sparse):
    """float32 contexts are kept as float32 (half the memory of the float64 copy made
    before), read-only; on values float32 holds exactly (digits' pixels) the fitted policy
    is the one of the same contexts in float64 (dense or CSR alike), to the bit."""
    from opboost import Booster
    from opboost.simulation.supervised import supervised_to_bandit

    logged = supervised_to_bandit(digits.X[:600], digits.y[:600], n_actions=10, random_state=0)
    logged = logged.logged
    X32 = np.asarray(logged.contexts, dtype=np.float32)
    contexts = sp.csr_matrix(X32) if sparse else X32
    logs32 = LoggedBandit(contexts, logged.actions, logged.propensities, logged.rewards, 10)
    assert logs32.contexts.dtype == np.float32
    values = logs32.contexts.data if sparse else logs32.contexts
    assert not values.flags.writeable and not np.shares_memory(values, X32)
    params = {"n_rounds": 5, "random_state": 0, "base_learner_params": {"num_threads": 1}}
    test = digits.X[1000:1100]
    X64 = np.asarray(logged.contexts, dtype=np.float64)  # the same format in float64
    logs64 = LoggedBandit(sp.csr_matrix(X64) if sparse else X64, logged.actions,
                          logged.propensities, logged.rewards, 10)  # fmt: skip
    np.testing.assert_array_equal(
        Booster(**params).fit(logs32).decision_function(test),
        Booster(**params).fit(logs64).decision_function(test),
    )
    as64 = LoggedBandit(digits.X[:5].astype(np.int64), np.zeros(5, int), np.ones(5), np.ones(5), 2)
    assert as64.contexts.dtype == np.float64  # anything else is float64, as before
