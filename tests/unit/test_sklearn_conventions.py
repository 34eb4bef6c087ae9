"""scikit-learn conventions of the Booster (issue 22, items 1-2): feature names and counts,
the (X, y) route, off-policy scorers in GridSearchCV / RandomizedSearchCV / Pipeline, nested
``<component>__<param>`` parameters and the applicable estimator checks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, RandomizedSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils import estimator_checks

from opboost import Booster, LoggedBandit, PolicyChoice
from opboost.api.exceptions import InvalidParameterError
from opboost.core.metrics import off_policy_scorer, to_xy
from opboost.simulation.supervised import expected_reward, supervised_to_bandit

FAST = {"base_learner_params": {"num_threads": 1}, "random_state": 0}


def _fast(**params) -> Booster:
    return Booster(**{"n_rounds": 5, **FAST, **params})


@pytest.fixture(scope="module")
def digits_xy(digits):
    """Logged (X, y) on the first 1,300 digits rows; the rest labelled for true rewards."""
    sim = supervised_to_bandit(digits.X[:1300], digits.y[:1300], n_actions=10, random_state=0)
    X, y = to_xy(sim.logged)
    return X, y, digits.X[1300:], digits.y[1300:]


def _frame(data: LoggedBandit) -> pd.DataFrame:
    return pd.DataFrame(data.contexts, columns=[f"x{j}" for j in range(data.n_features)])


# --- 1. feature names and counts ------------------------------------------------------------


def test_reordered_dataframe_predicts_the_same(synthetic_log):
    """Fitted on a DataFrame, the booster matches columns by name: reversed columns give the
    same actions, probabilities and scores (not a silently different policy)."""
    data = synthetic_log.data
    X, y = _frame(data), to_xy(data)[1]
    booster = _fast().fit(X, y)
    assert booster.n_features_in_ == 4
    assert list(booster.feature_names_in_) == ["x0", "x1", "x2", "x3"]
    reversed_ = X[X.columns[::-1]]
    np.testing.assert_array_equal(booster.predict(reversed_), booster.predict(X))
    np.testing.assert_allclose(booster.predict_proba(reversed_), booster.predict_proba(X))
    np.testing.assert_allclose(
        booster.decision_function(reversed_), booster.decision_function(X.to_numpy())
    )
    # the reversed matrix, positionally, is a different input: the check is what saves it
    assert not np.array_equal(booster.predict(reversed_.to_numpy()), booster.predict(X.to_numpy()))


def test_missing_and_extra_columns_are_named(synthetic_log):
    """A missing column, or an unexpected one, raises naming it."""
    data = synthetic_log.data
    X = _frame(data)
    booster = _fast().fit(X, to_xy(data)[1])
    with pytest.raises(InvalidParameterError, match=r"missing column\(s\) \['x2'\]"):
        booster.predict(X.drop(columns=["x2"]))
    with pytest.raises(InvalidParameterError, match=r"unexpected column\(s\) \['extra'\]"):
        booster.predict_proba(X.assign(extra=1.0))
    renamed = X.rename(columns={"x1": "y1"})
    with pytest.raises(InvalidParameterError, match=r"missing .*'x1'.* unexpected .*'y1'"):
        booster.decision_function(renamed)


def test_wrong_array_width_raises(synthetic_log):
    """An array of the wrong width raises naming n_features_in_, for every method."""
    booster = _fast().fit(synthetic_log.data)
    assert booster.n_features_in_ == 4 and not hasattr(booster, "feature_names_in_")
    for method in ("predict", "predict_proba", "decision_function"):
        with pytest.raises(InvalidParameterError, match=rf"Booster.{method}: .*\(m, 4\)"):
            getattr(booster, method)(np.zeros((3, 5)))


def test_feature_names_keyword_with_logged_bandit(synthetic_log):
    """A LoggedBandit carries no names: ``fit(data, feature_names=...)`` records them."""
    data = synthetic_log.data
    names = ["row", "a", "b", "c"]
    booster = _fast().fit(data, feature_names=names)
    assert list(booster.feature_names_in_) == names
    X = pd.DataFrame(data.contexts, columns=names)
    np.testing.assert_array_equal(booster.predict(X[names[::-1]]), booster.predict(X))
    with pytest.raises(InvalidParameterError, match=r"3 feature names for 4"):
        _fast().fit(data, feature_names=names[:3])


def test_logs_refused_leave_no_feature_count(synthetic_log):
    """Every check of the logs runs before the fit records anything: logs refused for their
    eval_data leave the booster without ``n_features_in_``."""
    data = synthetic_log.data
    wider = LoggedBandit(
        np.hstack([data.contexts, data.contexts[:, :1]]),
        data.actions,
        data.propensities,
        data.rewards,
        data.n_actions,
    )
    booster = _fast()
    refused = r"eval_data has 4 actions and 5 features but data has 4 and 4"
    with pytest.raises(InvalidParameterError, match=refused):
        booster.fit(data, eval_data=wider)
    assert not hasattr(booster, "n_features_in_")


def test_policy_choice_matches_columns_by_name(synthetic_log):
    """PolicyChoice records names and reorders a DataFrame like the Booster."""
    data = synthetic_log.data
    names = ["row", "a", "b", "c"]
    choice = PolicyChoice(
        candidates=["constant", "bopl_s_ips"],
        booster_params={"n_rounds": 3, "base_learner_params": {"num_threads": 1}},
        random_state=0,
    ).fit(data, feature_names=names)
    assert choice.n_features_in_ == 4
    X = pd.DataFrame(data.contexts, columns=names)
    np.testing.assert_array_equal(choice.predict(X[names[::-1]]), choice.predict(X))
    with pytest.raises(InvalidParameterError, match=r"missing column\(s\) \['b'\]"):
        choice.decision_function(X.drop(columns=["b"]))
    with pytest.raises(InvalidParameterError, match=r"\(m, 4\)"):
        choice.predict(np.zeros((2, 3)))


# --- 2. the (X, y) route and scikit-learn tools --------------------------------------------


def test_xy_route_equals_logged_bandit_fit(synthetic_log):
    """fit(X, y) with y = [action, propensity, reward] (array, DataFrame or record array)
    fits the same policy as fit(LoggedBandit)."""
    data = synthetic_log.data
    X, y = to_xy(data)
    expected = _fast().fit(data).decision_function(X)
    frame = pd.DataFrame(y, columns=["action", "propensity", "reward"])
    records = np.rec.fromarrays(
        [data.actions, data.propensities, data.rewards], names="action,propensity,reward"
    )
    for target in (y, frame, records):
        np.testing.assert_allclose(_fast().fit(X, target).decision_function(X), expected)


def test_xy_route_errors(synthetic_log):
    """Bad (X, y) input raises naming what is expected."""
    data = synthetic_log.data
    X, y = to_xy(data)
    with pytest.raises(InvalidParameterError, match=r"y must be an \(n, 3\) array"):
        _fast().fit(X, y[:, 0])
    with pytest.raises(InvalidParameterError, match=r"lacks column\(s\) \['reward'\]"):
        _fast().fit(X, pd.DataFrame(y[:, :2], columns=["action", "propensity"]))
    with pytest.raises(InvalidParameterError, match=r"pass y=None"):
        _fast().fit(data, y)
    with pytest.raises(InvalidParameterError, match=r"X has 300 rows but y has 299"):
        _fast().fit(X, y[:-1])
    booster = _fast().fit(X, y, n_actions=6)  # actions 4 and 5 never logged
    assert booster.predict_proba(X).shape == (300, 6)


def test_score_is_snips_of_argmax_policy(synthetic_log):
    """Booster.score is the SNIPS estimate of the argmax policy; the scorers take (X, y)
    or a LoggedBandit and any registered estimator."""
    from opboost.algorithms.estimators.snips import SNIPS

    data = synthetic_log.data
    X, y = to_xy(data)
    booster = _fast().fit(data)
    expected = SNIPS().estimate_value(data, booster.predict(X))
    assert booster.score(X, y) == pytest.approx(expected, rel=1e-12)
    assert booster.score(data) == pytest.approx(expected, rel=1e-12)
    assert np.isfinite(off_policy_scorer("dr", policy="softmax")(booster, X, y))
    assert np.isfinite(off_policy_scorer("ips")(booster, data))
    with pytest.raises(InvalidParameterError, match=r"registered estimator name"):
        off_policy_scorer("nope")


def test_grid_search_picks_the_better_setting(digits_xy):
    """Acceptance: GridSearchCV with an off-policy scorer, no labels, picks n_rounds=30 over
    1, which is indeed better by true reward on labelled held-out rows."""
    X, y, X_test, y_test = digits_xy
    paper = {**FAST, "warm_start": "none"}  # from F_0 = 0, where 1 round is far from 30
    search = GridSearchCV(
        Booster(**paper), {"n_rounds": [1, 30]}, scoring=off_policy_scorer("snips"), cv=3
    ).fit(X, y)
    assert search.best_params_ == {"n_rounds": 30}
    true = {
        n: expected_reward(
            np.eye(10)[Booster(n_rounds=n, **paper).fit(X, y).predict(X_test)], y_test
        )
        for n in (1, 30)
    }
    assert true[30] > true[1] + 0.2
    picked = expected_reward(np.eye(10)[search.predict(X_test)], y_test)
    assert picked == pytest.approx(true[30])


def test_randomized_search_over_nested_parameters(digits_xy):
    """RandomizedSearchCV samples ``base_learner__num_leaves`` into base_learner_params."""
    X, y, _, _ = digits_xy
    search = RandomizedSearchCV(
        _fast(n_rounds=3),
        {"base_learner__num_leaves": [4, 8, 16], "learning_rate": [0.5, 1.0]},
        n_iter=2,
        cv=2,
        random_state=0,
        scoring=off_policy_scorer("snips"),
    ).fit(X[:600], y[:600])
    params = search.best_estimator_.get_params()
    assert params["base_learner_params"]["num_threads"] == 1
    assert params["base_learner_params"]["num_leaves"] in (4, 8, 16)


def test_pipeline_with_scaler(digits_xy):
    """StandardScaler -> Booster works with fit(X, y), predict, score and the scorer."""
    X, y, X_test, _ = digits_xy
    pipe = make_pipeline(StandardScaler(), _fast(n_rounds=3)).fit(X[:600], y[:600])
    assert pipe.predict(X_test).shape == (len(X_test),)
    assert np.isfinite(pipe.score(X[600:900], y[600:900]))
    scores = cross_val_score(pipe, X[:600], y[:600], cv=2, scoring=off_policy_scorer())
    assert scores.shape == (2,) and np.all(np.isfinite(scores))
    pipe.set_params(booster__base_learner__num_leaves=4)
    assert pipe.get_params()["booster__base_learner_params"] == {
        "num_threads": 1,
        "num_leaves": 4,
    }


def test_nested_params_clone_and_get_params():
    """``<component>__<param>`` merges into ``<component>_params`` in a new dict, which
    get_params reports and clone keeps; unknown names still raise."""
    user_dict = {"num_threads": 1}
    booster = Booster(base_learner_params=user_dict)
    booster.set_params(base_learner__num_leaves=8, estimator__max_weight=3.0, n_rounds=7)
    assert user_dict == {"num_threads": 1}  # the caller's dict is not mutated
    assert booster.base_learner_params == {"num_threads": 1, "num_leaves": 8}
    assert booster.estimator_params == {"max_weight": 3.0}
    deep = booster.get_params(deep=True)
    assert deep["base_learner_params"]["num_leaves"] == 8 and deep["n_rounds"] == 7
    copy = clone(booster)
    assert copy.get_params(deep=False) == booster.get_params(deep=False)
    with pytest.raises(ValueError, match=r"Invalid parameter 'n_round'"):
        booster.set_params(n_round=3)


@pytest.mark.parametrize(
    "check",
    [
        estimator_checks.check_get_params_invariance,
        estimator_checks.check_set_params,
        estimator_checks.check_parameters_default_constructible,
        estimator_checks.check_no_attributes_set_in_init,
        estimator_checks.check_do_not_raise_errors_in_init_or_set_params,
        estimator_checks.check_estimator_cloneable,
        estimator_checks.check_estimator_repr,
        estimator_checks.check_estimator_tags_renamed,
        estimator_checks.check_valid_tag_types,
        estimator_checks.check_mixin_order,
        estimator_checks.check_estimators_unfitted,
    ],
    ids=lambda check: check.__name__,
)
def test_sklearn_estimator_checks(check):
    """The scikit-learn checks that apply to an estimator whose y is logged feedback
    (docs/tuning.md lists the ones that cannot apply and why)."""
    check("Booster", _fast())


# --- 3. scores on logs with string action ids -----------------------------------------------

PROMOS = ["promo_D", "promo_C", "promo_B", "promo_A"]  # the catalogue, not sorted


@pytest.fixture(scope="module")
def promo_frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 3))
    logged = rng.integers(0, 4, 400)
    best = np.where(x[:, 0] > 0, 3, 1)  # promo_A for x0 > 0, else promo_C
    reward = (logged == best) * (rng.random(400) < 0.8) + (rng.random(400) < 0.2)
    return pd.DataFrame(
        {
            **{f"x{j}": x[:, j] for j in range(3)},
            "action": np.array(PROMOS)[logged],
            "propensity": 0.25,
            "reward": reward.astype(float),
        }
    )


def _snips_by_hand(booster: Booster, frame: pd.DataFrame) -> float:
    """SNIPS of the argmax policy, matching the logged and the played action by id."""
    played = booster.predict(frame[["x0", "x1", "x2"]], return_ids=True)
    hit = played == frame["action"].to_numpy()
    weights = hit / frame["propensity"].to_numpy()
    return float((weights * frame["reward"]).sum() / weights.sum())


def test_scores_match_string_ids_by_id_not_position(promo_frame):
    """Issue 49 item 2: a policy fitted with an unsorted catalogue of string ids is scored on
    (X, y) with string ids, and on logs built with another order of the ids, by matching ids:
    the hand-computed SNIPS (a6d95a2 gave 0.2 here)."""
    logs = LoggedBandit.from_dataframe(
        promo_frame, contexts=["x0", "x1", "x2"], action="action", propensity="propensity",
        reward="reward", actions=PROMOS,
    )  # fmt: skip
    booster = _fast().fit(logs)
    X, y = promo_frame[["x0", "x1", "x2"]], promo_frame[["action", "propensity", "reward"]]
    by_hand = _snips_by_hand(booster, promo_frame)
    assert by_hand == pytest.approx(0.8085106, abs=1e-6)
    assert booster.score(X, y) == pytest.approx(by_hand, rel=1e-12)
    assert off_policy_scorer("snips")(booster, X, y) == pytest.approx(by_hand, rel=1e-12)
    sorted_logs = LoggedBandit.from_dataframe(
        promo_frame, contexts=["x0", "x1", "x2"], action="action", propensity="propensity",
        reward="reward", actions=sorted(PROMOS),
    )  # fmt: skip
    assert booster.score(sorted_logs) == pytest.approx(by_hand, rel=1e-12)
    assert booster.score(*to_xy(logs)) == pytest.approx(by_hand, rel=1e-12)  # indices


def test_a_fold_without_an_action_scores(promo_frame):
    """Issue 49 item 2: held-out rows that never logged promo_B score (promo_B has no logged
    rows) instead of raising "n_actions=4 but the action catalogue has 3 ids"."""
    X, y = promo_frame[["x0", "x1", "x2"]], promo_frame[["action", "propensity", "reward"]]
    booster = _fast().fit(X, y, actions=PROMOS)
    fold = promo_frame[promo_frame["action"] != "promo_B"]
    by_hand = _snips_by_hand(booster, fold)
    assert booster.score(fold[["x0", "x1", "x2"]], fold[y.columns]) == pytest.approx(
        by_hand, rel=1e-12
    )
    fold_logs = LoggedBandit.from_dataframe(  # its catalogue: the 3 ids seen, sorted
        fold, contexts=["x0", "x1", "x2"], action="action", propensity="propensity",
        reward="reward", actions=["promo_A", "promo_C", "promo_D"],
    )  # fmt: skip
    assert booster.score(fold_logs) == pytest.approx(by_hand, rel=1e-12)
    stranger = LoggedBandit.from_dataframe(
        fold, contexts=["x0", "x1", "x2"], action="action", propensity="propensity",
        reward="reward", actions=["promo_A", "promo_C", "promo_D", "promo_E"],
    )  # fmt: skip
    with pytest.raises(
        InvalidParameterError,
        match=r"^off_policy_scorer: the logs' action id\(s\) \['promo_E'\] are not in the "
        r"policy's catalogue of 4 ids; score on logs of the actions it was fitted on\.$",
    ):
        booster.score(stranger)
    scores = cross_val_score(
        _fast(), X, y, cv=[(np.flatnonzero(X.index >= 0), fold.index.to_numpy())],
        params={"actions": PROMOS},
    )  # fmt: skip
    assert scores == pytest.approx([by_hand], rel=1e-12)


def test_logs_are_reindexed_into_the_policys_catalogue_by_id():
    """The per-action columns (logging_probs, candidates) follow their ids into the policy's
    catalogue, and an action the logs do not list gets probability 0 and no candidate."""
    from opboost.api.data.tabular import TabularSchema
    from opboost.core.metrics import _in_catalogue

    probs = np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    logs = LoggedBandit(
        np.zeros((2, 1)), [1, 2], [0.5, 0.5], [1.0, 0.0], 3, logging_probs=probs,
        candidates=probs > 0, schema=TabularSchema(("x",), {}, ("b", "c", "a")),
    )  # fmt: skip
    moved = _in_catalogue(logs, ("a", "z", "b", "c"))
    assert moved.schema.ids(moved.actions).tolist() == ["c", "a"]
    np.testing.assert_array_equal(moved.logging_probs, [[0.0, 0, 0.5, 0.5], [0.5, 0, 0.2, 0.3]])
    np.testing.assert_array_equal(moved.candidates, moved.logging_probs > 0)
