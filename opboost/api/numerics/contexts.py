"""Contexts as the float arrays every learner reads: a CSR matrix or a C-contiguous array of
float32 or float64, checked finite (NaN allowed where a learner routes missing values)."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from opboost.api.exceptions import InvalidParameterError

__all__ = ["as_contexts", "check_finite_contexts"]

#: Values up to which finiteness is checked element-wise; above, through their sum first (no
#: (m, d) temporary when all are finite).
_SMALL = 4096


def as_contexts(
    X: Any, n_features: int | None = None, *, dtype: Any = None, missing: bool = False
) -> Any:
    """Contexts as a float CSR matrix or a C-contiguous float array, shape (m, d).

    float32/float64 input keeps its dtype unless ``dtype`` is given; ``n_features`` checks d.
    ``missing``: NaN (a missing value) is accepted, for learners that route it
    (``BaseLearner.accepts_missing``); infinite values are always refused.
    """
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        target = dtype or (X.dtype if X.dtype in (np.float32, np.float64) else np.float64)
        X = X.astype(target, copy=False)
    else:
        X = np.asarray(X)
        target = dtype or (X.dtype if X.dtype in (np.float32, np.float64) else np.float64)
        try:
            X = np.ascontiguousarray(X, dtype=target)
        except (TypeError, ValueError) as error:
            raise InvalidParameterError(_not_numbers(X)) from error
    if X.ndim != 2:
        raise InvalidParameterError(f"contexts must be a 2-D (m, d) array; got shape {X.shape}.")
    if n_features is not None and X.shape[1] != n_features:
        raise InvalidParameterError(
            f"contexts have {X.shape[1]} features but the model was fitted on {n_features}; "
            f"pass rows with the training features."
        )
    check_finite_contexts(X, missing=missing)
    return X


def _not_numbers(X: np.ndarray) -> str:
    """Why the array ``X`` cannot be read as numbers: its first value that is not one."""
    where, value = "", None
    for index in np.ndindex(X.shape):
        try:
            float(X[index])
        except (TypeError, ValueError):
            names = ("row", "column") if len(index) == 2 else ("position",) * len(index)
            where = " at " + ", ".join(f"{n} {i}" for n, i in zip(names, index, strict=True))
            value = X[index]
            break
    return (
        f"contexts must be numbers; got an array of dtype {X.dtype} with {value!r}{where}. "
        f"An array holds the encoded numbers (a categorical column as its codes): pass a "
        f"DataFrame with the fit's column names to have strings and categories encoded by the "
        f"policy's schema (LoggedBandit.from_dataframe), or encode them yourself."
    )


def check_finite_contexts(X: Any, *, missing: bool = False) -> None:
    """An infinite context value is an error, as in :class:`opboost.LoggedBandit`; so is NaN
    (a missing value) unless ``missing``: the learner routes missing values itself."""
    values = X.data if sp.issparse(X) else X
    if values.size <= _SMALL:  # a few rows (serving): one pass, no overflow to guard against
        finite = bool(np.isfinite(values).all())
    else:
        with np.errstate(over="ignore", invalid="ignore"):  # huge finite values overflow the sum
            finite = bool(np.isfinite(values.sum())) or bool(np.all(np.isfinite(values)))
    if not finite:
        bad = np.isinf(values) if missing else ~np.isfinite(values)
        if not bad.any():
            return
        if sp.issparse(X):
            k = int(np.flatnonzero(bad)[0])
            index = (int(np.searchsorted(X.indptr, k, side="right") - 1), int(X.indices[k]))
        else:
            index = tuple(int(i) for i in np.argwhere(bad)[0])
        fix = (
            "Replace infinite values (NaN marks a missing value)."
            if missing
            else "This learner cannot take missing values: impute them (or use lightgbm_tree, "
            "which routes them natively) and replace infinite values."
        )
        raise InvalidParameterError(
            f"contexts must be finite{' or NaN' if missing else ''}; index {index} has "
            f"{float(values[bad][0])!r}. {fix}"
        )
