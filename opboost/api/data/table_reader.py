"""How a table's context columns are read into the float contexts every learner takes, planned
once per schema: each column's position and kind, and a code table per categorical column.

:class:`TableReader` reads a DataFrame (columns matched by name) or a mapping of column name to
a value (one row) or to values. A categorical value becomes its index in the column's
category list (:data:`MISSING_CODE` when missing or unknown), a numeric one a float (NaN when
missing). The plan is built once (a :class:`~opboost.api.data.tabular.TabularSchema` holds its
reader; a fitted policy holds its schema), so serving one row costs a dictionary lookup per
categorical column instead of rebuilding the category index on every call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["TableReader"]

#: Code of a missing value, or of a category not seen at fit (LightGBM: missing category).
MISSING_CODE = -1
#: Rows up to which categorical codes are looked up in a dict (serving a few rows); larger
#: tables go through a pandas index built once per column (vectorised hashing).
_LOOKUP_ROWS = 64


def scalar(value: Any) -> Any:
    """A NumPy scalar as the Python scalar (so it compares, hashes and saves as JSON)."""
    return value.item() if isinstance(value, np.generic) else value


def objects(values: Sequence[Any]) -> np.ndarray:
    """``values`` as a 1-D object array (a sequence of tuples stays one entry per tuple)."""
    table = np.empty(len(values), dtype=object)
    table[:] = list(values)
    return table


def _row(index: Any, position: int) -> str:
    where = "" if index is None else f" (index {scalar(index[position])!r})"
    return f"row {position}{where}"


def column_kind(dtype: Any, values: Any, column: Any, owner: str) -> str:
    """ "categorical" (a pandas category, strings, or objects that are all strings) or
    "numeric" of a column of ``dtype`` holding ``values``; ValueError for times (datetimes,
    time spans), which a model cannot read as they are, and for an object column of other
    types or of mixed types. Decided by the dtype alone except for an object column."""
    import pandas as pd

    times = _times(dtype)
    if times is not None:
        raise ValueError(
            f"{owner}: context column {column!r} holds {times} ({dtype}), which a model cannot "
            f"read as they are; {_TIME_FIXES[times].format(column=column)}"
        )
    if isinstance(dtype, np.dtype):
        if dtype.kind in "iufb":
            return "numeric"
        if dtype.kind in "US":
            return "categorical"
    elif isinstance(dtype, pd.CategoricalDtype | pd.StringDtype):
        return "categorical"
    elif pd.api.types.is_numeric_dtype(dtype):
        return "numeric"
    values = np.asarray(values, dtype=object)
    present = values[~pd.isna(values)] if values.size else values
    types = {type(v) for v in present}
    if not types or types <= {str, np.str_}:
        return "categorical"
    if all(issubclass(t, int | float | np.number | np.bool_) for t in types):
        return "numeric"
    names = sorted({t.__name__ for t in types})
    what = (
        f"mixes types {', '.join(names)}; make it one"
        if len(names) > 1
        else f"holds {names[0]} values, neither numbers nor strings; make it either"
    )
    raise ValueError(
        f"{owner}: context column {column!r} {what} type: df[{column!r}].astype(str) for "
        f"categories, pd.to_numeric for numbers."
    )


#: How to turn each kind of time column into something a model reads (``{column}``: its name).
_TIME_FIXES = {
    "datetimes": (
        "make features of them first, numbers such as df[{column!r}].dt.hour or "
        ".dt.dayofweek, or categories with .astype(str)"
    ),
    "time spans": "make them numbers first, e.g. df[{column!r}].dt.total_seconds()",
}


def _times(dtype: Any) -> str | None:
    """ "datetimes" or "time spans" for a datetime, period or timedelta ``dtype``, else None."""
    import pandas as pd

    if pd.api.types.is_timedelta64_dtype(dtype):
        return "time spans"
    if pd.api.types.is_datetime64_any_dtype(dtype) or isinstance(dtype, pd.PeriodDtype):
        return "datetimes"
    return None


def numeric_values(values: Any, column: Any, owner: str, index: Any = None) -> np.ndarray:
    """A numeric column's values (an array or a pandas extension array) as floats; a missing
    value (NaN, None, pd.NA) becomes NaN, which LightGBM learners route as missing; an
    infinite value is a ValueError naming its row (``index``: the DataFrame's, to name it)."""
    if not isinstance(values, np.ndarray):  # a nullable extension array: pd.NA -> NaN
        out = values.to_numpy(dtype=np.float64, na_value=np.nan)
    elif values.dtype.kind == "O":
        import pandas as pd

        out = np.where(pd.isna(values), np.nan, values).astype(np.float64)
    else:
        out = values.astype(np.float64, copy=False)
    bad = np.isinf(out)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{owner}: numeric context column {column!r} must be finite or missing (NaN); "
            f"{_row(index, i)} has {float(out[i])!r}. Replace the infinite values "
            f"(with NaN, a missing value, for instance) or drop the rows."
        )
    return out


def all_missing(values: Any) -> bool:
    """Whether every value of an array (or extension array) is missing (NaN, None, pd.NA);
    True when empty."""
    import pandas as pd

    return bool(np.asarray(pd.isna(values)).all())


class TableReader:
    """The plan for reading context ``columns`` (in order) whose ``categories`` (per
    categorical column, code c is ``categories[column][c]``) were fixed at fit.

    ``columns`` empty: the table has no column names to match, and a DataFrame is read by
    position, as numbers.
    """

    def __init__(self, columns: Sequence[Any], categories: Mapping[Any, Sequence[Any]]) -> None:
        self.columns = tuple(columns)
        self.categories = {c: tuple(v) for c, v in categories.items()}
        self._lookup = {
            c: {scalar(v): i for i, v in enumerate(cats)} for c, cats in self.categories.items()
        }
        self._known = frozenset(self.columns)
        self._indexes: dict[Any, Any] = {}  # pandas Index per categorical column, on demand
        self._remaps: dict[Any, np.ndarray] = {}  # (column, CategoricalDtype) -> codes table

    def read(self, X: Any, owner: str) -> np.ndarray:
        """The float (m, d) contexts of DataFrame or mapping ``X``; ValueError naming the
        column for a missing or duplicated column or one of another kind than at fit (a
        column of missing values only takes the fit's kind)."""
        if isinstance(X, Mapping):
            self._check_mapping(X, owner)
            if all(isinstance(X[c], str) or np.ndim(X[c]) == 0 for c in self.columns):
                return self._read_row(X, owner)
            columns, m, index = self._mapping_columns(X, owner), None, None
        else:
            if not self.columns:
                return np.asarray(X.to_numpy(dtype=np.float64, na_value=np.nan))
            columns, m, index = self._frame_columns(X, owner), len(X), X.index
        out = np.empty((m if m is not None else _length(columns), len(self.columns)))
        for j, column in enumerate(self.columns):
            dtype, values = columns[column]
            fitted = column in self.categories
            categorical = column_kind(dtype, values, column, owner) == "categorical"
            if categorical != fitted and not all_missing(values):  # missing only: fit's kind
                raise _kind_error(owner, column, fitted, f"dtype {dtype}")
            if fitted:
                out[:, j] = self._codes(column, values)
            else:
                out[:, j] = numeric_values(values, column, owner, index)
        return out

    def _frame_columns(self, df: Any, owner: str) -> dict[Any, tuple[Any, np.ndarray]]:
        """(dtype, values) of each of ``columns`` in DataFrame ``df``."""
        if not df.columns.is_unique:
            twice = sorted({str(c) for c in df.columns[df.columns.duplicated()]})
            raise ValueError(
                f"{owner}: the DataFrame has column(s) {twice} more than once; keep one of "
                f"each (df.loc[:, ~df.columns.duplicated()]) or rename the copies."
            )
        try:
            arrays = _column_arrays(df, self.columns)
        except KeyError:
            missing = [c for c in self.columns if c not in df.columns]
            raise ValueError(
                f"{owner}: the DataFrame lacks column(s) {missing} of the fitted schema "
                f"{list(self.columns)}."
            ) from None
        return {c: (values.dtype, values) for c, values in zip(self.columns, arrays, strict=True)}

    def _check_mapping(self, row: Mapping[Any, Any], owner: str) -> None:
        """ValueError naming the missing and the unexpected keys of a mapping, if any."""
        if not self.columns:
            raise ValueError(
                f"{owner}: a mapping of column names needs a policy fitted on named columns "
                f"(a DataFrame or feature_names=); pass an (m, d) array in the fit's order."
            )
        missing = [c for c in self.columns if c not in row]
        extra = [c for c in row if c not in self._known]
        if missing or extra:
            what = [f"lacks column(s) {missing}"] if missing else []
            what += [f"has unexpected column(s) {extra}"] if extra else []
            raise ValueError(
                f"{owner}: the mapping {' and '.join(what)}; the policy reads the columns "
                f"{list(self.columns)}, one value (one row) or a list of values each."
            )

    def _read_row(self, row: Mapping[Any, Any], owner: str) -> np.ndarray:
        """The (1, d) contexts of a mapping of column -> one value (serving one row: no
        arrays built per column)."""
        import pandas as pd

        out = np.empty((1, len(self.columns)))
        for j, column in enumerate(self.columns):
            value = scalar(row[column])
            missing = (
                value is None or value is pd.NA or (isinstance(value, float) and value != value)
            )
            lookup = self._lookup.get(column)
            if lookup is not None:
                if not (missing or isinstance(value, str)):
                    raise _kind_error(owner, column, True, f"a {type(value).__name__}")
                out[0, j] = lookup.get(value, MISSING_CODE)
            elif missing:
                out[0, j] = np.nan
            elif isinstance(value, int | float):
                out[0, j] = numeric_values(np.array([float(value)]), column, owner)[0]
            else:  # a string: categorical here; other objects: named by column_kind
                column_kind(np.dtype(object), objects([value]), column, owner)
                raise _kind_error(owner, column, False, f"a {type(value).__name__}")
        return out

    def _mapping_columns(self, row: Mapping[Any, Any], owner: str) -> dict[Any, Any]:
        """(dtype, values) of each of ``columns`` in a mapping of column -> values."""
        out = {}
        for column in self.columns:
            values = np.asarray(row[column])
            if values.dtype.kind in "US" or (values.dtype.kind == "O" and values.ndim == 0):
                values = objects([scalar(v) for v in np.atleast_1d(values)])
            out[column] = (values.dtype, np.atleast_1d(values))
        lengths = {c: len(v) for c, (_, v) in out.items()}
        if len(set(lengths.values())) > 1:
            raise ValueError(
                f"{owner}: the mapping's columns have different lengths {lengths}; give one "
                f"value per column (one row) or lists of equal length."
            )
        return out

    def _codes(self, column: Any, values: Any) -> np.ndarray:
        """Codes of ``values`` in the column's categories; missing and unknown values ->
        MISSING_CODE. A pandas Categorical maps its own codes through a table built once per
        category list."""
        import pandas as pd

        if isinstance(values, pd.Categorical):
            remap = self._remaps.get((column, values.dtype))
            if remap is None:
                cats = values.categories
                remap = self._codes(column, np.asarray(cats, dtype=object))
                remap = np.append(remap, MISSING_CODE)  # code -1 (missing) reads the last
                self._remaps[(column, values.dtype)] = remap
            return remap[values.codes]
        values = np.asarray(values, dtype=object)
        if len(values) <= _LOOKUP_ROWS:
            lookup = self._lookup[column]
            codes = (
                lookup.get(scalar(v), MISSING_CODE) if _hashable(v) else MISSING_CODE
                for v in values
            )
            return np.fromiter(codes, dtype=np.float64, count=len(values))
        index = self._indexes.get(column)
        if index is None:
            index = pd.Index(objects(self.categories[column]), dtype=object)
            self._indexes[column] = index
        return index.get_indexer(values).astype(np.float64)


def _kind_error(owner: str, column: Any, fitted: bool, here: str) -> ValueError:
    """The error of a column whose kind differs from the fit's (``fitted``: categorical)."""
    was, now = ("categorical", "numeric") if fitted else ("numeric", "categorical")
    return ValueError(
        f"{owner}: column {column!r} was {was} at fit but is {now} here ({here}); pass it as "
        f"at fit" + (" (strings or a pandas category)." if fitted else ".")
    )


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _column_arrays(df: Any, columns: Sequence[Any]) -> list[Any]:
    """The arrays (NumPy or pandas extension arrays) of ``df``'s ``columns``. pandas' own
    positional accessor takes about 0.5 us a column where ``df[name]`` builds a Series in
    about 10 us: most of serving one row; the public route stands in where it is absent."""
    positions = [df.columns.get_loc(c) for c in columns]  # unique columns: integers
    get = getattr(df, "_get_column_array", None)
    if get is None:
        return [df.iloc[:, i].array for i in positions]
    return [get(i) for i in positions]


def _length(columns: Mapping[Any, tuple[Any, Any]]) -> int:
    return len(next(iter(columns.values()))[1]) if columns else 0
