"""What ``Booster.fit`` and prediction receive, in scikit-learn's conventions: the logs
checked and shaped in one place (:func:`fit_logs`: a LoggedBandit, or contexts ``X`` and
feedback ``y`` with string action ids included; the feature names of the fit; the missing
values the base learner must take, :func:`check_missing`), and contexts at prediction matched
to the feature names."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from opboost.api.data.field_checks import first_missing
from opboost.api.data.logged import LoggedBandit, check_data, check_eval_data
from opboost.api.data.tabular import (
    TabularSchema,
    action_indices,
    float_contexts,
    frame_contexts,
)
from opboost.api.data.tabular_frames import encode_frame, table_reader
from opboost.api.exceptions import InvalidParameterError

__all__ = [
    "Y_FIELDS",
    "as_logged_bandit",
    "check_X",
    "check_missing",
    "feature_names_of",
    "fit_logs",
    "record_features",
    "split_y",
]

#: The fields of the structured ``y`` of ``Booster.fit(X, y)``, in column order.
Y_FIELDS = ("action", "propensity", "reward")


def _columns_of(X: Any) -> list[str] | None:
    """String column names of a DataFrame-like ``X``, else None (as scikit-learn does:
    names are recorded only when every column name is a string)."""
    columns = getattr(X, "columns", None)
    if columns is None or getattr(X, "ndim", 2) != 2:
        return None
    names = columns.tolist() if hasattr(columns, "tolist") else list(columns)
    return names if names and all(isinstance(c, str) for c in names) else None


def _check_names(columns: list[Any], names: Any, owner: str) -> None:
    """InvalidParameterError naming the missing and the unexpected columns, if any."""
    known, fitted = set(columns), set(names)
    missing = [c for c in names if c not in known]
    extra = [c for c in columns if c not in fitted]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing column(s) {missing}")
        if extra:
            parts.append(f"unexpected column(s) {extra}")
        raise InvalidParameterError(
            f"{owner}: X has {' and '.join(parts)}; the policy was fitted on {len(names)} "
            f"named columns (feature_names_in_), matched by name in any order."
        )


def _same_width(X: Any, n_names: int) -> bool:
    """Whether ``X`` is a DataFrame or a mapping with ``n_names`` distinct columns."""
    if isinstance(X, Mapping):
        return len(X) == n_names
    columns = getattr(X, "columns", None)
    return columns is not None and len(columns) == n_names and bool(columns.is_unique)


def split_y(y: Any, n_rows: int, owner: str = "Booster.fit") -> tuple[np.ndarray, ...]:
    """(actions, propensities, rewards) from the structured ``y`` of the (X, y) route: an
    (n, 3) array [action, propensity, reward], a record array or a DataFrame with fields
    "action", "propensity", "reward"."""
    if y is None:
        raise InvalidParameterError(
            f"{owner}: X is a contexts matrix, so y must give the logged feedback: an (n, 3) "
            f"array [action, propensity, reward] or a DataFrame/record array with columns "
            f"{list(Y_FIELDS)}. Or pass an opboost.LoggedBandit as X (and no y)."
        )
    columns = getattr(y, "columns", None)
    names = getattr(getattr(y, "dtype", None), "names", None)
    if columns is not None or names:
        available = list(columns) if columns is not None else list(names)
        missing = [f for f in Y_FIELDS if f not in available]
        if missing:
            raise InvalidParameterError(
                f"{owner}: y lacks column(s) {missing}; it needs {list(Y_FIELDS)}. Got {available}."
            )
        fields = [np.asarray(y[f]) for f in Y_FIELDS]
    else:
        array = np.asarray(y)
        if array.ndim != 2 or array.shape[1] != 3:
            raise InvalidParameterError(
                f"{owner}: y must be an (n, 3) array [action, propensity, reward] (or a "
                f"DataFrame/record array with columns {list(Y_FIELDS)}). Got shape "
                f"{array.shape}."
            )
        fields = [array[:, 0], array[:, 1], array[:, 2]]
    if len(fields[0]) != n_rows:
        raise InvalidParameterError(
            f"{owner}: X has {n_rows} rows but y has {len(fields[0])}; pass one row of "
            f"feedback per context."
        )
    actions = fields[0]
    finite = actions.dtype.kind == "f" and np.all(np.isfinite(actions))
    if finite and np.all(actions == np.round(actions)):
        actions = actions.astype(np.int64)
    return actions, fields[1], fields[2]


def as_logged_bandit(
    X: Any,
    y: Any,
    n_actions: int | None,
    owner: str = "Booster.fit",
    actions: Sequence[Any] | None = None,
) -> LoggedBandit:
    """A LoggedBandit of contexts ``X`` and structured feedback ``y`` (see :func:`split_y`);
    ``n_actions`` defaults to max(action) + 1. A DataFrame ``X`` with string or categorical
    columns is encoded as ``from_dataframe`` does (the logs then carry its schema). Action
    ids other than integers (strings, say), or any ids with the catalogue ``actions`` (every
    action id), are mapped to catalogue indices as ``from_dataframe`` does: the schema then
    records the ids, so ``predict(X, return_ids=True)`` answers with them."""
    try:
        contexts, schema = frame_contexts(X, owner)
    except ValueError as exc:
        raise InvalidParameterError(str(exc)) from None
    ids, propensities, rewards = split_y(y, contexts.shape[0], owner)
    if actions is not None or ids.dtype.kind not in "iuf":
        try:
            ids, catalogue = action_indices(ids, actions, owner)
        except ValueError as exc:
            raise InvalidParameterError(str(exc)) from None
        if n_actions is not None and n_actions != len(catalogue):
            raise InvalidParameterError(
                f"{owner}: n_actions={n_actions} but the action catalogue has "
                f"{len(catalogue)} ids; drop n_actions (the catalogue gives it)."
            )
        columns = tuple(_columns_of(X) or ()) if schema is None else schema.columns
        categories = {} if schema is None else schema.categories
        schema, n_actions = TabularSchema(columns, categories, catalogue), len(catalogue)
    actions = ids
    if n_actions is None:
        if actions.dtype.kind not in "iu" or not len(actions):
            raise InvalidParameterError(
                f"{owner}: cannot infer n_actions from actions of dtype {actions.dtype}; "
                f"encode actions as 0..K-1 or pass n_actions=K."
            )
        n_actions = int(np.max(actions)) + 1
    try:
        return LoggedBandit(contexts, actions, propensities, rewards, n_actions, schema=schema)
    except ValueError as exc:
        raise InvalidParameterError(f"{owner}: {exc}") from exc


def feature_names_of(X: Any, feature_names: Any = None) -> Any:
    """The feature names of fit input ``X``: ``feature_names`` when given, else the string
    columns of a DataFrame, else a LoggedBandit's ``feature_names`` attribute (if it has
    one), else None."""
    if feature_names is not None:
        return feature_names
    if isinstance(X, LoggedBandit):
        schema = X.schema
        if schema is None:
            return getattr(X, "feature_names", None)
        return schema.columns or None  # (): contexts without column names
    return _columns_of(X)


def record_features(est: Any, n_features: int, names: Any) -> None:
    """Set ``n_features_in_`` and, when ``names`` is not None, ``feature_names_in_``."""
    est.n_features_in_ = int(n_features)
    if names is None:
        if hasattr(est, "feature_names_in_"):
            del est.feature_names_in_
        return
    names = np.asarray(list(names), dtype=object)
    if names.shape != (n_features,):
        raise InvalidParameterError(
            f"{type(est).__name__}.fit: {len(names)} feature names for {n_features} context "
            f"columns; give one name per column."
        )
    if len(set(names.tolist())) != len(names):
        raise InvalidParameterError(
            f"{type(est).__name__}.fit: feature names must be unique; got {names.tolist()}."
        )
    est.feature_names_in_ = names


def check_X(est: Any, X: Any, method: str) -> Any:
    """``X`` ready for the fitted policy: a DataFrame (or a mapping of column -> value or
    values) is read by the fitted feature names (missing or unexpected columns raise, naming
    them) and encoded with the policy's table schema if it has one, through the reader the
    policy builds once; every input must have ``n_features_in_`` columns."""
    owner = f"{type(est).__name__}.{method}"
    names = getattr(est, "feature_names_in_", None)
    mapping = isinstance(X, Mapping)
    metadata = getattr(getattr(est, "policy_", None), "metadata", {})
    if names is not None and _same_width(X, len(names)) and table_reader(metadata) is not None:
        try:  # serving: the reader matches the names; only a failure needs the check below
            return encode_frame(metadata, X, owner)
        except ValueError:
            pass
    columns = list(X) if mapping else _columns_of(X)
    if names is not None and columns is not None:
        _check_names(columns, names, owner)
        if table_reader(metadata) is not None:  # read by name (and encoded) at once
            try:
                return encode_frame(metadata, X, owner)
            except ValueError as exc:
                raise InvalidParameterError(str(exc)) from None
        if not mapping:
            X = X[list(names)]
    if mapping and names is None:
        raise InvalidParameterError(
            f"{owner}: X is a mapping of column names, but the policy was fitted without "
            f"column names; fit on a DataFrame (or with feature_names=) or pass an (m, d) array."
        )
    n_features = getattr(est, "n_features_in_", None)
    if n_features is None:
        return X
    if getattr(X, "ndim", None) is None and not hasattr(X, "shape"):
        X = np.asarray(X)
    shape = getattr(X, "shape", ())
    if len(shape) != 2 or shape[1] != n_features:
        raise InvalidParameterError(
            f"{owner}: X must have shape (m, {n_features}), the {n_features} feature(s) seen "
            f"at fit (n_features_in_). Got shape {tuple(shape)}; pass the training columns in "
            f"the training order."
        )
    if columns is None:
        return X
    if "schema" not in metadata:
        return float_contexts(X)
    try:
        return encode_frame(metadata, X, owner)
    except ValueError as exc:
        raise InvalidParameterError(str(exc)) from None


def fit_logs(
    est: Any,
    X: Any,
    y: Any,
    n_actions: int | None,
    actions: Sequence[Any] | None,
    feature_names: Any,
    eval_data: LoggedBandit | None,
) -> LoggedBandit:
    """The validated logs of ``Booster.fit``'s arguments (a LoggedBandit ``X``, or contexts
    ``X`` with feedback ``y``); records ``est``'s ``n_features_in_`` and feature names."""
    names, data = feature_names_of(X, feature_names), X
    if isinstance(X, LoggedBandit):
        if y is not None:
            raise InvalidParameterError(
                "Booster.fit: X is a LoggedBandit, which already holds the actions, "
                "propensities and rewards; pass y=None (y is for a contexts matrix X)."
            )
        if n_actions is not None and n_actions != X.n_actions:
            raise InvalidParameterError(
                f"Booster.fit: n_actions={n_actions!r} but the LoggedBandit has "
                f"{X.n_actions} actions; drop n_actions."
            )
        if actions is not None:
            raise InvalidParameterError(
                "Booster.fit: X is a LoggedBandit, whose schema already holds any action "
                "ids; pass actions= to LoggedBandit.from_dataframe instead."
            )
    elif y is not None:
        data = as_logged_bandit(X, y, n_actions, actions=actions)
    check_data(data, "data")
    if eval_data is not None:
        check_eval_data(data, eval_data)
    record_features(est, data.n_features, names)
    return data


def check_missing(learner: Any, data: LoggedBandit | None, name: str) -> None:
    """Logs with missing context values (NaN) need a base learner that routes them
    (``accepts_missing``, as LightGBM's); raise naming the learner and the first NaN."""
    if data is None or getattr(learner, "accepts_missing", False):
        return
    where = first_missing(data.contexts)
    if where is None:
        return
    schema = getattr(data, "schema", None)
    column = f"column {where[1]}" if schema is None else f"column {schema.columns[where[1]]!r}"
    raise InvalidParameterError(
        f"Booster.fit: {name} has missing context values (NaN, the first at row {where[0]}, "
        f"{column}), which base learner {learner.name!r} cannot take. Use "
        f"base_learner='lightgbm_tree', which routes missing values natively, or impute them "
        f"(sklearn.impute.SimpleImputer, for instance)."
    )
