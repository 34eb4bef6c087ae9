"""Tables of logs: string and categorical context columns, string (any hashable) action ids.

:meth:`opboost.LoggedBandit.from_dataframe` encodes a DataFrame with :func:`dataframe_fields`:
every categorical context column (a pandas ``category``, a string or an ``object`` column of
strings) becomes integer codes 0..C-1 (the index of the value in the column's category list;
a missing value, or at prediction time a category never seen at fit, becomes -1, which
LightGBM reads as its missing category), and the action ids become indices 0..K-1 of the
action catalogue. :class:`TabularSchema` records the column names, the categories and the
action ids; a fitted policy saves it in its JSON metadata (key ``"schema"``) and encodes a
DataFrame with it at prediction time, so the policy can answer with the original action ids
(:mod:`opboost.api.data.tabular_frames`).

Base learners see the codes as numbers. One that can split on categorical columns natively
takes a ``categorical_features`` parameter (context column indices, None by default); the
booster fills it from the schema (:func:`use_categorical_features`). ``lightgbm_tree`` does;
the scikit-learn trees see ordered integer codes.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from opboost.api.data.table_reader import MISSING_CODE, TableReader, column_kind
from opboost.api.data.table_reader import objects as _objects
from opboost.api.data.table_reader import scalar as _scalar
from opboost.api.exceptions import OpboostWarning

__all__ = [
    "MISSING_CODE",
    "ActionCatalogueWarning",
    "TabularSchema",
    "action_indices",
    "check_same_schema",
    "check_schema",
    "dataframe_fields",
    "float_contexts",
    "frame_contexts",
    "frame_schema",
    "use_categorical_features",
]

#: Types a category or an action id may have to be saved in a policy's JSON metadata.
_JSON_TYPES = (str, int, float, bool)


class ActionCatalogueWarning(OpboostWarning):
    """The actions were inferred from the logged ids: an action never logged is unknown."""


@dataclass(frozen=True)
class TabularSchema:
    """The table a LoggedBandit came from (JSON-serialisable with
    [`to_dict`][opboost.api.data.tabular.TabularSchema.to_dict]).

    ``columns``: the context columns in order; () when the contexts were not a table with
    named columns (an array given with action ids: a DataFrame is then read by position).
    ``categories``: for each categorical column, its categories; code c of that column is
    ``categories[column][c]`` (-1: missing or unknown). ``action_ids``: the action
    catalogue, id of action index a; None when the actions are the integers 0..K-1 themselves.
    """

    columns: tuple[Any, ...]
    categories: Mapping[Any, tuple[Any, ...]]
    action_ids: tuple[Any, ...] | None = None

    @property
    def categorical_features(self) -> tuple[int, ...]:
        """Indices of the categorical columns among ``columns``."""
        return tuple(j for j, c in enumerate(self.columns) if c in self.categories)

    def ids(self, actions: np.ndarray) -> np.ndarray:
        """The action ids of action indices ``actions``."""
        actions = np.asarray(actions)
        if self.action_ids is None:
            return actions
        ids = self.action_ids
        table = np.asarray(ids) if len({type(i) for i in ids}) == 1 else _objects(ids)
        return table[actions]

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict: ``columns``, ``categories`` (a list of [column, [categories]]
        pairs) and ``action_ids``; ValueError for a value JSON cannot hold."""
        for column, cats in self.categories.items():
            _check_json(cats, f"category of column {column!r}")
        if self.action_ids is not None:
            _check_json(self.action_ids, "action id")
        _check_json(self.columns, "column name")
        return {
            "columns": list(self.columns),
            "categories": [[c, list(v)] for c, v in self.categories.items()],
            "action_ids": None if self.action_ids is None else list(self.action_ids),
        }

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> TabularSchema:
        """The schema back from its ``to_dict`` form."""
        try:
            ids = obj["action_ids"]
            return cls(
                tuple(obj["columns"]),
                {c: tuple(v) for c, v in obj["categories"]},
                None if ids is None else tuple(ids),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a table schema ({exc!r}): {str(obj)[:120]}") from None

    @cached_property
    def reader(self) -> TableReader:
        """The plan that reads tables with this schema, built once."""
        return TableReader(self.columns, self.categories)

    def encode(self, df: Any, owner: str) -> np.ndarray:
        """The float (m, d) contexts of DataFrame ``df`` (or a mapping of column -> value or
        values; columns matched by name); a missing or duplicated column, or a column whose
        kind (categorical or numeric) differs from the schema's, raises ValueError naming it
        (a column of missing values only takes the schema's). Without ``columns`` the
        DataFrame's columns are read by position, as numbers."""
        return self.reader.read(df, owner)


def check_schema(schema: Any, n_features: int, n_actions: int) -> None:
    """A LoggedBandit's ``schema``: a TabularSchema of its ``n_features`` columns and (when
    it has ids) ``n_actions`` action ids."""
    if not isinstance(schema, TabularSchema):
        raise ValueError(f"LoggedBandit: schema must be a TabularSchema. Got {schema!r}.")
    ids = schema.action_ids
    named = len(schema.columns) in (0, n_features)  # (): contexts without column names
    if not named or (ids is not None and len(ids) != n_actions):
        raise ValueError(
            f"LoggedBandit: schema has {len(schema.columns)} columns and "
            f"{'no' if ids is None else len(ids)} action ids, but the logs have {n_features} "
            f"features and {n_actions} actions."
        )


def _check_json(values: Sequence[Any], what: str) -> None:
    for value in values:
        if not isinstance(value, _JSON_TYPES):
            raise ValueError(
                f"TabularSchema: {what} {value!r} ({type(value).__name__}) cannot be saved as "
                f"JSON; use strings or numbers."
            )


def _row(series: Any, position: int) -> str:
    return f"row {position} (index {_scalar(series.index[position])!r})"


def _kind(series: Any, column: Any, owner: str) -> str:
    """ "categorical" or "numeric" (:func:`~opboost.api.data.table_reader.column_kind`)."""
    values = series.to_numpy(dtype=object) if series.dtype.kind == "O" else series.to_numpy()
    return column_kind(series.dtype, values, column, owner)


def _codes(series: Any, categories: Sequence[Any]) -> np.ndarray:
    """Codes of ``series`` in ``categories``; missing and unknown values -> MISSING_CODE."""
    import pandas as pd

    index = pd.Index(_objects(categories), dtype=object)
    values = _objects([_scalar(v) for v in series.astype(object).to_numpy()])
    return index.get_indexer(values).astype(np.float64)


def _categories(series: Any) -> tuple[Any, ...]:
    """A categorical column's categories: a pandas category's own, else the sorted values."""
    import pandas as pd

    if isinstance(series.dtype, pd.CategoricalDtype):
        return tuple(_scalar(c) for c in series.cat.categories)
    return tuple(sorted({_scalar(v) for v in series[series.notna()]}))


def encode_contexts(df: Any, columns: Sequence[Any], owner: str) -> TabularSchema:
    """The schema of context ``columns`` of ``df`` (no action ids yet)."""
    categories = {c: _categories(df[c]) for c in columns if _kind(df[c], c, owner) == "categorical"}
    return TabularSchema(tuple(columns), categories)


def frame_schema(X: Any, owner: str) -> TabularSchema | None:
    """The schema of DataFrame ``X``'s columns when some are categorical (string, object or
    category); None for anything else, which converts to floats as it is."""
    import pandas as pd

    if not isinstance(X, pd.DataFrame):
        return None
    if all(pd.api.types.is_numeric_dtype(dtype) for dtype in X.dtypes):
        return None
    return encode_contexts(X, list(X.columns), owner)


def float_contexts(X: Any) -> Any:
    """A 2-D float array of ``X`` (a sparse matrix is kept as it is); a pandas missing value
    (``pd.NA`` of a nullable column) becomes NaN."""
    import scipy.sparse as sp

    if sp.issparse(X):
        return X
    to_numpy = getattr(X, "to_numpy", None)
    if to_numpy is None:
        return np.asarray(X)
    try:
        return to_numpy(dtype=np.float64, na_value=np.nan)
    except TypeError:  # a to_numpy without na_value
        return to_numpy(dtype=np.float64)


def frame_contexts(X: Any, owner: str) -> tuple[Any, TabularSchema | None]:
    """(contexts, schema) of contexts ``X`` (an array, a sparse matrix or a DataFrame): a
    DataFrame with categorical columns is encoded with its :func:`frame_schema`, as
    ``from_dataframe`` does; anything else converts to floats (:func:`float_contexts`) with no
    schema. ValueError names a column that cannot be read."""
    schema = frame_schema(X, owner)
    if schema is None:
        return float_contexts(X), None
    return schema.encode(X, owner), schema


def _catalogue(series: Any, actions: Any, owner: str) -> tuple[Any, ...]:
    """The action catalogue: ``actions`` (checked unique), else the sorted ids seen (with an
    :class:`ActionCatalogueWarning`)."""
    if actions is not None:
        catalogue = tuple(_scalar(a) for a in actions)
        _check_ids(catalogue, owner)
        if len(set(catalogue)) != len(catalogue):
            seen: set[Any] = set()
            dup = next(a for a in catalogue if a in seen or seen.add(a))
            raise ValueError(f"{owner}: actions= lists {dup!r} twice; give each action once.")
        return catalogue
    values = {_scalar(v) for v in series[series.notna()]}
    try:
        catalogue = tuple(sorted(values))
    except TypeError:
        catalogue = tuple(_scalar(v) for v in series[series.notna()].unique())
    warnings.warn(
        f"{owner}: no action catalogue, so the {len(catalogue)} action ids seen in column "
        f"{series.name!r} are the actions (sorted); an action never logged is unknown to the "
        f"policy. Pass actions=[...] listing every action id (the catalogue).",
        ActionCatalogueWarning,
        stacklevel=4,
    )
    return catalogue


def _check_ids(catalogue: Sequence[Any], owner: str) -> None:
    """ValueError naming the first action id that is no string or finite number (a list is
    unhashable, NaN equals nothing, and the ids are saved with the policy as JSON)."""
    for position, value in enumerate(catalogue):
        finite = not isinstance(value, float) or np.isfinite(value)
        if not isinstance(value, _JSON_TYPES) or not finite:
            raise ValueError(
                f"{owner}: actions= has {value!r} ({type(value).__name__}) at position "
                f"{position}; action ids must be strings or finite numbers."
            )


def action_indices(
    ids: Any, actions: Any, owner: str, column: Any = "action"
) -> tuple[np.ndarray, tuple[Any, ...]]:
    """(action indices (n,), catalogue) of the logged action ``ids`` (n,): their indices in
    the catalogue ``actions`` (every action id), else in the sorted ids seen (with an
    :class:`ActionCatalogueWarning`); an id outside the catalogue is a ValueError naming it."""
    import pandas as pd

    series = ids if isinstance(ids, pd.Series) else pd.Series(_objects(list(ids)), name=column)
    catalogue = _catalogue(series, actions, owner)
    return _action_indices(series, catalogue, owner), catalogue


def _action_indices(series: Any, catalogue: Sequence[Any], owner: str) -> np.ndarray:
    index = _codes(series, catalogue).astype(np.int64)
    bad = index < 0
    if bad.any():
        missing = np.flatnonzero(np.asarray(series.isna()) & bad)
        if missing.size:
            i = int(missing[0])
            raise ValueError(
                f"{owner}: column {series.name!r} has no action (a missing value) at "
                f"{_row(series, i)}; every logged row needs the action it took: drop the "
                f"rows without one, df.dropna(subset=[{series.name!r}])."
            )
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{owner}: column {series.name!r} has action {_scalar(series.iloc[i])!r} at "
            f"{_row(series, i)}, which is not in the action catalogue (actions=, "
            f"{len(catalogue)} ids); add it to actions= or drop the rows."
        )
    return index


def dataframe_fields(
    df: Any,
    contexts: Sequence[Any],
    action: Any,
    actions: Any,
    n_actions: int | None,
    schema: TabularSchema | None = None,
) -> tuple[np.ndarray, np.ndarray, int, TabularSchema]:
    """(contexts (n, d) float, action indices (n,), n_actions, schema) of ``df``.

    Integer action ids without ``actions`` are the indices themselves (n_actions defaults to
    max + 1, with an :class:`ActionCatalogueWarning`); any other ids, or any ids with a
    catalogue ``actions``, are mapped to their catalogue index. A given ``schema`` (of other
    logs, such as the training logs) encodes the columns with its categories and gives the
    catalogue."""
    owner = "LoggedBandit.from_dataframe"
    if schema is None:
        schema = encode_contexts(df, contexts, owner)
    elif tuple(contexts) != schema.columns:
        raise ValueError(
            f"{owner}: contexts {list(contexts)} differ from the schema's columns "
            f"{list(schema.columns)}; pass contexts=list(schema.columns)."
        )
    elif actions is None:
        actions = schema.action_ids
    X = schema.encode(df, owner)
    series = df[action]
    integer = actions is None and np.asarray(series).dtype.kind in "iu"
    if integer:
        values = series.to_numpy()
        if n_actions is None:
            n_actions = int(np.max(values)) + 1 if len(values) else 0
            warnings.warn(
                f"{owner}: n_actions is inferred as max({action!r}) + 1 = {n_actions}; an "
                f"action above it that was never logged is unknown to the policy. Pass "
                f"n_actions=K or actions=[...] (the catalogue of every action id).",
                ActionCatalogueWarning,
                stacklevel=3,
            )
        return X, values, n_actions, schema
    catalogue = _catalogue(series, actions, owner)
    if n_actions is not None and n_actions != len(catalogue):
        raise ValueError(
            f"{owner}: n_actions={n_actions} but the action catalogue has {len(catalogue)} "
            f"ids; drop n_actions (the catalogue gives it) or list every action in actions=."
        )
    indices = _action_indices(series, catalogue, owner)
    schema = TabularSchema(schema.columns, schema.categories, catalogue)
    return X, indices, len(catalogue), schema


# --- use by the booster and by policies ---------------------------------------------------


def check_same_schema(data: Any, other: Any, name: str, owner: str) -> None:
    """Logs ``other`` must be encoded with ``data``'s schema (same codes, same actions)."""
    if getattr(data, "schema", None) != getattr(other, "schema", None):
        raise ValueError(
            f"{owner}: {name} was encoded with another table schema than the training logs "
            f"(other columns, categories or action ids), so its codes mean other values; "
            f"build it with LoggedBandit.from_dataframe(..., schema=data.schema)."
        )


def use_categorical_features(learner: Any, schema: TabularSchema | None) -> None:
    """Tell a base learner with a ``categorical_features`` parameter (left None) which
    context columns are categorical; other learners see the codes as numbers."""
    if schema is None or not schema.categorical_features:
        return
    params = learner.get_params(deep=False)
    if "categorical_features" in params and params["categorical_features"] is None:
        learner.set_params(categorical_features=list(schema.categorical_features))
