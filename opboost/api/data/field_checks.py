"""Validation of the fields of :class:`opboost.api.data.logged.LoggedBandit`.

Every check raises ``ValueError`` naming the field, the rule, the first bad index and its
value, and how to fix it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = [
    "MAX_ACTIONS",
    "as_real",
    "bad_propensity",
    "check_action_features",
    "check_actions",
    "check_columns",
    "check_contexts",
    "check_logging_probs",
    "check_n_actions",
    "check_positions",
    "check_row_fields",
    "first_missing",
    "readonly",
]

Contexts = np.ndarray | sp.csr_matrix | sp.csr_array


def bad_entry(field: str, rule: str, index: int | tuple, value: Any, fix: str) -> ValueError:
    return ValueError(f"LoggedBandit: {field} {rule}; index {index} has {value!r}. {fix}")


def first_index(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def as_real(field: str, value: Any, *, keep_float32: bool = False) -> np.ndarray:
    """``value`` as a float64 array (float32 stays float32 with ``keep_float32``). Complex
    input with a nonzero imaginary part is a ValueError (casting would silently drop it);
    non-numeric input is a ValueError."""
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"LoggedBandit: {field} must be numeric: {exc}.") from exc
    if array.dtype.kind == "c":
        bad = np.imag(array) != 0
        if bad.any():
            where = np.argwhere(bad)[0] if array.ndim else ()
            index: Any = tuple(int(i) for i in where)
            raise bad_entry(
                field,
                "must be real numbers",
                index[0] if len(index) == 1 else index,
                complex(array[index]),
                "Pass the real part (np.real) if the imaginary parts are rounding noise.",
            )
        array = np.real(array)
    dtype = np.float32 if keep_float32 and array.dtype == np.float32 else np.float64
    try:
        return np.asarray(array, dtype=dtype)
    except (TypeError, ValueError) as exc:
        hint = _NOT_NUMERIC_HINTS.get(field, "")
        raise ValueError(f"LoggedBandit: {field} must be numeric: {exc}.{hint}") from exc


#: What to do when a field's array holds strings or other objects, by field.
_NOT_NUMERIC_HINTS = {
    "contexts": (
        " For string or categorical columns, build the logs from a DataFrame with "
        "LoggedBandit.from_dataframe, which encodes them (and the policy encodes new rows)."
    ),
}


def readonly(array: np.ndarray) -> np.ndarray:
    array = np.array(array, copy=True)
    array.flags.writeable = False
    return array


def check_size(shape: tuple[int, ...]) -> None:
    if shape[0] == 0:
        raise ValueError("LoggedBandit: contexts has 0 rows; need at least one example.")
    if shape[1] == 0:
        raise ValueError(
            f"LoggedBandit: contexts has 0 features (shape {shape}); need at least one "
            f"column. Use a constant column (np.ones((n, 1))) for context-free bandits."
        )


def check_columns(wanted: list[str], available: Any, owner: str, source: str) -> None:
    """ValueError naming the ``wanted`` columns missing from ``available`` (in ``source``),
    or present more than once (a frame's ``df[name]`` is then a frame, not a column)."""
    missing = [c for c in wanted if c not in available]
    if missing:
        raise ValueError(
            f"{owner}: column(s) {missing} not in {source}. Available: {list(available)}."
        )
    counts = Counter(available)
    repeated = [c for c in dict.fromkeys(wanted) if counts[c] > 1]
    if repeated:
        raise ValueError(
            f"{owner}: column(s) {repeated} appear more than once in {source}; rename or drop "
            f"the duplicates (df.loc[:, ~df.columns.duplicated()] keeps the first)."
        )


#: Most actions: LightGBM reads the action index as a 32-bit categorical value.
MAX_ACTIONS = 2**31 - 1


def check_n_actions(n_actions: Any) -> int:
    """K as an int in [2, :data:`MAX_ACTIONS`]."""
    if isinstance(n_actions, bool) or not isinstance(n_actions, int | np.integer):
        raise ValueError(f"LoggedBandit: n_actions must be an int >= 2. Got {n_actions!r}.")
    if n_actions < 2:
        raise ValueError(
            f"LoggedBandit: n_actions must be an int >= 2. Got {n_actions!r}; a bandit "
            f"problem needs at least two actions to choose from."
        )
    if n_actions > MAX_ACTIONS:
        raise ValueError(
            f"LoggedBandit: n_actions must be at most 2**31 - 1 = {MAX_ACTIONS}. Got "
            f"{n_actions!r}; action indices are 32-bit categories to LightGBM. Number the "
            f"actions 0 .. K-1 (from_dataframe's actions= maps any ids to them)."
        )
    return int(n_actions)


#: What a context with an infinite value is told (NaN is a missing value, and allowed).
_INFINITE_FIX = (
    "Replace infinite values: NaN marks a missing value, which LightGBM learners route "
    "natively (other learners refuse it by name)."
)


def check_contexts(contexts: Any) -> Contexts:
    """(n, d) contexts as a read-only float64 array or CSR matrix (float32 input stays
    float32: half the memory, and LightGBM bins it alike); NaN is a missing value and kept;
    ValueError naming the first bad entry (an infinite value, say) otherwise."""
    if sp.issparse(contexts):
        if contexts.dtype.kind == "c":
            coo = sp.coo_matrix(contexts)
            bad = np.imag(coo.data) != 0
            k = first_index(bad) if bad.any() else 0
            raise bad_entry(
                "contexts",
                "must be real numbers",
                (int(coo.row[k]), int(coo.col[k])),
                complex(coo.data[k]),
                "Pass the real part if the imaginary parts are rounding noise.",
            )
        dtype = np.float32 if contexts.dtype == np.float32 else np.float64
        contexts = sp.csr_matrix(contexts, dtype=dtype, copy=True)
        if contexts.ndim != 2:
            raise ValueError(f"LoggedBandit: contexts must be 2-D. Got {contexts.ndim}-D.")
        check_size(contexts.shape)
        contexts.sum_duplicates()  # canonical, so the frozen arrays are never rewritten
        bad = np.isinf(contexts.data)
        if bad.any():
            k = first_index(bad)
            row = int(np.searchsorted(contexts.indptr, k, side="right") - 1)
            col = int(contexts.indices[k])
            raise bad_entry(
                "contexts", "must be finite or NaN", (row, col), float(contexts.data[k]),
                _INFINITE_FIX,
            )  # fmt: skip
        for part in (contexts.data, contexts.indices, contexts.indptr):
            part.flags.writeable = False
        return contexts
    array = as_real("contexts", contexts, keep_float32=True)
    if array.ndim != 2:
        raise ValueError(
            f"LoggedBandit: contexts must be a 2-D (n, d) array. Got shape {array.shape}; "
            f"reshape a single feature with x.reshape(-1, 1)."
        )
    check_size(array.shape)
    bad = np.isinf(array)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise bad_entry(
            "contexts", "must be finite or NaN", (int(i), int(j)), float(array[i, j]),
            _INFINITE_FIX,
        )  # fmt: skip
    return readonly(array)


def bad_propensity(propensities: np.ndarray) -> tuple[int, str] | None:
    """(first index, advice) of a propensity outside (0, 1], or None when all are in it."""
    bad = ~np.isfinite(propensities) | (propensities <= 0) | (propensities > 1)
    if not bad.any():
        return None
    i = first_index(bad)
    value = propensities[i]
    if value > 1:
        return i, (
            "Propensities are the logging policy's probabilities of the logged action, at "
            "most 1; pass those, not inverse-propensity weights, counts or scores."
        )
    if value <= 0:
        return i, (
            "Drop or re-log zero-propensity rows; propensities are probabilities of the "
            "logged action, not scores."
        )
    return i, "Drop the rows without a propensity or log it."


def check_row_fields(
    actions: Any, propensities: Any, rewards: Any, shape: tuple[int, int], n_actions: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(actions int64, propensities, rewards), each (n,), for contexts of ``shape``."""
    n = shape[0]
    actions = np.asarray(actions)
    if actions.dtype.kind == "c":
        actions = as_real("actions", actions)
    propensities = as_real("propensities", propensities)
    rewards = as_real("rewards", rewards)
    for field, arr in (("actions", actions), ("propensities", propensities), ("rewards", rewards)):
        if arr.shape != (n,):
            raise ValueError(
                f"LoggedBandit: {field} must have shape ({n},) to match contexts "
                f"{shape}. Got shape {arr.shape}."
            )
    actions = check_actions(actions, n_actions)
    bad = bad_propensity(propensities)
    if bad is not None:
        raise bad_entry(
            "propensities", "must be in (0, 1]", bad[0], float(propensities[bad[0]]), bad[1]
        )
    bad = ~np.isfinite(rewards)
    if bad.any():
        i = first_index(bad)
        raise bad_entry(
            "rewards", "must be finite", i, float(rewards[i]), "Drop or impute those rows."
        )
    return actions, propensities, rewards


def check_actions(actions: np.ndarray, n_actions: int) -> np.ndarray:
    """(n,) integer actions in [0, K) as int64."""
    if actions.dtype.kind == "f":
        bad = ~np.isfinite(actions) | (actions != np.round(actions))
        if bad.any():
            i = first_index(bad)
            raise bad_entry(
                "actions", "must be integers", i, float(actions[i]), "Encode actions as 0..K-1."
            )
    elif actions.dtype.kind not in "iu":
        raise ValueError(
            f"LoggedBandit: actions must be integers in [0, {n_actions}). Got dtype "
            f"{actions.dtype}; encode actions as 0..K-1."
        )
    # Compare before casting: values >= 2**63 (uint64, large floats) would wrap in int64.
    bad = (actions < 0) | (actions >= n_actions)
    if bad.any():
        i = first_index(bad)
        value = actions[i]
        raise bad_entry(
            "actions",
            f"must be in [0, {n_actions})",
            i,
            int(value) if actions.dtype.kind in "iu" else float(value),
            "Encode actions as 0..K-1 or raise n_actions.",
        )
    return actions.astype(np.int64)


def check_logging_probs(
    probs: np.ndarray, actions: np.ndarray, propensities: np.ndarray, n_actions: int
) -> None:
    """ValueError unless ``probs`` is (n, K), rows are distributions and the logged cells
    equal ``propensities``."""
    n, k = len(actions), n_actions
    if probs.shape != (n, k):
        raise ValueError(
            f"LoggedBandit: logging_probs must have shape ({n}, {k}). Got {probs.shape}."
        )
    bad = ~np.isfinite(probs) | (probs < 0) | (probs > 1)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise bad_entry(
            "logging_probs",
            "must be in [0, 1]",
            (int(i), int(j)),
            float(probs[i, j]),
            "Pass probabilities, not scores.",
        )
    sums = probs.sum(axis=1)
    bad = np.abs(sums - 1) > 1e-6
    if bad.any():
        i = first_index(bad)
        raise bad_entry(
            "logging_probs", "rows must sum to 1", i, float(sums[i]), "Normalise each row."
        )
    logged = probs[np.arange(n), actions]
    bad = np.abs(logged - propensities) > 1e-6
    if bad.any():
        i = first_index(bad)
        raise bad_entry(
            "propensities",
            "must equal logging_probs[i, actions[i]]",
            i,
            float(propensities[i]),
            f"logging_probs gives {float(logged[i])!r}.",
        )


# --- slates and action features (obp's position and action_context) ----------------------


def check_positions(positions: Any, n: int) -> np.ndarray:
    """(n,) integer positions >= 0 as int64 (obp's per-position convention: row i is the
    impression of ``actions[i]`` at slot ``positions[i]``)."""
    positions = np.asarray(positions)
    if positions.dtype.kind == "c":
        positions = as_real("positions", positions)
    if positions.shape != (n,):
        raise ValueError(
            f"LoggedBandit: positions must have shape ({n},) to match the rows. Got shape "
            f"{positions.shape}; pass one position per logged row, or None for one slot."
        )
    if positions.dtype.kind == "f":
        bad = ~np.isfinite(positions) | (positions != np.round(positions))
        if bad.any():
            i = first_index(bad)
            raise bad_entry(
                "positions",
                "must be integers",
                i,
                float(positions[i]),
                "Encode positions as 0..L-1 (slot 0 first).",
            )
    elif positions.dtype.kind not in "iu":
        raise ValueError(
            f"LoggedBandit: positions must be integers >= 0. Got dtype "
            f"{positions.dtype}; encode positions as 0..L-1 (slot 0 first)."
        )
    bad = (positions < 0) | (positions >= 2**31)
    if bad.any():
        i = first_index(bad)
        value = positions[i]
        raise bad_entry(
            "positions",
            "must be slot indices in [0, 2**31)",
            i,
            int(value) if positions.dtype.kind in "iu" else float(value),
            "Encode positions as 0..L-1 (slot 0 first); subtract 1 from 1-based positions.",
        )
    return positions.astype(np.int64)


def check_action_features(features: Any, n_actions: int) -> np.ndarray:
    """(n_actions, d_a) finite float64 features of the actions (obp's action_context)."""
    array = as_real("action_features", features)
    if array.ndim != 2 or array.shape[0] != n_actions or array.shape[1] == 0:
        raise ValueError(
            f"LoggedBandit: action_features must have shape ({n_actions}, d_a) with d_a >= 1, "
            f"one row per action. Got shape {array.shape}; reshape one feature with "
            f"f.reshape(-1, 1)."
        )
    bad = ~np.isfinite(array)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise bad_entry(
            "action_features",
            "must be finite",
            (int(i), int(j)),
            float(array[i, j]),
            "Impute or encode missing action features.",
        )
    return readonly(array)


def first_missing(contexts: Any) -> tuple[int, int] | None:
    """(row, column) of the first NaN (missing value) of dense or CSR ``contexts``, or None."""
    sparse = sp.issparse(contexts)
    values = contexts.data if sparse else np.asarray(contexts)
    if not values.size or not np.isnan(values.sum()):  # one pass without a temporary
        return None
    missing = np.isnan(values)
    if not missing.any():  # the sum overflowed both ways
        return None
    if sparse:
        k = first_index(missing)
        return int(np.searchsorted(contexts.indptr, k, side="right") - 1), int(contexts.indices[k])
    i, j = np.argwhere(missing)[0]
    return int(i), int(j)
