"""Validation of the Booster's parameters and of its callbacks (the progress bar ``verbose``
adds); the logs ``fit`` receives are checked in :mod:`opboost.core.booster_inputs`."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from numbers import Integral, Real
from typing import Any

import numpy as np

from opboost.api.constraints import InstanceOf, Interval, Options, Rule, Satisfies, Skip
from opboost.api.data.logged import LoggedBandit
from opboost.api.exceptions import InvalidParameterError
from opboost.core.callbacks import Callback, Progress
from opboost.core.selection import SELECTION_POLICIES

#: Initial scores F_0 (``Booster.warm_start``); "none" (or None) is F_0 = 0, the uniform
#: policy; "auto" is "reward_model" when the base learner fits its own reward model, else "none".
WARM_STARTS = ("auto", "none", "best_constant", "logging", "reward_model")

__all__ = [
    "BOOSTER_CONSTRAINTS",
    "CALLBACK_METHODS",
    "MAX_ROUNDS",
    "VERBOSE_DELAY",
    "WARM_STARTS",
    "check_callbacks",
    "check_f",
    "split_holdout",
    "with_progress",
]


def _component(kind: str) -> list[Any]:
    """A registered name of ``kind`` (checked against the registry when the booster resolves
    it, naming the known ones) or an instance of that kind."""
    article = "an" if kind[0] in "aeiou" else "a"
    return [
        InstanceOf(str, f"a registered {kind} name"),
        Satisfies(lambda v: getattr(v, "kind", None) == kind, f"{article} {kind} instance"),
    ]


def _estimator_names() -> list[str]:
    from opboost.core.registry import get_registry

    return sorted(get_registry().names("estimator"))


_PARAMS_DICT = [InstanceOf(Mapping, "a dict"), None]
_ROUNDS_FIX = "use a number of boosting rounds such as 100 (0: the start alone), or 'auto'"
#: Most boosting rounds (a fit keeps every round's tree and history): far above what a fit
#: needs (the default runs 100, early stopping fewer); n_rounds = 2**63 ran until killed
#: (issue 52).
MAX_ROUNDS = 1_000_000

#: The Booster's ``_parameter_constraints`` (:mod:`opboost.api.constraints`).
BOOSTER_CONSTRAINTS: dict[str, list[Any]] = {
    "objective": _component("objective"),
    "estimator": _component("estimator"),
    "base_learner": _component("base_learner"),
    "n_rounds": [
        Interval(Integral, 0, MAX_ROUNDS, fix=_ROUNDS_FIX),
        Options(("auto",), fix=_ROUNDS_FIX),
    ],
    "reward_shift": [
        Interval(
            Real,
            finite=True,
            fix="use a finite shift such as -0.5 (0.0 disables translation)",
        )
    ],
    "base_learner_params": _PARAMS_DICT,
    "estimator_params": _PARAMS_DICT,
    "objective_params": _PARAMS_DICT,
    "scale": [
        Interval(
            Real,
            0.0,
            None,
            closed="neither",
            finite=True,
            fix="use None to keep the base learner's scale",
        ),
        None,
    ],
    "random_state": ["random_state"],
    "learning_rate": [
        Interval(
            Real,
            0.0,
            None,
            closed="neither",
            finite=True,
            fix="use a shrinkage factor such as 0.1 (1.0 is the paper's step)",
        )
    ],
    "l2": [
        Interval(Real, 0.0, None, finite=True, fix="use 0.0 (no penalty) or a penalty such as 1e-3")
    ],
    "warm_start": [Options(WARM_STARTS), None],
    "warm_start_prob": [
        Interval(Real, 0.0, 1.0, closed="neither", fix="use a probability such as 0.5"),
        None,
        Skip(lambda p: p["warm_start"] in (None, "none"), "only the warm start uses it"),
    ],
    "validation_fraction": [
        Interval(
            Real,
            0.0,
            1.0,
            closed="neither",
            fix="use None (no selection), 'auto' or a fraction such as 0.2",
        ),
        Options(("auto",)),
        None,
    ],
    "selection": [
        Options(
            lambda: ("auto", *_estimator_names()),
            text="'auto' or a registered estimator name, one of {values}",
        )
    ],
    "selection_policy": [Options(SELECTION_POLICIES)],
    "safe": [
        "boolean",
        Rule(
            lambda p: not p["safe"] or p["validation_fraction"] is not None,
            "needs held-out logs to compare against the best constant action. Got "
            "safe={safe!r} with validation_fraction={validation_fraction!r}",
            fix="set validation_fraction=0.2 (or safe=False)",
        ),
    ],
    "refit": ["boolean"],
    "verbose": [
        Options(("auto",)),
        "boolean",
        Interval(Integral, 0, None, fix="use 0 (silent), 1 (a progress bar) or 'auto'"),
    ],
}


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


#: What a fit calls on every callback: the checkpoint it resumes from and the five hooks.
CALLBACK_METHODS = (
    "load_checkpoint",
    "on_fit_end",
    "on_fit_start",
    "on_prepare",
    "on_round_begin",
    "on_round_end",
)


def check_callbacks(callbacks: Any) -> list[Callback]:
    if isinstance(callbacks, Callback) or not isinstance(callbacks, Iterable):
        raise InvalidParameterError(
            f"Booster.fit: callbacks must be a list of opboost.core.callbacks.Callback objects. "
            f"Got {callbacks!r} ({type(callbacks).__name__}); pass e.g. "
            f"callbacks=[EarlyStopping()]."
        )
    callbacks = list(callbacks)
    for cb in callbacks:
        missing = [m for m in CALLBACK_METHODS if not callable(getattr(cb, m, None))]
        if missing:
            raise InvalidParameterError(
                f"Booster.fit: callbacks must be opboost.core.callbacks.Callback objects. Got "
                f"{cb!r}: it lacks {', '.join(missing)}; subclass Callback and override the "
                f"hooks you need."
            )
    return sorted(callbacks, key=lambda cb: getattr(cb, "order", 50))


#: Seconds a fit runs before ``Booster(verbose="auto")`` shows its progress bar.
VERBOSE_DELAY = 10.0


def with_progress(callbacks: list[Callback], verbose: int | str) -> list[Callback]:
    """``callbacks`` with the progress ``Booster(verbose=...)`` asks for: none for 0 or
    when a :class:`~opboost.core.callbacks.Progress` is there, "auto" one that shows after
    :data:`VERBOSE_DELAY` seconds on a terminal, 1 (or more) one from the start anywhere."""
    if not verbose or any(isinstance(cb, Progress) for cb in callbacks):
        return callbacks
    if verbose == "auto":
        if not sys.stderr.isatty():
            return callbacks
        bar = Progress(delay=VERBOSE_DELAY)
    else:
        bar = Progress(force=True)
    return sorted([*callbacks, bar], key=lambda cb: getattr(cb, "order", 50))


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
