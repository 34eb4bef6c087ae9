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

from opboost.api.exceptions import InvalidParameterError
from opboost.api.learner import BaseProblem
from opboost.api.numerics.contexts import as_contexts
from opboost.api.numerics.row_blocks import RowWeightedProblem, row_blocks
from opboost.api.validation import check_choice, check_random_state, check_scalar

__all__ = [
    "HESSIAN_UNITS",
    "as_contexts",
    "dumps_checked",
    "learner_seed",
    "loads_checked",
    "prepare_inputs",
    "wls_gradients",
    "wls_terms",
]


def prepare_inputs(
    owner: str,
    contexts: Any,
    n_actions: Any,
    init_scores: Any,
    *,
    dtype: Any = None,
    missing: bool = False,
) -> tuple[Any, int]:
    """Validate ``prepare``'s arguments; return (contexts as ``as_contexts``, K)."""
    check_scalar(n_actions, "n_actions", owner, kind=numbers.Integral, low=2)
    X = as_contexts(contexts, dtype=dtype, missing=missing)
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


def _check_regression(
    owner: str, problem: BaseProblem, shape: tuple[int, int], hessian_units: str
) -> None:
    """Raise unless ``problem`` is a regression problem of (n, K) = ``shape``."""
    check_choice(hessian_units, "hessian_units", owner, HESSIAN_UNITS)
    if problem.reduction != "regression":
        raise InvalidParameterError(
            f"{owner} solves the 'regression' reduction; got {problem.reduction!r}. "
            f"Use a classification learner (e.g. sklearn_stump) for that objective."
        )
    if isinstance(problem, RowWeightedProblem):
        shapes = (problem.shape, problem.shape)
    else:
        shapes = (np.shape(problem.targets), np.shape(problem.weights))
    if shapes != (shape, shape):
        raise InvalidParameterError(
            f"{owner}.fit_round: targets and weights must have shape (n, K) = {shape}; "
            f"got {shapes[0]} and {shapes[1]}."
        )


def _bad_values(owner: str) -> InvalidParameterError:
    return InvalidParameterError(
        f"{owner}.fit_round: weights must be finite and >= 0 and targets finite."
    )


def _weight_scale(
    owner: str, total_w: float, n_pos: int, lowest: float, hessian_units: str
) -> float | None:
    """The hessian scale of weights of sum ``total_w`` with ``n_pos`` nonzero entries and
    minimum ``lowest`` (see ``wls_terms``); None when every weight is 0. Raises unless
    the weights are finite and >= 0."""
    if not np.isfinite(total_w) or lowest < 0:
        raise _bad_values(owner)
    if n_pos == 0:
        return None
    return n_pos / total_w if hessian_units == "mean" else 1.0


def _weight_stats(w: np.ndarray) -> tuple[float, int, float]:
    """(sum, count of nonzero entries, minimum) of an array of weights."""
    return float(np.sum(w)), int(np.count_nonzero(w)), float(np.min(w))


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
    given. ``wls_gradients`` writes those float32 gradients without (n, K) temporaries.
    """
    _check_regression(owner, problem, shape, hessian_units)
    w = problem.weights
    work = np.multiply(w, problem.targets, out=out)
    scale = _weight_scale(owner, *_weight_stats(w), hessian_units)
    if not np.isfinite(np.sum(work)):
        raise _bad_values(owner)
    return None if scale is None else (work, scale)


def wls_gradients(
    owner: str,
    problem: BaseProblem,
    grad: np.ndarray,
    hess: np.ndarray,
    factors: np.ndarray,
    *,
    scratch: np.ndarray,
    hessian_units: str = "mean",
) -> bool:
    """Write a regression problem's gradient ``-s_a w y`` and hessian ``s_a w`` into the
    float32 (n, K) arrays (or views) ``grad`` and ``hess``, s_a = scale * ``factors[a]``
    with the scale of ``wls_terms``; False when every weight is 0 (nothing to fit).

    The values are bit for bit those of the same products on ``wls_terms``'s output,
    but w*y exists only a block of rows at a time. ``scratch`` (n, K) float64 receives the
    weights of a ``RowWeightedProblem`` (which keeps one per
    row), so that their sum is numpy's sum of the (n, K) weights, as in wls_terms; it is
    read before ``grad`` and ``hess`` are written, so it may share their memory.
    """
    shape = grad.shape
    _check_regression(owner, problem, shape, hessian_units)
    if isinstance(problem, RowWeightedProblem):
        row_w = problem.row_weights  # summed as the (n, K) weights; counted, min per row
        total = float(np.sum(problem.weights_into(scratch)))
        stats = total, int(np.count_nonzero(row_w)) * shape[1], float(np.min(row_w))
        weight_rows = row_w[:, None].__getitem__  # (m, 1) blocks: the same values
        target_rows = problem.target_rows
    else:
        w, targets = np.asarray(problem.weights), np.asarray(problem.targets)
        stats = _weight_stats(w)
        weight_rows, target_rows = w.__getitem__, targets.__getitem__
    scale = _weight_scale(owner, *stats, hessian_units)
    s = (1.0 if scale is None else scale) * np.asarray(factors, dtype=np.float64)
    finite = True
    for rows in row_blocks(*shape):
        w = weight_rows(rows)
        work = np.multiply(w, target_rows(rows))
        finite = finite and bool(np.isfinite(np.sum(work)))
        np.multiply(work, -s, out=grad[rows], casting="same_kind")
        np.multiply(w, s, out=hess[rows], casting="same_kind")
    if not finite:
        raise _bad_values(owner)
    return scale is not None


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def dumps_checked(format: str, header: dict[str, Any], body: str) -> str:
    """One JSON header line (``format``, ``header`` and the body's SHA-256), then ``body``."""
    return json.dumps({"format": format, **header, "sha256": _sha256(body)}) + "\n" + body


def loads_checked(text: Any, format: str, owner: str) -> tuple[dict[str, Any], str]:
    """Inverse of ``dumps_checked``: (header, body); ValueError on foreign or edited text."""
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
