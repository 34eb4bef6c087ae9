"""Validation of the Booster's parameters and of what ``fit`` receives."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from opboost._validation import check_scalar
from opboost.callbacks import Callback
from opboost.data import LoggedBandit
from opboost.exceptions import InvalidParameterError

#: Initial scores F_0 (``Booster.warm_start``); None is F_0 = 0, the uniform policy.
WARM_STARTS = ("best_constant", "logging", "reward_model")

__all__ = [
    "WARM_STARTS",
    "check_callbacks",
    "check_data",
    "check_f",
    "check_regularisation",
    "split_holdout",
]


def check_regularisation(b: Any) -> None:
    """Validate the regularisation and selection parameters of ``b``."""
    from opboost._validation import check_choice

    for name, positive, fix in (
        ("learning_rate", True, "use a shrinkage factor such as 0.1 (1.0 is the paper's step)"),
        ("l2", False, "use 0.0 (no penalty) or a penalty such as 1e-3"),
    ):
        value = getattr(b, name)
        check_scalar(value, name, "Booster", low=0.0, low_inclusive=not positive, fix=fix)
        if not math.isfinite(value):
            raise InvalidParameterError(
                f"The {name!r} parameter of Booster must be finite. Got {value!r} instead; {fix}."
            )
    if b.warm_start is not None:
        check_choice(b.warm_start, "warm_start", "Booster", WARM_STARTS)
        check_scalar(
            b.warm_start_prob,
            "warm_start_prob",
            "Booster",
            low=0.0,
            high=1.0,
            low_inclusive=False,
            high_inclusive=False,
            fix="use a probability such as 0.5",
        )
    check_scalar(
        b.validation_fraction,
        "validation_fraction",
        "Booster",
        low=0.0,
        high=1.0,
        low_inclusive=False,
        high_inclusive=False,
        allow_none=True,
        fix="use None (no selection) or a fraction such as 0.2",
    )
    if not isinstance(b.selection, str):
        raise InvalidParameterError(
            f"The 'selection' parameter of Booster must be an estimator name such as 'snips'. "
            f"Got {b.selection!r} instead."
        )
    from opboost.registry import get_registry

    known = get_registry().names("estimator")
    if b.selection not in known:
        raise InvalidParameterError(
            f"The 'selection' parameter of Booster must be a registered estimator name, one of "
            f"{', '.join(sorted(known))}. Got {b.selection!r} instead."
        )
    from opboost.selection import SELECTION_POLICIES

    check_choice(b.selection_policy, "selection_policy", "Booster", SELECTION_POLICIES)
    for name in ("safe", "refit"):
        value = getattr(b, name)
        if not isinstance(value, bool | np.bool_):
            raise InvalidParameterError(
                f"The {name!r} parameter of Booster must be True or False. Got {value!r} instead."
            )
    if b.safe and b.validation_fraction is None:
        raise InvalidParameterError(
            "The 'safe' parameter of Booster needs held-out logs to compare against the best "
            "constant action. Got safe=True with validation_fraction=None; set "
            "validation_fraction=0.2 (or safe=False)."
        )


def split_holdout(
    data: LoggedBandit, fraction: float, seed: int
) -> tuple[LoggedBandit, LoggedBandit]:
    """(train, holdout) with ``fraction`` of the rows held out, seeded."""
    try:
        return data.split(fraction, random_state=np.random.default_rng([seed, 1]))
    except ValueError as exc:
        raise InvalidParameterError(
            f"The 'validation_fraction' parameter of Booster: {exc} Use a fraction that leaves "
            f"rows on both sides."
        ) from exc


def check_data(data: Any, name: str) -> None:
    if not isinstance(data, LoggedBandit):
        raise InvalidParameterError(
            f"Booster.fit: {name} must be an opboost.LoggedBandit. Got {type(data).__name__}; "
            f"build one with LoggedBandit(contexts=..., actions=..., propensities=..., "
            f"rewards=..., n_actions=...)."
        )


def check_callbacks(callbacks: Any) -> list[Callback]:
    callbacks = list(callbacks)
    for cb in callbacks:
        if not all(
            callable(getattr(cb, m, None)) for m in ("on_fit_start", "on_round_end", "on_fit_end")
        ):
            raise InvalidParameterError(
                f"Booster.fit: callbacks must be opboost.callbacks.Callback objects. Got "
                f"{cb!r}; subclass Callback and override on_round_end."
            )
    return sorted(callbacks, key=lambda cb: getattr(cb, "order", 50))


def check_f(f_values: Any, shape: tuple[int, int], learner: Any) -> np.ndarray:
    f_values = np.asarray(f_values, dtype=np.float64)
    # The sum is finite only if every entry is (short of overflow, itself worth an error);
    # one pass and no (n, K) temporary on the per-round path.
    if f_values.shape != shape or not np.isfinite(np.sum(f_values)):
        raise InvalidParameterError(
            f"Base learner {learner.name!r} returned predictions of shape {f_values.shape} "
            f"(finite: {bool(np.all(np.isfinite(f_values)))}); fit_round must return finite "
            f"values of shape {shape}."
        )
    return f_values
