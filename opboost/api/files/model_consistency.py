"""Checks at load that a saved policy's metadata and model agree with each other.

A checksum cannot tell a deliberate edit from a save: whoever edits a file can recompute it.
An edit that leaves the file consistent (a leaf value, a category renamed) is a new model;
:func:`check_model_consistency` refuses the edits that leave the file contradicting itself,
which would load and then serve nonsense or contradictory errors:

* the model's input columns against the metadata: the contexts' columns (``n_features``)
  and, for a model of (context, item) pairs, the item columns (``action_schema.n_features``,
  plus one for its interaction); a model of pairs needs ``action_schema`` (it designs the
  pairs of the catalogue given at serving) and a model of fixed actions must have none;
* every category code the model's categorical splits use against the category list of the
  column they split (the table schema's for a context column, the action schema's for an
  item column, the ``n_actions`` actions for an action index column): a code beyond the list
  is never produced by the encoder, so such a split would send every row the same way.

The model is read through the ensemble's own description: ``n_features`` (context columns),
``n_action_features`` (item columns; 0 or absent for fixed actions) and
``categorical_codes()``; an ensemble without them is checked for what it has.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from opboost.api.data.pairs import ACTION_SCHEMA_KEY, ActionSchema
from opboost.api.data.tabular import TabularSchema
from opboost.api.serving.catalogue import action_schema_of

__all__ = ["check_model_consistency"]

_SHOWN = 8  # codes and categories quoted in a message


def check_model_consistency(metadata: Mapping[str, Any], ensemble: Any, n_actions: int) -> None:
    """ValueError naming the metadata field and both numbers where a learned policy's
    ``metadata`` (already checked for its own shape) contradicts its ``ensemble``."""
    d = getattr(ensemble, "n_features", None)
    items = int(getattr(ensemble, "n_action_features", 0) or 0)
    schema = action_schema_of(metadata)
    recorded = metadata.get("n_features")
    if d is not None and isinstance(recorded, int) and recorded != d:
        raise ValueError(
            f"metadata n_features is {recorded} but the model reads {d} context column(s)"
        )
    context = "" if d is None else f" after its {d} context column(s)"
    if items and schema is None:
        raise ValueError(
            f"the model scores (context, item) pairs ({items} item column(s){context}) but "
            f"the metadata has no {ACTION_SCHEMA_KEY!r}, which designs the pairs of the "
            f"catalogue served"
        )
    if schema is not None and not items:
        raise ValueError(
            f"metadata {ACTION_SCHEMA_KEY} describes {schema.n_features} item column(s) but "
            f"the model scores {n_actions} fixed actions, not (context, item) pairs"
        )
    if schema is not None and _item_columns(schema) != items:
        plus = " (+1 for its interaction)" if schema.interaction is not None else ""
        raise ValueError(
            f"metadata {ACTION_SCHEMA_KEY}.n_features is {schema.n_features}{plus} but the "
            f"model reads {items} item column(s){context}"
        )
    codes_of = getattr(ensemble, "categorical_codes", None)
    if codes_of is not None:
        _check_codes(codes_of(), metadata, schema, n_actions)


def _item_columns(schema: ActionSchema) -> int:
    """The columns a pair of ``schema`` has after its context's: phi, and the interaction."""
    return schema.n_features + (schema.interaction is not None)


def _check_codes(
    codes: Mapping[tuple[str, int], np.ndarray],
    metadata: Mapping[str, Any],
    schema: ActionSchema | None,
    n_actions: int,
) -> None:
    """Each split column's codes within the length of the category list that encodes it."""
    table = metadata.get("schema")
    table = None if table is None else TabularSchema.from_dict(table)
    for (role, k), used in codes.items():
        listed = _category_list(role, k, table, schema, n_actions)
        if listed is None or not len(used) or int(used[-1]) < listed[2]:
            continue
        what, field, size, values = listed
        shown = ", ".join(str(c) for c in used[:_SHOWN]) + (", ..." if len(used) > _SHOWN else "")
        preview = "" if values is None else f" {list(values[:_SHOWN])!r}"
        raise ValueError(
            f"the model's categorical splits on {what} use codes {shown} but {field} has "
            f"{size} entr{'y' if size == 1 else 'ies'}{preview}: a code must index the list"
        )


def _category_list(
    role: str,
    k: int,
    table: TabularSchema | None,
    schema: ActionSchema | None,
    n_actions: int,
) -> tuple[str, str, int, tuple | None] | None:
    """(the column, the metadata field, its length, its values) of the category list that
    encodes input column ``k`` of ``role``; None when nothing lists its categories (an array
    fit's ``categorical_features``, the one-hot action columns, the interaction)."""
    if role == "context" and table is not None and k < len(table.columns):
        column = table.columns[k]
        if column in table.categories:
            cats = table.categories[column]
            return f"column {column!r}", "its metadata schema category list", len(cats), cats
    elif role == "action" and k == 0:
        return "the action column", "the action list (n_actions)", n_actions, None
    elif role == "item" and schema is not None and k < schema.n_features:
        if schema.kind == "index":
            field = f"the action list ({ACTION_SCHEMA_KEY}.n_actions)"
            return "the item column (the action index)", field, schema.n_actions, None
        names, cats = schema.columns or (), schema.categories or {}
        if k < len(names) and names[k] in cats:
            field = f"its {ACTION_SCHEMA_KEY} category list"
            return f"item column {names[k]!r}", field, len(cats[names[k]]), cats[names[k]]
    return None
