"""Run a loss-feedback online learner over a data stream with progressive validation.

Progressive validation (Blum, Kalai & Langford 1999): each example is first used to score
the current prediction, then to learn. The score is the *noiseless* loss of the prediction
``ŷ_t``; the learner sees only what its ``information`` allows (noisy loss values at its
queried points, or the revealed loss for full-information baselines). Brukhim & Hazan
(2021, §4) tune on the progressive loss of the first half of the stream and report the
progressive loss on the second half: ``evaluate_from=0.5``.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from opboost.api.exceptions import InvalidParameterError
from opboost.api.loss_feedback import LossFeedbackLearner
from opboost.api.validation import check_random_state, check_scalar
from opboost.simulation.loss_environment import LossEnvironment

__all__ = ["LossRunResult", "run_loss_feedback"]


@dataclass
class LossRunResult:
    """Outcome of :func:`run_loss_feedback`. ``to_dict`` is JSON-serialisable.

    ``progressive_loss`` is the mean noiseless loss of the predictions on the evaluated
    rounds (``t >= evaluate_from * n``); ``curve_t``/``curve_loss`` give the running mean
    of the evaluated rounds at about ``n_curve_points`` rounds.
    """

    learner: str
    loss: str
    noise: float
    seed: int | None
    n_examples: int
    n_evaluated: int
    evaluate_from: float
    progressive_loss: float
    n_queries: int
    seconds: float
    curve_t: list[int] = field(default_factory=list)
    curve_loss: list[float] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict of JSON types (parameters rendered with ``repr`` when not JSON)."""
        out = asdict(self)
        out["params"] = {
            k: v if isinstance(v, int | float | str | bool | type(None)) else repr(v)
            for k, v in self.params.items()
        }
        return out


def run_loss_feedback(
    learner: LossFeedbackLearner,
    X: np.ndarray,
    Y: np.ndarray,
    *,
    loss: str = "squared",
    noise: float = 0.1,
    random_state: int | None = None,
    shuffle: bool = False,
    evaluate_from: float = 0.0,
    n_curve_points: int = 100,
) -> LossRunResult:
    """Stream ``X`` (n, d) with hidden labels ``Y`` (n,) or (n, m) through ``learner``.

    Parameters
    ----------
    learner
        a :class:`LossFeedbackLearner`; learns in place (its own ``random_state``
        seeds its exploration).
    loss, noise
        the environment's convex loss and the half-width of its uniform noise.
    random_state
        seed of the noise and of the shuffling.
    shuffle
        stream the rows in a seeded random order (one "run" of the paper).
    evaluate_from
        fraction of the stream after which predictions are scored (0.5 = the
        paper's "progressive validation on the second half").
    n_curve_points
        about how many points of the running-mean loss curve to keep.
    """
    if not isinstance(learner, LossFeedbackLearner):
        raise InvalidParameterError(
            f"run_loss_feedback: learner must be a LossFeedbackLearner. Got "
            f"{type(learner).__name__}; bandit learners run with run_bandit."
        )
    check_scalar(
        evaluate_from,
        "evaluate_from",
        "run_loss_feedback",
        low=0.0,
        high=1.0,
        high_inclusive=False,
        fix="use 0.5 for the second half",
    )
    check_scalar(n_curve_points, "n_curve_points", "run_loss_feedback", kind=int, low=1)
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    if X.ndim != 2 or Y.shape[0] != X.shape[0]:
        raise InvalidParameterError(
            f"run_loss_feedback: X must be (n, d) and Y (n,) or (n, m) with the same n. Got "
            f"X {X.shape} and Y {Y.shape}."
        )
    rng = check_random_state(random_state)
    order = rng.permutation(X.shape[0]) if shuffle else np.arange(X.shape[0])
    X, Y = X[order], Y[order]
    env = LossEnvironment(Y, loss=loss, noise=noise, random_state=rng)
    if env.n_outputs != learner.n_outputs:
        raise InvalidParameterError(
            f"run_loss_feedback: labels have m={env.n_outputs} outputs but the learner has "
            f"n_outputs={learner.n_outputs}; set n_outputs={env.n_outputs}."
        )
    n = X.shape[0]
    start = int(np.floor(evaluate_from * n))
    losses = np.empty(n - start)
    full = learner.information == "full"
    tic = time.perf_counter()
    for t in range(n):
        x = X[t]
        y_hat = learner.predict_one(x)
        if t >= start:
            losses[t - start] = env.evaluate(t, y_hat)
        if full:
            learner.learn_one(x, env.reveal(t))
        else:
            learner.learn_one(x, env.loss(t, learner.query_one(x)))
    seconds = time.perf_counter() - tic
    running = np.cumsum(losses) / np.arange(1, losses.size + 1)
    idx = np.unique(np.linspace(0, losses.size - 1, min(n_curve_points, losses.size)).astype(int))
    return LossRunResult(
        learner=learner.name,
        loss=loss,
        noise=float(noise),
        seed=random_state if isinstance(random_state, int) else None,
        n_examples=n,
        n_evaluated=int(losses.size),
        evaluate_from=float(evaluate_from),
        progressive_loss=float(losses.mean()),
        n_queries=env.n_queries,
        seconds=seconds,
        curve_t=(idx + start + 1).tolist(),
        curve_loss=running[idx].tolist(),
        params=learner.get_params(deep=False),
    )
