"""Checks of a saved policy's metadata at load: the table schema it serves with.

:func:`check_saved_schema` is what :func:`opboost.core.policy_loading.load_policy` runs on
``metadata["schema"]`` (:class:`opboost.api.data.tabular.TabularSchema` as JSON), so a catalogue or
category list that cannot serve the model fails at load, naming what is wrong.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opboost.api.data.tabular import TabularSchema

__all__ = ["check_saved_schema"]


def check_saved_schema(metadata: Mapping[str, Any], n_features: int | None, n_actions: int) -> None:
    """ValueError unless a saved policy's ``metadata["schema"]`` (if any) is a table schema
    of ``n_features`` columns (None: not known) and, with action ids, ``n_actions`` distinct
    ids, whose categorical columns are among its columns, each listed once with distinct
    categories: a shortened catalogue fails at load, not at the first ``return_ids``."""
    obj = metadata.get("schema")
    if obj is None:
        return
    lists = isinstance(obj, Mapping) and all(
        isinstance(obj.get(key), list) for key in ("columns", "categories")
    )
    if not lists or not (obj.get("action_ids") is None or isinstance(obj["action_ids"], list)):
        raise ValueError(
            "metadata schema must be an object with lists 'columns' and 'categories' and "
            "'action_ids' (a list or null)"
        )
    schema = TabularSchema.from_dict(obj)
    columns, ids = schema.columns, schema.action_ids
    for values in (columns, ids or (), *schema.categories.values()):
        if not all(isinstance(v, str | int | float | bool) for v in values):
            raise ValueError("metadata schema: names, categories and ids must be JSON scalars")
    if n_features is not None and len(columns) != n_features:
        raise ValueError(
            f"metadata schema lists {len(columns)} columns but the model reads {n_features}"
        )
    if ids is not None and (len(ids) != n_actions or len(set(ids)) != len(ids)):
        raise ValueError(
            f"metadata schema has {len(ids)} action ids ({len(set(ids))} distinct) but the "
            f"policy has {n_actions} actions"
        )
    listed = len(obj["categories"]) == len(schema.categories)
    for column, cats in schema.categories.items():
        if not listed or column not in columns or len(set(cats)) != len(cats):
            raise ValueError(
                f"metadata schema: categorical column {column!r} must be one of the columns, "
                f"listed once, with distinct categories"
            )
