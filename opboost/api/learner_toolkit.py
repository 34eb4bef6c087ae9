"""Helpers for base-learner authors (built-in and third-party alike).

Input checks and seeding shared by every learner, the weighted-least-squares fold that lets a
tree library with a custom objective fit BOPL's regression reduction (gradient ``-w*y``,
hessian ``w``, learning rate 1: every leaf is the weighted mean of its targets), and a
checksummed text format (a JSON header line, then the library's own model text) whose
checksum is verified before the library parses anything.
"""

from __future__ import annotations

import hashlib
import json
import numbers
from typing import Any

import numpy as np
import scipy.sparse as sp

from opboost.api.exceptions import InvalidParameterError
from opboost.api.learner import BaseProblem
from opboost.api.validation import check_choice, check_random_state, check_scalar

__all__ = [
    "HESSIAN_UNITS",
    "as_contexts",
    "dumps_checked",
    "learner_seed",
    "loads_checked",
    "prepare_inputs",
    "wls_terms",
]


def as_contexts(X: Any, n_features: int | None = None, *, dtype: Any = None) -> Any:
    """Contexts as a float CSR matrix or a C-contiguous float array, shape (m, d).

    float32/float64 input keeps its dtype unless ``dtype`` is given; ``n_features`` checks d.
    """
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        target = dtype or (X.dtype if X.dtype in (np.float32, np.float64) else np.float64)
        X = X.astype(target, copy=False)
    else:
        X = np.asarray(X)
        target = dtype or (X.dtype if X.dtype in (np.float32, np.float64) else np.float64)
        X = np.ascontiguousarray(X, dtype=target)
    if X.ndim != 2:
        raise InvalidParameterError(f"contexts must be a 2-D (m, d) array; got shape {X.shape}.")
    if n_features is not None and X.shape[1] != n_features:
        raise InvalidParameterError(
            f"contexts have {X.shape[1]} features but the model was fitted on {n_features}; "
            f"pass rows with the training features."
        )
    check_finite_contexts(X)
    return X


def check_finite_contexts(X: Any) -> None:
    """NaN or inf in contexts is an error, as in :class:`opboost.LoggedBandit` (fit and
    predict treat features alike: LightGBM's missing-value routing is never learnt)."""
    values = X.data if sp.issparse(X) else X
    if values.size and not np.isfinite(values.sum()) and not np.all(np.isfinite(values)):
        bad = ~np.isfinite(values)
        if sp.issparse(X):
            k = int(np.flatnonzero(bad)[0])
            index = (int(np.searchsorted(X.indptr, k, side="right") - 1), int(X.indices[k]))
        else:
            index = tuple(int(i) for i in np.argwhere(bad)[0])
        raise InvalidParameterError(
            f"contexts must be finite; index {index} has {float(values[bad][0])!r}. "
            f"Impute or drop rows with NaN or inf features."
        )


def prepare_inputs(
    owner: str, contexts: Any, n_actions: Any, init_scores: Any, *, dtype: Any = None
) -> tuple[Any, int]:
    """Validate ``prepare``'s arguments; return (contexts as :func:`as_contexts`, K)."""
    check_scalar(n_actions, "n_actions", owner, kind=numbers.Integral, low=2)
    X = as_contexts(contexts, dtype=dtype)
    shape = (X.shape[0], int(n_actions))
    if init_scores is not None and np.shape(init_scores) != shape:
        raise InvalidParameterError(
            f"{owner}.prepare: init_scores must have shape (n, K) = {shape}; "
            f"got {np.shape(init_scores)}."
        )
    return X, int(n_actions)


def learner_seed(own: Any, given: Any) -> int:
    """The learner's own ``random_state`` if set, else the one the booster passes, as an int."""
    return int(check_random_state(own if own is not None else given).integers(2**31 - 1))


#: How a learner's hessians (its minimum-hessian and L2 rules) are scaled: "mean" rescales the
#: weights to mean 1 over their nonzero entries ("typical rows"); "raw" keeps the objective's
#: weights, e.g. |r_i|/p_i, the units of XGBoost's ``min_child_weight`` in London et al.
HESSIAN_UNITS = ("mean", "raw")


def wls_terms(
    owner: str,
    problem: BaseProblem,
    shape: tuple[int, int],
    out: np.ndarray | None = None,
    *,
    hessian_units: str = "mean",
) -> tuple[np.ndarray, float] | None:
    """Check a regression problem; return (w*y, scale) or None when every weight is 0.

    With ``hessian_units="mean"`` ``scale`` rescales the weights to mean 1 over their nonzero
    entries (the weighted least-squares solution does not change; the library's
    minimum-hessian rules stay meaningful); with ``"raw"`` it is 1. A custom objective then
    passes gradient ``-scale*w*y`` and hessian ``scale*w``. ``out`` (n, K) receives w*y if
    given.
    """
    check_choice(hessian_units, "hessian_units", owner, HESSIAN_UNITS)
    if problem.reduction != "regression":
        raise InvalidParameterError(
            f"{owner} solves the 'regression' reduction; got {problem.reduction!r}. "
            f"Use a classification learner (e.g. sklearn_stump) for that objective."
        )
    y, w = problem.targets, problem.weights
    if np.shape(y) != shape or np.shape(w) != shape:
        raise InvalidParameterError(
            f"{owner}.fit_round: targets and weights must have shape (n, K) = {shape}; "
            f"got {np.shape(y)} and {np.shape(w)}."
        )
    work = np.multiply(w, y, out=out)
    total_w, n_pos = float(np.sum(w)), int(np.count_nonzero(w))
    if not (np.isfinite(total_w) and np.isfinite(np.sum(work))) or np.min(w) < 0:
        raise InvalidParameterError(
            f"{owner}.fit_round: weights must be finite and >= 0 and targets finite."
        )
    if n_pos == 0:
        return None
    return work, (n_pos / total_w if hessian_units == "mean" else 1.0)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def dumps_checked(format: str, header: dict[str, Any], body: str) -> str:
    """One JSON header line (``format``, ``header`` and the body's SHA-256), then ``body``."""
    return json.dumps({"format": format, **header, "sha256": _sha256(body)}) + "\n" + body


def loads_checked(text: Any, format: str, owner: str) -> tuple[dict[str, Any], str]:
    """Inverse of :func:`dumps_checked`: (header, body); ValueError on foreign or edited text."""
    if not isinstance(text, str):
        raise ValueError(f"{owner}.loads expects str, got {type(text).__name__}.")
    first, _, body = text.partition("\n")
    try:
        header = json.loads(first)
    except json.JSONDecodeError:
        header = None
    if not isinstance(header, dict) or header.get("format") != format:
        raise ValueError(
            f"Not a {format} ensemble: the first line must be a JSON header with "
            f"format={format!r}; got {first[:80]!r}. Load it with the learner that saved it."
        )
    if header.get("sha256") != _sha256(body):
        raise ValueError(
            f"Corrupted {format} text: the model part does not match the SHA-256 in its header "
            f"(truncated or edited); save the ensemble again."
        )
    return header, body
