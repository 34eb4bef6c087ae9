"""Argument checks with the project's message template, ``The 'max_weight' parameter of
TruncatedIPS must be a float > 0.0. Got -1.0 instead; use inf to disable truncation.``

Constructor parameters are declared in ``_parameter_constraints`` (``opboost.api.constraints``);
``check_scalar`` and ``check_choice`` are the same checks for one argument of a function or
method (and for components that do not declare constraints yet).
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from opboost.api.constraints import Interval, Options, validate_params
from opboost.api.exceptions import InvalidParameterError, NotFittedError

__all__ = ["check_choice", "check_fitted", "check_random_state", "check_scalar"]


def check_scalar(
    value: Any,
    name: str,
    owner: str,
    *,
    kind: type | tuple[type, ...] = numbers.Real,
    low: float | None = None,
    high: float | None = None,
    low_inclusive: bool = True,
    high_inclusive: bool = True,
    allow_none: bool = False,
    fix: str | None = None,
) -> Any:
    """Validate a scalar argument; return it unchanged or raise ``InvalidParameterError``.

    For arguments of functions and methods; constructor parameters are declared in
    ``_parameter_constraints`` instead. Same messages: this is an
    ``Interval`` check.
    """
    closed = {
        (True, True): "both",
        (True, False): "left",
        (False, True): "right",
        (False, False): "neither",
    }[(low_inclusive, high_inclusive)]
    accepted: list[Any] = [Interval(kind, low, high, closed=closed, fix=fix)]
    if allow_none:
        accepted.append(None)
    validate_params(owner, {name: accepted}, {name: value})
    return value


def check_choice(value: Any, name: str, owner: str, choices, *, fix: str | None = None) -> Any:
    """Validate that ``value`` is one of ``choices`` (an ``Options`` check)."""
    if isinstance(value, str) and value in choices:  # the usual case, checked every round
        return value
    validate_params(owner, {name: [Options(tuple(choices), fix=fix)]}, {name: value})
    return value


def check_fitted(obj: Any, attribute: str) -> None:
    """Raise ``NotFittedError`` unless ``obj`` has the fitted ``attribute``."""
    if getattr(obj, attribute, None) is None:
        raise NotFittedError(
            f"This {type(obj).__name__} instance is not fitted yet. "
            f"Call 'fit' with appropriate arguments before using this method."
        )


def check_random_state(seed: Any) -> np.random.Generator:
    """Turn ``None``, an int >= 0, or a Generator into a ``numpy.random.Generator``."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or (isinstance(seed, numbers.Integral) and seed >= 0):
        return np.random.default_rng(seed)
    raise InvalidParameterError(
        f"random_state must be None, an int >= 0 or a numpy.random.Generator. Got {seed!r} "
        f"instead; use a seed such as 0."
    )
