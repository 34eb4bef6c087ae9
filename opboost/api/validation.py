"""Small parameter validator shared by every component.

scikit-learn's ``_param_validation`` is private API; this is the few lines opboost needs,
with its message template: ``The 'max_weight' parameter of TruncatedIPS must be a float > 0.
Got -1.0 instead; use inf to disable truncation.``
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from opboost.api.exceptions import InvalidParameterError, NotFittedError

__all__ = ["check_choice", "check_fitted", "check_random_state", "check_scalar"]


def _fix(fix: str | None) -> str:
    return f"; {fix}." if fix else "."


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
    """Validate a scalar parameter; return it unchanged or raise ``InvalidParameterError``."""
    if value is None and allow_none:
        return value
    kinds = kind if isinstance(kind, tuple) else (kind,)
    type_name = " or ".join(_type_name(k) for k in kinds)
    is_bool = isinstance(value, bool | np.bool_)
    if not isinstance(value, kinds) or (is_bool and bool not in kinds):
        raise InvalidParameterError(
            f"The {name!r} parameter of {owner} must be {_article(type_name)}"
            f"{' or None' if allow_none else ''}. Got {value!r} instead{_fix(fix)}"
        )
    bounds = []
    bad = False
    if low is not None:
        bounds.append(f"{'>=' if low_inclusive else '>'} {low}")
        bad |= value < low if low_inclusive else value <= low
    if high is not None:
        bounds.append(f"{'<=' if high_inclusive else '<'} {high}")
        bad |= value > high if high_inclusive else value >= high
    if bad or (isinstance(value, float) and np.isnan(value)):
        raise InvalidParameterError(
            f"The {name!r} parameter of {owner} must be {_article(type_name)} "
            f"{' and '.join(bounds)}. Got {value!r} instead{_fix(fix)}"
        )
    return value


def check_choice(value: Any, name: str, owner: str, choices, *, fix: str | None = None) -> Any:
    """Validate that ``value`` is one of ``choices``."""
    if value not in choices:
        listed = ", ".join(repr(c) for c in choices)
        raise InvalidParameterError(
            f"The {name!r} parameter of {owner} must be one of {{{listed}}}. "
            f"Got {value!r} instead{_fix(fix)}"
        )
    return value


def check_fitted(obj: Any, attribute: str) -> None:
    """Raise ``NotFittedError`` unless ``obj`` has the fitted ``attribute``."""
    if getattr(obj, attribute, None) is None:
        raise NotFittedError(
            f"This {type(obj).__name__} instance is not fitted yet. "
            f"Call 'fit' with appropriate arguments before using this method."
        )


def check_random_state(seed: Any) -> np.random.Generator:
    """Turn ``None``, an int, or a Generator into a ``numpy.random.Generator``."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or isinstance(seed, numbers.Integral):
        return np.random.default_rng(seed)
    raise InvalidParameterError(
        f"random_state must be None, an int or a numpy.random.Generator. Got {seed!r} instead."
    )


def _type_name(kind: type) -> str:
    return {numbers.Real: "float", numbers.Integral: "int", str: "str", bool: "bool"}.get(
        kind, getattr(kind, "__name__", str(kind))
    )


def _article(type_name: str) -> str:
    return ("an " if type_name[:1] in "aeiou" else "a ") + type_name
