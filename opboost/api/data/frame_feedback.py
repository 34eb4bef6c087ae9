"""The feedback columns of a DataFrame of logs (``LoggedBandit.from_dataframe``), checked by
name: numeric propensity and reward columns, propensities in (0, 1], and no field column listed
among the contexts. Errors name the column, the row and the value, and say how to fix them."""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Real
from typing import Any

import numpy as np

from opboost.api.data.field_checks import bad_propensity

__all__ = ["check_field_columns", "feedback_column"]

OWNER = "LoggedBandit.from_dataframe"
#: pandas' ``infer_dtype`` of an object column that holds only numbers.
NUMBERS = ("floating", "integer", "mixed-integer-float", "decimal")


def check_field_columns(contexts: Sequence[Any], fields: dict[str, Any]) -> None:
    """No column of ``fields`` (field name -> column, None when absent) is among the
    ``contexts`` columns."""
    for field, column in fields.items():
        if column is not None and column in contexts:
            raise ValueError(
                f"{OWNER}: column {column!r} is the {field} column and is also listed in "
                f"contexts; contexts are what is known before the action is chosen, so drop "
                f"{column!r} from contexts."
            )


def feedback_column(df: Any, column: Any, field: str) -> np.ndarray:
    """The float64 values of the ``field`` ("propensity" or "reward") column ``df[column]``:
    a column of strings (or other non-numbers) is an error naming its first such value, and
    propensities must be in (0, 1]."""
    series = df[column]
    if series.dtype.kind in "biuf":
        values = series.to_numpy(dtype=np.float64)
    else:
        values = _from_objects(series, column, field)
    if field == "propensity":
        bad = bad_propensity(values)
        if bad is not None:
            i, advice = bad
            raise ValueError(
                f"{OWNER}: the propensity column {column!r} must be in (0, 1]; row {i} has "
                f"{float(values[i])!r}. {advice}"
            )
    return values


def _from_objects(series: Any, column: Any, field: str) -> np.ndarray:
    """float64 values of an object, string or category column that holds only numbers."""
    import pandas as pd

    objects = series.to_numpy(dtype=object)
    if pd.api.types.infer_dtype(objects, skipna=False) in NUMBERS:
        return objects.astype(np.float64)
    i = next(i for i, v in enumerate(objects) if not isinstance(v, Real) or isinstance(v, bool))
    parsed = pd.to_numeric(series, errors="coerce")
    if field == "propensity" or not (parsed.isna() & series.notna()).any():
        fix = f"convert it first: df[{column!r}] = pd.to_numeric(df[{column!r}])."
    else:
        seen = sorted({str(v) for v in objects})
        codes = ", ".join(f"{v!r}: {float(k)}" for k, v in enumerate(seen[:10]))
        fix = (
            f"map its values to numbers first, e.g. df[{column!r}] = "
            f"df[{column!r}].map({{{codes}}})."
            if len(seen) <= 10
            else f"encode it as numbers first ({len(seen)} distinct values)."
        )
    raise ValueError(
        f"{OWNER}: the {field} column {column!r} must hold numbers; row {i} has "
        f"{objects[i]!r}, so {fix}"
    )
