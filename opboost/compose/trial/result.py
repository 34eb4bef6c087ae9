"""What one trial records, and how it scores a policy: the true expected reward on the test
rows (and, with a validation split, the true reward and the SNIPS estimate there)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from opboost.api.files.atomic import json_safe
from opboost.api.numerics.arrays import one_hot
from opboost.compose.trial.trial_data import TrialData
from opboost.core.registry import make
from opboost.simulation.supervised import expected_reward

__all__ = [
    "TrialResult",
    "best_constant",
    "greedy_probs",
    "score_policy",
    "start_of",
    "validation_metrics",
]


@dataclass
class TrialResult:
    """The outcome of one trial, JSON-serialisable with :meth:`to_dict`.

    ``metrics``: scalar results (``test_reward`` always). ``curves``: lists aligned by position
    with their x-axis: ``round`` (0 is the start) with ``test_reward_round`` (up to the
    policy's last round: the best one under early stopping), ``alpha``, ``gradient_norm``, ...
    (None at round 0); ``step`` with ``progressive_reward``; ``eval_step`` with
    ``test_reward_step``. ``info``: sizes, rounds, stop reason, offline ``start``
    (:func:`start_of`; with selection ``selection``, the booster's ``selection_`` report; after
    a fallback ``action``). ``timings``: seconds (excluded from
    comparisons). ``fallback``: the offline booster's ``fallback_`` ("constant" when its safe
    selection fell back to the best constant action), else None.
    """

    label: str
    family: str
    seed: int
    candidate: int | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, float | None] = field(default_factory=dict)
    curves: dict[str, list[float | None]] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    fallback: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Every field as JSON-ready values (NaN and infinities become None)."""
        return json_safe(asdict(self))

    @classmethod
    def from_dict(cls, obj: dict[str, Any]) -> TrialResult:
        """Inverse of :meth:`to_dict`."""
        return cls(**obj)


def start_of(metadata: dict[str, Any]) -> str:
    """Which F_0 the fit of a policy with ``metadata`` started from: "none", "best_constant",
    "logging", "reward_model/trees" or "reward_model/linear+trees" (the base learner's own
    reward model, the family chosen on held-out logs) or "reward_model/distilled" (members
    distilled from a cross-fitted reward model, for other learners)."""
    start = metadata.get("warm_start")
    if start is None:
        return "none"
    if start == "reward_model":
        family = (metadata.get("reward_start") or {}).get("family")
        return f"reward_model/{family or 'distilled'}"
    return str(start)


def greedy_probs(probs: np.ndarray) -> np.ndarray:
    """The greedy policy of an (n, K) action distribution: its top actions, ties split evenly."""
    probs = np.asarray(probs, dtype=np.float64)
    top = probs >= probs.max(axis=1, keepdims=True) - 1e-12
    return top / top.sum(axis=1, keepdims=True)


def validation_metrics(data: TrialData, probs_fn: Any) -> dict[str, float]:
    """``valid_reward`` (true) and ``valid_snips`` of the policy ``probs_fn(X) -> (n, K)``."""
    if data.valid_logged is None:
        return {}
    probs = probs_fn(data.X_valid)
    return {
        "valid_reward": expected_reward(probs, data.y_valid, data.reward),
        "valid_snips": make("estimator", "snips").estimate_value(data.valid_logged, probs),
    }


def score_policy(probs_fn: Any, data: TrialData, result: TrialResult) -> None:
    """True test reward (and validation metrics) of the policy ``probs_fn(X) -> (m, K)``."""
    result.metrics["test_reward"] = expected_reward(probs_fn(data.X_test), data.y_test, data.reward)
    result.metrics.update(validation_metrics(data, probs_fn))


def best_constant(logs: Any, estimator: str) -> tuple[int, list[float]]:
    """The constant action with the best ``estimator`` value on ``logs``, and every action's
    value (the ``best_constant`` baseline)."""
    scorer, n, k = make("estimator", estimator), len(logs), logs.n_actions
    values = [float(scorer.estimate_value(logs, one_hot(np.full(n, a), k))) for a in range(k)]
    return int(np.argmax(values)), values
