"""The boosting engine: one round and the loop over rounds (London et al. 2023, Algorithms 1-4).

A round asks the fit for the gradient norm, has it fit a direction f_t, takes the closed-form
step alpha_t (optionally after rescaling f_t to ``scale``, then times ``learning_rate``) and
commits F <- F + alpha_t f_t. Where the rows live and how f_t is fitted is the fit's business:
an in-memory fit (:class:`opboost.fit.memory.InMemoryFit`), the warm start's distillation
(:class:`opboost.fit.warm_start.WarmStartFit`) and a distributed fit (``opboost.dask``) all
implement :class:`Engine` and run through :func:`run_rounds`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from opboost.api.callback import Callback, HistoryView, RoundEnv

__all__ = [
    "TOLERANCE",
    "BoosterEngine",
    "Direction",
    "Engine",
    "FitSettings",
    "RemoteLogs",
    "StepSettings",
    "boost_round",
    "call_hook",
    "round_env",
    "run_rounds",
]

#: Early stop when |alpha|, the gradient norm or max|f| falls below this (paper, appendix G).
TOLERANCE = 1e-10


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
    """A fitted f_t, as the engine sees it: only its largest absolute value."""

    max_abs: float


class Engine(Protocol):
    """A fit the engine loop can drive.

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
        """Fit this round's f_t (held until :meth:`commit` or :meth:`discard`)."""

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
    """An engine a Booster fits with: also the fitted policy, the extra fitted attributes it
    sets on the Booster, and ``keep_best`` (a callback marked the round just committed)."""

    def policy(self) -> Any:
        """The fitted :class:`opboost.policy.Policy`."""

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
        components: tuple[Any, Any, Any],
        settings: FitSettings,
        *,
        eval_data: Any = None,
        callbacks: Sequence[Callback] = (),
    ) -> BoosterEngine:
        """An engine for these logs (raise naming any setting it does not support)."""


def boost_round(fit: Engine, settings: StepSettings) -> float | None:
    """One boosting round; returns alpha, or None after setting ``fit.stop_reason``."""
    t = fit.round + 1
    grad_norm = fit.gradient_norm()
    if grad_norm < TOLERANCE:
        fit.stop_reason = f"gradient norm < {TOLERANCE:g} at round {t}"
        return None
    direction = fit.fit_direction()
    if direction.max_abs < TOLERANCE:
        fit.discard(direction)
        fit.stop_reason = f"max|f| < {TOLERANCE:g} at round {t}"
        return None
    factor = 1.0
    if settings.scale is not None:
        current = fit.step_denominator(direction) / fit.n
        factor = math.sqrt(settings.scale / current) if current > 0 else 1.0
    alpha = fit.step(direction, factor, float(settings.l2)) * float(settings.learning_rate)
    if not abs(alpha) >= TOLERANCE:
        fit.discard(direction)
        fit.stop_reason = f"|alpha| < {TOLERANCE:g} at round {t}"
        return None
    fit.commit(direction, alpha * factor, alpha=alpha, gradient_norm=grad_norm)
    return alpha


def round_env(fit: Engine | None, owner: Any, n_rounds: int, alpha: float) -> RoundEnv:
    """What callbacks see of ``fit`` after its last committed round; with ``fit`` None, what
    they see before the fit is prepared (no round, no metrics, no snapshot)."""
    if fit is None:
        return RoundEnv(owner, 0, n_rounds, float(alpha), {}, {})
    return RoundEnv(
        booster=owner,
        round=fit.round,
        n_rounds=n_rounds,
        alpha=float(alpha),
        train_metrics=dict(fit.train_metrics),
        eval_metrics=dict(fit.eval_metrics),
        history=HistoryView(fit.history),
        snapshot=fit.snapshot,
    )


def call_hook(callbacks: Sequence[Callback], hook: str, env: RoundEnv) -> None:
    """Call every callback's ``hook`` (``"on_prepare"``, ``"on_fit_start"``, ...) with ``env``."""
    for cb in callbacks:
        getattr(cb, hook)(env)


def run_rounds(
    fit: Engine,
    n_rounds: int,
    settings: StepSettings,
    callbacks: Sequence[Callback] = (),
    *,
    owner: Any = None,
    on_best: Callable[[], None] | None = None,
) -> None:
    """Boost until ``n_rounds`` rounds are committed, a round stops the fit, or a callback asks
    to stop (before a round or after one). ``owner`` (the Booster) is what callbacks see as
    ``env.booster``; ``on_best`` is called when a callback marks the round just committed as
    the best so far (``env.mark_best()``)."""
    while fit.stop_reason is None:
        if fit.round >= n_rounds:
            fit.stop_reason = "n_rounds reached"
            break
        if callbacks:
            before = round_env(fit, owner, n_rounds, float("nan"))
            call_hook(callbacks, "on_round_begin", before)
            if before.stop_requests:
                fit.stop_reason = before.stop_requests[0]
                break
        alpha = boost_round(fit, settings)
        if alpha is None:
            break
        if callbacks:
            env = round_env(fit, owner, n_rounds, alpha)
            call_hook(callbacks, "on_round_end", env)
            if env.marked_best and on_best is not None:
                on_best()
            if env.stop_requests and fit.stop_reason is None:
                fit.stop_reason = env.stop_requests[0]
