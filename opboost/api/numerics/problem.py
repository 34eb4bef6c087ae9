"""A round's base-learning problem: what an objective asks a base learner to fit."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["BaseProblem"]


@dataclass(frozen=True, eq=False)
class BaseProblem:
    """One round's base-learning problem over the n x K (example, action) pairs.

    ``reduction`` "regression": fit f by weighted least squares to ``targets`` (n, K) with
    ``weights`` (n, K) >= 0. "classification": ``targets`` are +-1 labels, minimise the
    weighted 0-1 error; f takes values in {-1, +1}.
    """

    reduction: str
    targets: np.ndarray
    weights: np.ndarray
