"""Base class of online learners (kind "online_learner"), river style.

An online learner sees one context at a time (or a mini-batch), acts, and learns only from
the feedback its setting reveals, never from the hidden label. ``feedback`` says which
setting: "bandit" (the reward of the chosen action only) or "loss" (loss values at the
points the learner queried). Each setting refines this base with its own
``predict_one``/``learn_one`` signatures (see the modules of ``opboost.algorithms.online``).
"""

from __future__ import annotations

from abc import ABC
from typing import Any, ClassVar

import numpy as np

from opboost.api.component import Component
from opboost.api.exceptions import InvalidParameterError

__all__ = ["OnlineLearner", "as_context"]


def as_context(x: Any, n_features: int | None, owner: str) -> np.ndarray:
    """``x`` as a 1-D float64 array of length ``n_features`` (when known); else raise."""
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 1 or (n_features is not None and arr.shape[0] != n_features):
        want = f"({n_features},)" if n_features is not None else "(d,)"
        raise InvalidParameterError(
            f"{owner}: x must be a 1-D array of shape {want}. Got shape {arr.shape}; pass one "
            f"row X[i] per call, or use predict_many for a 2-D batch."
        )
    return arr


class OnlineLearner(Component, ABC):
    """Root of every online learner."""

    kind: ClassVar[str] = "online_learner"
    #: "bandit" or "loss".
    feedback: ClassVar[str] = ""
