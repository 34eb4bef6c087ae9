"""The boosting engine: a whole fit, the loop over rounds and one round (London et al. 2023,
Algorithms 1-4).

:func:`run_fit` is a fit's whole life, callbacks and checkpoints included: prepare (build the
engine), start (restore a checkpoint, prepare the learner, fit any warm start), the rounds
(:func:`run_rounds`), end (the owner sets its fitted attributes). A round asks the fit for the
gradient norm, has it fit a direction f_t, takes the closed-form step alpha_t (optionally
after rescaling f_t to ``scale``, then times ``learning_rate``) and commits
F <- F + alpha_t f_t. Where the rows live and how f_t is fitted is the engine's business
(:mod:`opboost.api.engine`): an in-memory fit (:class:`opboost.core.fit.memory.InMemoryFit`), the
warm start's distillation (:class:`opboost.core.fit.warm_start.WarmStartFit`) and a distributed fit
(``opboost.dask``) all run through :func:`run_rounds`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from opboost.api.callback import Callback, HistoryView, RoundEnv
from opboost.api.engine import BoosterEngine, Engine, StepSettings

__all__ = [
    "TOLERANCE",
    "boost_round",
    "call_hook",
    "round_env",
    "run_fit",
    "run_rounds",
]

#: Early stop when |alpha|, the gradient norm or max|f| falls below this (paper, appendix G).
TOLERANCE = 1e-10


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


def run_fit(
    make_engine: Callable[[], BoosterEngine],
    n_rounds: int,
    settings: StepSettings,
    callbacks: Sequence[Callback] = (),
    *,
    owner: Any = None,
    finish: Callable[[BoosterEngine], None] | None = None,
) -> BoosterEngine:
    """One whole fit; returns its engine. Prepare: ``on_prepare``, then ``make_engine()``
    builds the engine (designs the logs, computes the coefficients). Start: the first
    checkpoint a callback offers (``load_checkpoint``) is restored, the engine begins (the
    learner prepared, any warm start fitted), ``on_fit_start``. Rounds: :func:`run_rounds`.
    End: ``finish(engine)`` (the owner sets its fitted attributes), then ``on_fit_end``."""
    call_hook(callbacks, "on_prepare", round_env(None, owner, n_rounds, math.nan))
    fit = make_engine()
    for cb in callbacks:
        checkpoint = cb.load_checkpoint()
        if checkpoint is not None:
            fit.restore(checkpoint)
            break
    fit.begin()
    call_hook(callbacks, "on_fit_start", round_env(fit, owner, n_rounds, math.nan))
    run_rounds(fit, n_rounds, settings, callbacks, owner=owner, on_best=fit.keep_best)
    if finish is not None:
        finish(fit)
    alpha = fit.history["alpha"][-1] if fit.round else math.nan
    call_hook(callbacks, "on_fit_end", round_env(fit, owner, n_rounds, alpha))
    return fit
