"""String and categorical data: from_dataframe's codes and action catalogue, the schema,
categorical columns into LightGBM, and saved policies that encode DataFrames and answer with
the action ids (issue 19, item 3)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import opboost
from opboost.api.data.logged import LoggedBandit
from opboost.api.data.tabular import MISSING_CODE, ActionCatalogueWarning, TabularSchema
from opboost.api.exceptions import InvalidParameterError

ADS = ["ad-a", "ad-b", "ad-c", "ad-d"]  # ad-d is never shown
CONTEXTS = ["city", "device", "age"]


def _frame(n: int = 400, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    city = rng.choice(["paris", "lyon", "nice", "lille"], n)
    best = {"paris": "ad-a", "lyon": "ad-b", "nice": "ad-c", "lille": "ad-a"}
    shown = rng.choice(ADS[:3], n)
    return pd.DataFrame(
        {
            "city": pd.Categorical(city, categories=["paris", "lyon", "nice", "lille"]),
            "device": pd.Series(rng.choice(["ios", "android"], n), dtype=object),
            "age": rng.normal(size=n),
            "ad": shown,
            "p": 1 / 3,
            "click": (shown == np.array([best[c] for c in city])).astype(float),
        }
    )


def _logs(df: pd.DataFrame) -> LoggedBandit:
    return LoggedBandit.from_dataframe(
        df, contexts=CONTEXTS, action="ad", propensity="p", reward="click", actions=ADS
    )


def _booster(**params) -> opboost.Booster:
    learner = {"num_threads": 1, "min_data_in_leaf": 5, **params}
    return opboost.Booster(n_rounds=15, random_state=0, base_learner_params=learner)


# --- from_dataframe -------------------------------------------------------------------------


def test_codes_catalogue_and_schema():
    df = _frame(8)
    df.loc[2, "device"] = None
    data = _logs(df)
    assert data.n_actions == 4  # from the catalogue: ad-d is never logged
    schema = data.schema
    assert schema.columns == tuple(CONTEXTS)
    assert schema.categories == {
        "city": ("paris", "lyon", "nice", "lille"),  # a pandas category keeps its order
        "device": ("android", "ios"),  # strings: sorted
    }
    assert schema.action_ids == tuple(ADS) and schema.categorical_features == (0, 1)
    np.testing.assert_array_equal(data.contexts[:, 0], df["city"].cat.codes)
    assert data.contexts[2, 1] == MISSING_CODE
    np.testing.assert_array_equal(data.contexts[:, 2], df["age"])
    np.testing.assert_array_equal(data.actions, [ADS.index(a) for a in df["ad"]])
    train, test = data.split(0.25, random_state=0)
    assert train.schema is schema and test.schema is schema
    assert data.with_rewards(data.rewards + 1).schema is schema
    again = TabularSchema.from_dict(json.loads(json.dumps(schema.to_dict())))
    assert again == schema
    np.testing.assert_array_equal(schema.ids([3, 0]), ["ad-d", "ad-a"])


def test_no_catalogue_warns_and_uses_the_sorted_ids_seen():
    df = _frame(30)
    with pytest.warns(ActionCatalogueWarning, match=r"column 'ad'.*Pass actions=\["):
        data = LoggedBandit.from_dataframe(
            df, contexts=CONTEXTS, action="ad", propensity="p", reward="click"
        )
    assert data.schema.action_ids == ("ad-a", "ad-b", "ad-c") and data.n_actions == 3


def test_integer_ids_without_n_actions_warn():
    df = _frame(30).assign(ad=lambda d: d["ad"].map({"ad-a": 0, "ad-b": 1, "ad-c": 2}))
    with pytest.warns(ActionCatalogueWarning, match="n_actions=K or actions="):
        data = LoggedBandit.from_dataframe(
            df, contexts=["age"], action="ad", propensity="p", reward="click"
        )
    assert data.n_actions == 3 and data.schema.action_ids is None
    wide = LoggedBandit.from_dataframe(
        df, contexts=["age"], action="ad", propensity="p", reward="click", actions=[0, 1, 2, 5]
    )
    assert wide.n_actions == 4 and wide.schema.action_ids == (0, 1, 2, 5)


@pytest.mark.parametrize(
    ("change", "kwargs", "match"),
    [
        pytest.param(
            {},
            {"actions": ["ad-a", "ad-b"]},
            r"column 'ad' has action 'ad-c' at row \d+ \(index \d+\), which is not in the "
            r"action catalogue",
            id="id-not-in-catalogue",
        ),
        pytest.param(
            {"age": [1.0, np.inf, 2.0, 3.0]},
            {},
            r"numeric context column 'age' must be finite or missing \(NaN\); row 1 \(index 1\) "
            r"has inf\. Replace the infinite values",
            id="inf-in-numeric",
        ),
        pytest.param(
            {"device": pd.Series(["ios", 1, 2.5, "ios"], dtype=object)},
            {},
            r"context column 'device' mixes types float, int, str",
            id="mixed-types",
        ),
        pytest.param(
            {}, {"actions": ["ad-a", "ad-b", "ad-a"]}, r"lists 'ad-a' twice", id="duplicate-id"
        ),
        pytest.param(
            {}, {"n_actions": 3}, r"n_actions=3 but the action catalogue has 4", id="n_actions"
        ),
    ],
)
def test_errors_name_the_column(change, kwargs, match):
    df = _frame(4).assign(ad=["ad-a", "ad-b", "ad-c", "ad-a"], **change)
    kwargs = {"actions": ADS, **kwargs}
    with pytest.raises(ValueError, match=match):
        LoggedBandit.from_dataframe(
            df, contexts=CONTEXTS, action="ad", propensity="p", reward="click", **kwargs
        )


OWNER = "LoggedBandit.from_dataframe"
TIMES = pd.date_range("2024-01-01", periods=4, freq="h")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param(
            {"age": TIMES},
            f"{OWNER}: context column 'age' holds datetimes ({{dtype}}), which a model "
            "cannot read as they are; make features of them first, numbers such as "
            "df['age'].dt.hour or .dt.dayofweek, or categories with .astype(str)",
            id="datetimes",
        ),
        pytest.param(
            {"age": TIMES.tz_localize("UTC")},
            f"{OWNER}: context column 'age' holds datetimes ({{dtype}}), which a model "
            "cannot read as they are; make features of them first, numbers such as "
            "df['age'].dt.hour or .dt.dayofweek, or categories with .astype(str)",
            id="datetimes-with-a-time-zone",
        ),
        pytest.param(
            {"age": TIMES - TIMES[0]},
            f"{OWNER}: context column 'age' holds time spans ({{dtype}}), which a model "
            "cannot read as they are; make them numbers first, e.g. df['age'].dt.total_seconds()",
            id="time-spans",
        ),
        pytest.param(
            {"device": pd.Series(list(TIMES), dtype=object)},
            f"{OWNER}: context column 'device' holds Timestamp values, neither numbers nor "
            "strings; make it either type: df['device'].astype(str) for categories, "
            "pd.to_numeric for numbers.",
            id="objects-of-one-other-type",
        ),
        pytest.param(
            {"ad": ["ad-a", None, "ad-c", "ad-a"]},
            f"{OWNER}: column 'ad' has no action (a missing value) at row 1 (index 1); every "
            "logged row needs the action it took: drop the rows without one, "
            "df.dropna(subset=['ad']).",
            id="missing-action",
        ),
    ],
)
def test_columns_a_model_cannot_read_are_refused_with_how_to_convert_them(change, message):
    """Times were reported as "mixes types datetime" and a missing action as an id "not in
    the action catalogue"; each now says what the column holds and how to fix it."""
    df = _frame(4).assign(ad=["ad-a", "ad-b", "ad-c", "ad-a"]).assign(**change)
    df.index = range(4)
    with pytest.raises(ValueError) as info:
        LoggedBandit.from_dataframe(
            df, contexts=CONTEXTS, action="ad", propensity="p", reward="click", actions=ADS
        )
    column = next(iter(change))  # its dtype's name follows pandas' resolution (ns, us)
    assert str(info.value) == message.replace("{dtype}", str(df[column].dtype))


def test_schema_must_match_the_logs():
    data = _logs(_frame(10))
    with pytest.raises(ValueError, match="schema has 3 columns and 4 action ids"):
        LoggedBandit(data.contexts[:, :2], data.actions, data.propensities, data.rewards, 4,
                     schema=data.schema)  # fmt: skip


# --- LightGBM sees categorical columns ------------------------------------------------------


def test_lightgbm_gets_the_categorical_columns():
    """The booster passes the schema's categorical columns to lightgbm_tree: the same fit as
    setting categorical_features on the codes by hand, and LightGBM's model lists them and
    splits on categories."""
    data = _logs(_frame())
    booster = _booster().fit(data)
    assert booster.policy_.metadata["base_learner_params"]["categorical_features"] == [0, 1]
    text = booster.policy_.ensemble.booster.model_to_string()
    assert "[categorical_feature: 0,1]" in text and "cat_threshold=" in text
    codes = LoggedBandit(data.contexts, data.actions, data.propensities, data.rewards, 4)
    by_hand = _booster(categorical_features=[0, 1]).fit(codes)
    np.testing.assert_array_equal(
        booster.decision_function(data.contexts), by_hand.decision_function(data.contexts)
    )
    numeric = _booster().fit(codes)  # without: the codes are ordered numbers
    assert "[categorical_feature: ]" in numeric.policy_.ensemble.booster.model_to_string()


@pytest.mark.parametrize("design", ["per_action", "stacked_onehot"])
def test_every_action_design_keeps_the_categorical_columns(design):
    booster = _booster(action_design=design).fit(_logs(_frame()))
    assert "cat_threshold=" in booster.policy_.ensemble.booster.model_to_string()


def test_categorical_features_out_of_range():
    data = LoggedBandit(np.zeros((30, 2)), np.arange(30) % 2, np.full(30, 0.5), np.ones(30), 2)
    with pytest.raises(ValueError, match=r"categorical_features \[2\] must be context column"):
        _booster(categorical_features=[2]).fit(data)


def test_sklearn_tree_sees_the_codes():
    df = _frame()
    booster = opboost.Booster(base_learner="sklearn_tree", n_rounds=5, random_state=0)
    ids = booster.fit(_logs(df)).predict(df[CONTEXTS], return_ids=True)
    assert set(ids) <= set(ADS)


# --- saved policies -------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["policy", "policy.json"])
def test_round_trip_predicts_the_same_ids(tmp_path, form):
    df = _frame()
    booster = _booster().fit(_logs(df))
    X = df[CONTEXTS]
    ids = booster.predict(X, return_ids=True)
    assert ids.dtype.kind == "U" and set(ids) <= set(ADS)
    np.testing.assert_array_equal(ids, np.asarray(ADS)[booster.predict(X)])
    booster.save(tmp_path / form)
    policy = opboost.load_policy(tmp_path / form)
    assert policy.metadata["schema"]["action_ids"] == ADS
    np.testing.assert_array_equal(policy.predict(X, return_ids=True), ids)
    np.testing.assert_array_equal(policy.predict(X[["age", "device", "city"]]), booster.predict(X))
    np.testing.assert_array_equal(policy.decision_function(X), booster.decision_function(X))
    # strings in an object column (not a category) and unseen or missing categories
    new = X.head(3).assign(city=pd.Series(["tokyo", None, "paris"], dtype=object))
    expected = booster.policy_.decision_function(
        np.column_stack([[MISSING_CODE, MISSING_CODE, 0], _logs(df).contexts[:3, 1:]])
    )
    np.testing.assert_array_equal(policy.decision_function(new), expected)


def test_a_dataframe_of_another_schema_is_refused(tmp_path):
    df = _frame()
    booster = _booster().fit(_logs(df))
    policy = opboost.load_policy(booster.save(tmp_path / "p"))
    X = df[CONTEXTS]
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['city'\]"):
        policy.predict(X.drop(columns="city"))
    with pytest.raises(InvalidParameterError, match=r"missing column\(s\) \['city'\]"):
        booster.predict(X.drop(columns="city"))
    with pytest.raises(ValueError, match="column 'city' was categorical at fit but is numeric"):
        policy.predict(X.assign(city=1))
    with pytest.raises(InvalidParameterError, match="column 'city' was categorical at fit"):
        booster.predict(X.assign(city=1))
    with pytest.raises(ValueError, match="column 'age' was numeric at fit but is categorical"):
        policy.predict(X.assign(age="old"))


def test_selection_and_fallback_keep_the_schema(tmp_path):
    df = _frame()
    booster = opboost.Booster(
        n_rounds=10, random_state=0, validation_fraction=0.3, safe=True,
        base_learner_params={"num_threads": 1},
    ).fit(_logs(df))  # fmt: skip
    policy = opboost.load_policy(booster.save(tmp_path / "p"))
    X = df[CONTEXTS].head(20)
    np.testing.assert_array_equal(
        policy.predict(X, return_ids=True), booster.predict(X, return_ids=True)
    )
    constant = opboost.ConstantPolicy(2, 4, {"schema": _logs(df).schema.to_dict()})
    np.testing.assert_array_equal(constant.predict(X.head(2), return_ids=True), ["ad-c"] * 2)


def test_the_scikit_learn_route_encodes_string_columns():
    """Booster.fit(X, y) with a DataFrame X of string and categorical columns encodes it as
    from_dataframe does, and predict encodes with the same categories."""
    df = _frame()
    data = _logs(df)
    y = pd.DataFrame({"action": data.actions, "propensity": df["p"], "reward": df["click"]})
    booster = _booster().fit(df[CONTEXTS], y, n_actions=4)
    assert list(booster.feature_names_in_) == CONTEXTS
    by_logs = _booster().fit(data)
    X = df[CONTEXTS].head(50)
    np.testing.assert_array_equal(booster.decision_function(X), by_logs.decision_function(X))
    with pytest.raises(InvalidParameterError, match="context column 'device' mixes types"):
        _booster().fit(df[CONTEXTS].assign(device=["a", 1] * 200), y, n_actions=4)


def test_frame_contexts_encode_a_table_and_convert_the_rest():
    """``frame_contexts`` gives from_dataframe's codes and schema for a DataFrame with
    categorical columns; a numeric table (nullable columns' pd.NA as NaN), an array or a
    sparse matrix converts with no schema."""
    import scipy.sparse as sp

    from opboost.api.data.tabular import frame_contexts

    df = _frame(20)
    logs = _logs(df)
    contexts, schema = frame_contexts(df[CONTEXTS], "test")
    assert schema == TabularSchema(logs.schema.columns, logs.schema.categories)
    np.testing.assert_array_equal(contexts, logs.contexts)
    numeric = pd.DataFrame({"a": pd.array([1, None, 3], dtype="Int64"), "b": [0.5, 1.5, 2.5]})
    contexts, schema = frame_contexts(numeric, "test")
    assert schema is None and contexts.dtype == np.float64
    np.testing.assert_array_equal(contexts, [[1.0, 0.5], [np.nan, 1.5], [3.0, 2.5]])
    matrix = sp.csr_matrix(np.eye(3))
    assert frame_contexts(matrix, "test") == (matrix, None)
    with pytest.raises(ValueError, match="context column 'device' mixes types"):
        frame_contexts(df[CONTEXTS].assign(device=["a", 1] * 10), "test")


def test_reward_regression_splits_categories_and_saves_the_schema(tmp_path):
    df = _frame()
    learner = opboost.make("policy_learner", "reward_regression", n_estimators=20).fit(_logs(df))
    assert "cat_threshold=" in learner.model_.booster_.model_to_string()
    policy = learner.to_policy()
    X = df[CONTEXTS].head(30)
    loaded = opboost.load_policy(policy.save(tmp_path / "rr"))
    np.testing.assert_array_equal(loaded.decision_function(X), learner.decision_function(X))
    assert set(loaded.predict(X, return_ids=True)) <= set(ADS)


def test_other_logs_are_encoded_with_the_training_schema():
    """Two from_dataframe calls infer their own categories; schema= reuses the training
    logs', and eval_data of another schema is refused."""
    train = LoggedBandit.from_dataframe(
        _frame(), contexts=["device", "age"], action="ad", propensity="p", reward="click",
        actions=ADS,
    )  # fmt: skip
    other = _frame(50, seed=1).assign(device="ios")  # one category only: code 0 alone
    kwargs = {"contexts": ["device", "age"], "action": "ad", "propensity": "p", "reward": "click"}
    alone = LoggedBandit.from_dataframe(other, actions=ADS, **kwargs)
    assert alone.schema.categories["device"] == ("ios",) and alone.contexts[0, 0] == 0
    same = LoggedBandit.from_dataframe(other, schema=train.schema, **kwargs)
    assert same.schema == train.schema and same.contexts[0, 0] == 1  # ("android", "ios")
    _booster().fit(train, eval_data=same)
    with pytest.raises(InvalidParameterError, match=r"eval_data was encoded with another"):
        _booster().fit(train, eval_data=alone)
    with pytest.raises(ValueError, match=r"differ from the schema's columns"):
        LoggedBandit.from_dataframe(other, schema=train.schema, **{**kwargs, "contexts": ["age"]})


def test_an_array_of_strings_is_refused_with_the_dataframe_route():
    """A policy fitted on a DataFrame, asked to predict an object array of the raw values (the
    DataFrame's ``to_numpy()``), raised NumPy's bare "could not convert string to float";
    LoggedBandit given such contexts did not say how to encode them."""
    df = _frame(60)
    logs = _logs(df)
    booster = opboost.Booster(n_rounds=2, random_state=0).fit(logs)
    raw = df[CONTEXTS].head(3).to_numpy()  # city, device: strings
    with pytest.raises(InvalidParameterError) as info:
        booster.predict(raw)
    assert str(info.value) == (
        f"contexts must be numbers; got an array of dtype object with {raw[0, 0]!r} at row 0, "
        "column 0. An array holds the encoded numbers (a categorical column as its codes): "
        "pass a DataFrame with the fit's column names to have strings and categories encoded "
        "by the policy's schema (LoggedBandit.from_dataframe), or encode them yourself."
    )
    encoded = logs.contexts[:3]  # the codes an array holds: accepted
    np.testing.assert_array_equal(booster.predict(encoded), booster.predict(df[CONTEXTS].head(3)))
    with pytest.raises(ValueError) as info:
        LoggedBandit(raw, np.zeros(3, int), np.ones(3), np.ones(3), 2)
    assert str(info.value) == (
        f"LoggedBandit: contexts must be numeric: could not convert string to float: "
        f"{raw[0, 0]!r}. For string or categorical columns, build the logs from a DataFrame "
        "with LoggedBandit.from_dataframe, which encodes them (and the policy encodes new rows)."
    )
