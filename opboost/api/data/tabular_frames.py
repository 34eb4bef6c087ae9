"""What a fitted policy records about the table it was fitted on, and how it reads tables
with it: the logs' :class:`~opboost.api.data.tabular.TabularSchema` and the fit's feature names in
the policy's JSON metadata (keys ``"schema"``, ``"feature_names"``), DataFrames encoded or
matched by column name at prediction (:func:`encode_frame`) and answers given as the
catalogue's action ids (:func:`action_ids_of`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from opboost.api.data.tabular import TabularSchema

__all__ = [
    "action_ids_of",
    "attach_feature_names",
    "attach_schema",
    "catalogue_of",
    "encode_frame",
]


def attach_schema(policy: Any, schema: TabularSchema | None) -> None:
    """Record ``schema`` in the policy's metadata (saved with it)."""
    if schema is not None:
        policy.metadata["schema"] = schema.to_dict()


def attach_feature_names(policy: Any, names: Any) -> None:
    """Record the fit's feature names in the policy's metadata (``"feature_names"``, saved
    with it) when they are strings: the policy then has ``feature_names_in_`` and matches
    DataFrame columns by name."""
    if names is not None and all(isinstance(n, str) for n in names):
        policy.metadata["feature_names"] = [str(n) for n in names]


def _schema(metadata: Mapping[str, Any]) -> TabularSchema | None:
    obj = metadata.get("schema")
    return None if obj is None else TabularSchema.from_dict(obj)


def encode_frame(metadata: Mapping[str, Any], X: Any, owner: str) -> Any:
    """``X`` encoded with the schema in ``metadata`` when it is a DataFrame (a missing column
    or a column of another kind is an error naming it), or, without a schema, its columns in
    the order of the metadata's ``"feature_names"``; anything else as it is."""
    columns = getattr(X, "columns", None)
    if columns is None:
        return X
    if "schema" in metadata:
        return _schema(metadata).encode(X, owner)
    names = metadata.get("feature_names")
    if names is None:
        return X
    missing = [c for c in names if c not in columns]
    if missing:
        raise ValueError(
            f"{owner}: the DataFrame lacks column(s) {missing} of the policy's "
            f"{len(names)} feature names (feature_names_in_), matched by name in any order."
        )
    return X[list(names)]


def action_ids_of(metadata: Mapping[str, Any], actions: np.ndarray) -> np.ndarray:
    """The action ids of action indices ``actions`` (the indices without a catalogue)."""
    schema = _schema(metadata)
    return np.asarray(actions) if schema is None else schema.ids(actions)


def catalogue_of(metadata: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """The action ids of the catalogue recorded in ``metadata`` (action a is the a-th id), or
    None when the policy was fitted on logs without ids."""
    schema = _schema(metadata)
    return None if schema is None else schema.action_ids
