"""Result records of online runs: plain dataclasses that serialise to JSON."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["BanditRunResult"]


@dataclass
class BanditRunResult:
    """Outcome of :func:`opboost.algorithms.online.run_bandit` on one ordering of one data set.

    ``error_rate`` is the progressive (predict-then-learn) error: the fraction of steps whose
    chosen action did not get the row's best reward. ``greedy_error_rate`` is the same for
    the learner's greedy prediction before exploration (``greedy_action_one``), or None if
    the learner does not report it. ``curve_steps``/``curve_error`` sample
    the running error rate at about 100 evenly spaced steps.
    """

    learner: str
    params: dict[str, Any]
    n_examples: int
    n_passes: int
    error_rate: float
    mean_reward: float
    seconds: float
    examples_per_second: float
    seed: int | None
    curve_steps: list[int] = field(default_factory=list)
    curve_error: list[float] = field(default_factory=list)
    greedy_error_rate: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict of every field."""
        return asdict(self)
