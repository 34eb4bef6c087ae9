"""The engine extension point: what one boosting fit is to the loop that runs it.

An engine holds the state of one fit: where the rows live and how f_t is fitted on them. The
core runs every engine through one function (``opboost.core.loop.run_fit``: prepare, start,
rounds, end) and one round (``boost_round``): the in-memory fit, the warm start's
distillation and a fit on a cluster (``opboost.dask``) all implement
[`Engine`][opboost.api.engine.Engine]. Logs that live elsewhere
([`RemoteLogs`][opboost.api.engine.RemoteLogs]) build their own engine from the resolved
[`Components`][opboost.api.engine.Components] and the
[`FitSettings`][opboost.api.engine.FitSettings]; what such an engine needs besides this module is in
the SDK too: the data checks (``opboost.api.data.logged.check_data``) and what a fitted policy
records ([`opboost.api.fit_metadata`][opboost.api.fit_metadata]).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

import numpy as np

from opboost.api.callback import Callback

if TYPE_CHECKING:
    from opboost.api.estimator import Estimator
    from opboost.api.learner import BaseLearner
    from opboost.api.objective import Objective
    from opboost.api.policy import Policy

__all__ = [
    "BoosterEngine",
    "Components",
    "Direction",
    "Engine",
    "FitSettings",
    "Fitted",
    "RemoteLogs",
    "StepSettings",
]


class Components(NamedTuple):
    """The components of one fit, resolved from the Booster's parameters and checked to fit
    together (``Booster.resolve_components``)."""

    objective: Objective
    estimator: Estimator
    learner: BaseLearner


@dataclass(frozen=True)
class StepSettings:
    """How a round turns a direction into a step: ``scale`` Z rescales f_t so that
    (1/n) sum |c_i| sigma_i ||f_t(x_i)||^2 = Z (None keeps it), ``l2`` penalises alpha^2, and
    ``learning_rate`` nu shrinks the step."""

    scale: float | None = None
    l2: float = 0.0
    learning_rate: float = 1.0


@dataclass(frozen=True)
class FitSettings:
    """The Booster's settings one fit runs with (the engine keeps no Booster reference).

    ``seed`` is the fit's integer seed (drawn once from ``random_state``); ``reward_shift``
    delta is added to every reward before the coefficients; ``warm_start`` and
    ``warm_start_prob`` choose F_0; ``validation_fraction`` is the held-out share (None: no
    label-free selection); ``step`` the step settings.
    """

    seed: int
    reward_shift: float = 0.0
    warm_start: str | None = None
    warm_start_prob: float = 0.5
    validation_fraction: float | None = None
    step: StepSettings = StepSettings()

    @property
    def scale(self) -> float | None:
        return self.step.scale

    @property
    def learning_rate(self) -> float:
        return self.step.learning_rate

    @property
    def l2(self) -> float:
        return self.step.l2


class Direction(Protocol):
    """A fitted f_t, as the loop sees it: only its largest absolute value."""

    max_abs: float


@dataclass(frozen=True, eq=False)
class Fitted:
    """A direction held in memory: f_t on the training rows, (n, K), and max |f_t|."""

    values: np.ndarray
    max_abs: float


class Engine(Protocol):
    """A fit the loop can drive round by round.

    ``round`` counts committed rounds; ``stop_reason`` is None while the fit may go on;
    ``n`` is the number of training rows. ``train_metrics`` and ``eval_metrics`` are the last
    committed round's metrics; ``history`` maps metric names to per-round lists.
    """

    round: int
    stop_reason: str | None
    n: int
    train_metrics: Mapping[str, float]
    eval_metrics: Mapping[str, float]
    history: Mapping[str, list[float]]

    def gradient_norm(self) -> float:
        """||grad R(F)|| at the current scores."""

    def fit_direction(self) -> Direction:
        """Fit this round's f_t (held until [`commit`][opboost.api.engine.Engine.commit] or
        [`discard`][opboost.api.engine.Engine.discard])."""

    def step_denominator(self, direction: Direction) -> float:
        """sum_i |c_i| sigma_i ||f_t(x_i)||^2 (used to rescale f_t to ``scale``)."""

    def step(self, direction: Direction, factor: float, l2: float) -> float:
        """The closed-form step for ``factor * f_t`` with penalty ``l2``."""

    def discard(self, direction: Direction) -> None:
        """Drop f_t: the round is not committed."""

    def commit(self, direction: Direction, weight: float, **metrics: float) -> None:
        """F <- F + weight f_t; record ``metrics`` and the round's own."""

    def snapshot(self) -> dict[str, Any]:
        """What a checkpoint stores (raise if the fit cannot be checkpointed)."""


class BoosterEngine(Engine, Protocol):
    """An engine a Booster fits with, through its whole life: built (prepare), maybe
    restored from a checkpoint, begun (start), boosted (rounds), and read (end)."""

    def restore(self, checkpoint: Mapping[str, Any]) -> None:
        """Continue from ``checkpoint`` (what a callback's ``load_checkpoint`` returned);
        raise naming the fix if this fit cannot resume."""

    def begin(self) -> None:
        """Get ready for round 1: prepare the learner and fit any warm start."""

    def policy(self) -> Policy:
        """The fitted [`Policy`][opboost.api.policy.Policy]."""

    def fitted_attributes(self) -> dict[str, Any]:
        """Extra fitted attributes (name ending in ``_`` -> value) for the Booster."""

    def keep_best(self) -> None:
        """Remember the policy as of the round just committed as the best so far."""


@runtime_checkable
class RemoteLogs(Protocol):
    """Logs that live elsewhere and fit through an engine of their own (``opboost.dask``'s
    DaskLoggedBandit). ``Booster.fit`` resolves the components and settings, calls
    ``make_engine`` and runs the same loop; the logs validate what they cannot support."""

    n_features: int

    def make_engine(
        self,
        components: Components,
        settings: FitSettings,
        *,
        eval_data: Any = None,
        callbacks: Sequence[Callback] = (),
    ) -> BoosterEngine:
        """An engine for these logs (raise naming any setting it does not support)."""
