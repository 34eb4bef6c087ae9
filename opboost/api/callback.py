"""The fit callback interface (kind "callback") and what a callback sees of a fit.

A callback is a [`Callback`][opboost.api.callback.Callback] with an ``order`` (lower runs first) and
hooks that each receive a frozen [`RoundEnv`][opboost.api.callback.RoundEnv]. Callbacks never get
the loop's locals and never raise to stop: they call ``env.request_stop(reason)``, and the first
reason becomes the booster's ``stop_reason_``. The engine never sets attributes on callbacks; each
callback resets its own state in ``on_fit_start``. The built-in callbacks are in
[`opboost.core.callbacks`][opboost.core.callbacks].
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from opboost.api.component import Component

__all__ = ["FIT_METRICS", "Callback", "HistoryView", "RoundEnv"]

#: The metrics a fit records each round (``RoundEnv.metrics``, ``Booster.history_``): the step
#: and the gradient norm; the objective and IPS value on the training logs; IPS and SNIPS of
#: the softmax and argmax policies on ``eval_data``; the held-out selection's estimate.
FIT_METRICS = (
    "alpha",
    "gradient_norm",
    "train_objective",
    "train_value",
    "eval_ips_softmax",
    "eval_snips_softmax",
    "eval_ips_argmax",
    "eval_snips_argmax",
    "select_value",
    "select_low",
    "select_high",
)


class HistoryView(Mapping):
    """Read-only view of the metrics recorded so far: name -> (rounds,) array."""

    def __init__(self, history: Mapping[str, list[float]]):
        self._history = history

    def __getitem__(self, key: str) -> np.ndarray:
        return np.asarray(self._history[key], dtype=np.float64)

    def __iter__(self) -> Iterator[str]:
        return iter(self._history)

    def __len__(self) -> int:
        return len(self._history)


@dataclass(frozen=True)
class RoundEnv:
    """What a callback sees: the booster, the rounds done so far and this round's metrics.

    ``round`` counts completed rounds (1-based after the first round; at ``on_fit_start`` it
    is 0, or the checkpoint's round when resuming). ``alpha`` is NaN before the first round.
    ``history`` maps metric names to arrays over the rounds so far. ``snapshot`` returns the
    fit state a checkpoint stores.
    """

    booster: Any
    round: int
    n_rounds: int
    alpha: float
    train_metrics: Mapping[str, float]
    eval_metrics: Mapping[str, float]
    history: Mapping[str, np.ndarray] = field(default_factory=dict)
    snapshot: Callable[[], dict[str, Any]] | None = field(default=None, repr=False)
    _stop: list[str] = field(default_factory=list, repr=False)
    _best: list[bool] = field(default_factory=list, repr=False)

    @property
    def metrics(self) -> dict[str, float]:
        """Train and eval metrics of this round in one mapping."""
        return {**self.train_metrics, **self.eval_metrics}

    def request_stop(self, reason: str) -> None:
        """Ask the booster to stop (after this round, or before the next one when called from
        ``on_round_begin``); ``reason`` becomes ``stop_reason_``."""
        self._stop.append(str(reason))

    def mark_best(self) -> None:
        """Mark the policy after this round as the best so far: the fitted policy ends at the
        last marked round (as LightGBM's early stopping keeps its best iteration)."""
        self._best.append(True)

    @property
    def stop_requests(self) -> tuple[str, ...]:
        """The reasons given to [`request_stop`][opboost.api.callback.RoundEnv.request_stop], first
        first."""
        return tuple(self._stop)

    @property
    def marked_best(self) -> bool:
        """Whether a callback called [`mark_best`][opboost.api.callback.RoundEnv.mark_best] on this
        round."""
        return bool(self._best)


class Callback(Component):
    """Base class of fit callbacks. Override any of the five hooks."""

    kind: ClassVar[str] = "callback"
    #: Callbacks run in increasing order; ties keep the order given to ``fit``.
    order: ClassVar[int] = 50
    #: Whether this callback writes checkpoints (``env.snapshot()``); fits whose state lives
    #: elsewhere (a Dask cluster) refuse such callbacks up front.
    writes_checkpoints: ClassVar[bool] = False
    #: Whether this callback chooses where the fit's rounds end (early stopping): a
    #: ``Booster(validation_fraction="auto")`` then leaves the rounds to it.
    chooses_rounds: ClassVar[bool] = False

    def load_checkpoint(self) -> dict[str, Any] | None:
        """The checkpoint a fit should resume from (read before ``on_fit_start``), or None."""
        return None

    def on_prepare(self, env: RoundEnv) -> None:
        """Called once when a fit begins, before the logs are designed for the base learner
        and any warm start is fitted (a reward-model start on large logs takes minutes):
        ``env.round`` is 0, there are no metrics and no snapshot yet."""

    def on_fit_start(self, env: RoundEnv) -> None:
        """Called once before the first round (after the warm start and restoring a
        checkpoint)."""

    def on_round_begin(self, env: RoundEnv) -> None:
        """Called before every round (``env.alpha`` is NaN; ``env.round`` rounds are done)."""

    def on_round_end(self, env: RoundEnv) -> None:
        """Called after every committed round."""

    def on_fit_end(self, env: RoundEnv) -> None:
        """Called once after the last round, with the booster's fitted attributes set."""
