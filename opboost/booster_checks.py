"""Validation of the Booster's parameters and of what ``fit`` receives."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from numbers import Integral, Real
from typing import Any

import numpy as np

from opboost.api.constraints import InstanceOf, Interval, Options, Rule, Satisfies, Skip
from opboost.api.data import LoggedBandit
from opboost.api.data_checks import first_missing
from opboost.api.exceptions import InvalidParameterError
from opboost.api.tabular import (
    TabularSchema,
    action_indices,
    check_same_schema,
    encode_frame,
    frame_schema,
)
from opboost.callbacks import Callback
from opboost.selection import SELECTION_POLICIES

#: Initial scores F_0 (``Booster.warm_start``); "none" (or None) is F_0 = 0, the uniform
#: policy; "auto" is "reward_model" when the base learner fits its own reward model, else "none".
WARM_STARTS = ("auto", "none", "best_constant", "logging", "reward_model")

__all__ = [
    "BOOSTER_CONSTRAINTS",
    "WARM_STARTS",
    "Y_FIELDS",
    "as_logged_bandit",
    "check_X",
    "check_callbacks",
    "check_data",
    "check_eval_data",
    "check_f",
    "check_missing",
    "feature_names_of",
    "record_features",
    "split_holdout",
    "split_y",
]


def _component(kind: str) -> list[Any]:
    """A registered name of ``kind`` (checked against the registry when the booster resolves
    it, naming the known ones) or an instance of that kind."""
    article = "an" if kind[0] in "aeiou" else "a"
    return [
        InstanceOf(str, f"a registered {kind} name"),
        Satisfies(lambda v: getattr(v, "kind", None) == kind, f"{article} {kind} instance"),
    ]


def _estimator_names() -> list[str]:
    from opboost.registry import get_registry

    return sorted(get_registry().names("estimator"))


_PARAMS_DICT = [InstanceOf(Mapping, "a dict"), None]

#: The Booster's ``_parameter_constraints`` (:mod:`opboost.api.constraints`).
BOOSTER_CONSTRAINTS: dict[str, list[Any]] = {
    "objective": _component("objective"),
    "estimator": _component("estimator"),
    "base_learner": _component("base_learner"),
    "n_rounds": [
        Interval(Integral, 1, None, fix="use a positive number of boosting rounds such as 100")
    ],
    "reward_shift": [
        Interval(
            Real,
            finite=True,
            fix="use a finite shift such as -0.5 (0.0 disables translation)",
        )
    ],
    "base_learner_params": _PARAMS_DICT,
    "estimator_params": _PARAMS_DICT,
    "objective_params": _PARAMS_DICT,
    "scale": [
        Interval(
            Real, 0.0, None, closed="neither", fix="use None to keep the base learner's scale"
        ),
        None,
    ],
    "random_state": ["random_state"],
    "learning_rate": [
        Interval(
            Real,
            0.0,
            None,
            closed="neither",
            finite=True,
            fix="use a shrinkage factor such as 0.1 (1.0 is the paper's step)",
        )
    ],
    "l2": [
        Interval(Real, 0.0, None, finite=True, fix="use 0.0 (no penalty) or a penalty such as 1e-3")
    ],
    "warm_start": [Options(WARM_STARTS), None],
    "warm_start_prob": [
        Interval(Real, 0.0, 1.0, closed="neither", fix="use a probability such as 0.5"),
        None,
        Skip(lambda p: p["warm_start"] in (None, "none"), "only the warm start uses it"),
    ],
    "validation_fraction": [
        Interval(
            Real,
            0.0,
            1.0,
            closed="neither",
            fix="use None (no selection) or a fraction such as 0.2",
        ),
        None,
    ],
    "selection": [Options(_estimator_names, text="a registered estimator name, one of {values}")],
    "selection_policy": [Options(SELECTION_POLICIES)],
    "safe": [
        "boolean",
        Rule(
            lambda p: not p["safe"] or p["validation_fraction"] is not None,
            "needs held-out logs to compare against the best constant action. Got "
            "safe={safe!r} with validation_fraction={validation_fraction!r}",
            fix="set validation_fraction=0.2 (or safe=False)",
        ),
    ],
    "refit": ["boolean"],
    "verbose": [
        Options(("auto",)),
        "boolean",
        Interval(Integral, 0, None, fix="use 0 (silent), 1 (a progress bar) or 'auto'"),
    ],
}


def split_holdout(
    data: LoggedBandit, fraction: float, seed: int
) -> tuple[LoggedBandit, LoggedBandit]:
    """(train, holdout) with ``fraction`` of the rows held out, seeded."""
    try:
        return data.split(fraction, random_state=np.random.default_rng([seed, 1]))
    except ValueError as exc:
        raise InvalidParameterError(
            f"The 'validation_fraction' parameter of Booster: {exc} Use a fraction that leaves "
            f"rows on both sides."
        ) from exc


def check_data(data: Any, name: str) -> None:
    if not isinstance(data, LoggedBandit):
        raise InvalidParameterError(
            f"Booster.fit: {name} must be an opboost.LoggedBandit. Got {type(data).__name__}; "
            f"build one with LoggedBandit(contexts=..., actions=..., propensities=..., "
            f"rewards=..., n_actions=...)"
            + (
                ", or pass the contexts as X with y = an (n, 3) array [action, propensity, "
                "reward] (the scikit-learn route)."
                if name == "data"
                else "."
            )
        )


def check_eval_data(data: LoggedBandit, eval_data: LoggedBandit) -> None:
    """``eval_data`` must be logs of the same problem as ``data``."""
    check_data(eval_data, "eval_data")
    if (eval_data.n_actions, eval_data.n_features) != (data.n_actions, data.n_features):
        raise InvalidParameterError(
            f"Booster.fit: eval_data has {eval_data.n_actions} actions and "
            f"{eval_data.n_features} features but data has {data.n_actions} and "
            f"{data.n_features}; evaluate on rows of the same problem."
        )
    try:
        check_same_schema(data, eval_data, "eval_data", "Booster.fit")
    except ValueError as exc:
        raise InvalidParameterError(str(exc)) from None


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


def check_callbacks(callbacks: Any) -> list[Callback]:
    callbacks = list(callbacks)
    for cb in callbacks:
        if not all(
            callable(getattr(cb, m, None)) for m in ("on_fit_start", "on_round_end", "on_fit_end")
        ):
            raise InvalidParameterError(
                f"Booster.fit: callbacks must be opboost.callbacks.Callback objects. Got "
                f"{cb!r}; subclass Callback and override on_round_end."
            )
    return sorted(callbacks, key=lambda cb: getattr(cb, "order", 50))


def check_f(f_values: Any, shape: tuple[int, int], learner: Any) -> np.ndarray:
    f_values = np.asarray(f_values, dtype=np.float64)
    # The sum is finite only if every entry is (short of overflow, itself worth an error);
    # one pass and no (n, K) temporary on the per-round path.
    if f_values.shape != shape or not np.isfinite(np.sum(f_values)):
        raise InvalidParameterError(
            f"Base learner {learner.name!r} returned predictions of shape {f_values.shape} "
            f"(finite: {bool(np.all(np.isfinite(f_values)))}); fit_round must return finite "
            f"values of shape {shape}."
        )
    return f_values


# --- scikit-learn conventions: (X, y) input and feature names ------------------------------

#: The fields of the structured ``y`` of ``Booster.fit(X, y)``, in column order.
Y_FIELDS = ("action", "propensity", "reward")


def _columns_of(X: Any) -> list[str] | None:
    """String column names of a DataFrame-like ``X``, else None (as scikit-learn does:
    names are recorded only when every column name is a string)."""
    columns = getattr(X, "columns", None)
    if columns is None or getattr(X, "ndim", 2) != 2:
        return None
    names = list(columns)
    return names if names and all(isinstance(c, str) for c in names) else None


def _as_contexts(X: Any) -> Any:
    """A 2-D float array (or the sparse matrix itself) of ``X``."""
    import scipy.sparse as sp

    if sp.issparse(X):
        return X
    to_numpy = getattr(X, "to_numpy", None)
    if to_numpy is None:
        return np.asarray(X)
    try:  # pandas: pd.NA of nullable columns becomes NaN, a missing value
        return to_numpy(dtype=np.float64, na_value=np.nan)
    except TypeError:  # a to_numpy without na_value
        return to_numpy(dtype=np.float64)


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
        schema = frame_schema(X, owner)
        contexts = _as_contexts(X) if schema is None else schema.encode(X, owner)
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
    """``X`` ready for the fitted policy: a DataFrame is reordered by the fitted feature
    names (missing or unexpected columns raise, naming them) and encoded with the policy's
    table schema if it has one; every input must have ``n_features_in_`` columns."""
    owner = f"{type(est).__name__}.{method}"
    names = getattr(est, "feature_names_in_", None)
    columns = _columns_of(X)
    if names is not None and columns is not None:
        missing = [c for c in names if c not in columns]
        extra = [c for c in columns if c not in set(names)]
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
        X = X[list(names)]
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
    metadata = getattr(getattr(est, "policy_", None), "metadata", {})
    if "schema" not in metadata:
        return _as_contexts(X)
    try:
        return encode_frame(metadata, X, owner)
    except ValueError as exc:
        raise InvalidParameterError(str(exc)) from None
