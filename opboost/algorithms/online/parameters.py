"""The declared parameter constraints the online learners share (see
:mod:`opboost.api.constraints`); each learner's table combines these with its own."""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

from opboost.algorithms.online.scaling import CENTERS
from opboost.algorithms.online.weak_learners import BANKS
from opboost.api.constraints import InstanceOf, Interval, Options, Satisfies
from opboost.api.loss_feedback import LABEL_CONSTRAINTS

__all__ = [
    "BANDIT",
    "FKM_STEPS",
    "LOSS_LEARNER",
    "N_LEARNERS",
    "OPTIONAL_DICT",
    "STANDARDIZE",
    "WEAK_LEARNER",
]

#: ``standardize``: "auto", "mean" (the scaler's centre) or False (raw features).
_SCALING = "'auto' keeps one-hot zeros, 'mean' is river's StandardScaler, False feeds raw features"
STANDARDIZE: list[Any] = [
    Options(CENTERS, fix=_SCALING),
    Satisfies(lambda v: v is False, "False", fix=_SCALING),
]

#: Every contextual-bandit learner: K, the scaler and the seed.
BANDIT: dict[str, list[Any]] = {
    "n_actions": [
        Interval(Integral, 2, None, fix="pass the number of actions K, e.g. n_actions=10")
    ],
    "standardize": STANDARDIZE,
    "random_state": ["random_state"],
}

#: A numpy bank name or "river:<module>.<Class>" (``weak_learner``, C-OVA's ``base_learner``).
WEAK_LEARNER: list[Any] = [
    Satisfies(
        lambda v: isinstance(v, str) and (v in BANKS or v.startswith("river:")),
        f"one of {sorted(BANKS)} or 'river:<module>.<Class>'",
        fix="e.g. weak_learner='river:naive_bayes.GaussianNB'",
    )
]

OPTIONAL_DICT: list[Any] = [InstanceOf(dict, "a dict"), None]


def N_LEARNERS(fix: str) -> list[Any]:
    """``n_learners``: an int >= 1."""
    return [Interval(Integral, 1, None, fix=fix)]


#: Every loss-feedback learner: the label set, the scaler and the seed.
LOSS_LEARNER: dict[str, list[Any]] = {
    **LABEL_CONSTRAINTS,
    "standardize": STANDARDIZE,
    "random_state": ["random_state"],
}

#: Step sizes and projection radius of the (N-)FKM linear learners.
FKM_STEPS: dict[str, list[Any]] = {
    "lr": [Interval(Real, 0.0, None, closed="right", fix="the paper tunes lr in [1e-4, 0.1]")],
    "lr_decay": [Interval(Real, 0.0, 1.0, fix="the paper tunes c in [0.25, 1]")],
    "radius": [
        Interval(Real, 0.0, None, closed="right", fix="use float('inf') to disable the projection")
    ],
}
