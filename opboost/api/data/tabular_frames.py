"""What a fitted policy records about the table it was fitted on, and how it reads tables
with it: the logs' :class:`~opboost.api.data.tabular.TabularSchema` and the fit's feature names in
the policy's JSON metadata (keys ``"schema"``, ``"feature_names"``), DataFrames encoded or
matched by column name at prediction (:func:`encode_frame`) and answers given as the
catalogue's action ids (:func:`action_ids_of`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from opboost.api.data.table_reader import TableReader
from opboost.api.data.tabular import TabularSchema

__all__ = [
    "action_ids_of",
    "attach_feature_names",
    "attach_schema",
    "catalogue_of",
    "encode_frame",
    "table_reader",
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


#: Readers of the policies served lately, by the identity of their metadata's schema (or
#: feature names): (schema, feature names, reader); the objects are held, so ids stay theirs.
_READERS: dict[int, tuple[Any, Any, TableReader | None]] = {}
_MAX_READERS = 64


def table_reader(metadata: Mapping[str, Any]) -> TableReader | None:
    """The reader of tables for a policy with ``metadata``: its schema's, or by the feature
    names when it has no schema (None without either). Built once per metadata (a fitted
    or loaded policy), not per call, since serving one row must not rebuild category tables."""
    obj, names = metadata.get("schema"), metadata.get("feature_names")
    key = id(obj if obj is not None else names)
    hit = _READERS.get(key)
    if hit is not None and hit[0] is obj and hit[1] is names:
        return hit[2]
    if obj is not None:
        reader = TabularSchema.from_dict(obj).reader
    else:
        reader = None if names is None else TableReader(names, {})
    if len(_READERS) >= _MAX_READERS:
        _READERS.pop(next(iter(_READERS), None), None)  # the oldest (another thread's race: none)
    _READERS[key] = (obj, names, reader)
    return reader


def encode_frame(metadata: Mapping[str, Any], X: Any, owner: str) -> Any:
    """``X`` encoded with the schema in ``metadata`` when it is a DataFrame or a mapping of
    column -> value (one row) or values (a missing or duplicated column, or a column of
    another kind, is an error naming it), or, without a schema, its columns read in the order
    of the metadata's ``"feature_names"``; anything else as it is."""
    mapping = isinstance(X, Mapping)
    columns = getattr(X, "columns", None)
    if columns is None and not mapping:
        return X
    reader = table_reader(metadata)
    if reader is None:
        if mapping:
            raise ValueError(
                f"{owner}: a mapping of column names needs a policy fitted on named columns "
                f"(a DataFrame, or fit(..., feature_names=...)); pass an (m, d) array in the "
                f"fit's column order."
            )
        return X
    if "schema" not in metadata and not mapping:
        missing = [c for c in reader.columns if c not in columns]
        if missing:
            raise ValueError(
                f"{owner}: the DataFrame lacks column(s) {missing} of the policy's "
                f"{len(reader.columns)} feature names (feature_names_in_), matched by name in "
                f"any order."
            )
    return reader.read(X, owner)


def action_ids_of(metadata: Mapping[str, Any], actions: np.ndarray) -> np.ndarray:
    """The action ids of action indices ``actions`` (the indices without a catalogue)."""
    ids = (metadata.get("schema") or {}).get("action_ids")
    if ids is None:
        return np.asarray(actions)
    return TabularSchema((), {}, tuple(ids)).ids(actions)


def catalogue_of(metadata: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """The action ids of the catalogue recorded in ``metadata`` (action a is the a-th id), or
    None when the policy was fitted on logs without ids."""
    ids = (metadata.get("schema") or {}).get("action_ids")
    return None if ids is None else tuple(ids)
