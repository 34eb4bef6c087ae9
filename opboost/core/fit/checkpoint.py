"""Checkpoints of an in-memory fit: the fingerprint that ties one to its data and settings,
what :class:`~opboost.core.callbacks.Checkpoint` writes (:func:`snapshot`), and what a fit
continues from when it reads one back (:func:`restored`). The fit assigns what these return
(:meth:`opboost.core.fit.memory.InMemoryFit.restore`); nothing here writes the fit."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from opboost.api.data.logged import LoggedBandit
from opboost.api.engine import Components, FitSettings
from opboost.api.exceptions import InvalidParameterError
from opboost.api.files.atomic import json_params
from opboost.api.learner import BaseLearner
from opboost.api.policy import Policy

__all__ = ["Progress", "Restored", "fingerprint", "restored", "snapshot"]


def fingerprint(
    data: LoggedBandit,
    eval_data: LoggedBandit | None,
    components: Components,
    settings: FitSettings,
    holdout: tuple[LoggedBandit, Any] | None = None,
) -> str:
    """Hash of the data and every setting that changes the trajectory (not n_rounds); with
    ``holdout`` (the held-out logs and their selection settings, a dataclass), of those too."""
    h = hashlib.sha256()
    logs = (data, eval_data) if holdout is None else (data, eval_data, holdout[0])
    for d in logs:
        if d is None:
            h.update(b"none")
            continue
        x = d.contexts
        for arr in (x.data, x.indices, x.indptr) if d.is_sparse else (x,):
            h.update(np.ascontiguousarray(arr).tobytes())
        for arr in (d.actions, d.propensities, d.rewards):
            h.update(np.ascontiguousarray(arr).tobytes())
    spec = {
        p: (type(c).__name__, c.get_params(deep=False))
        for p, c in (
            ("objective", components.objective),
            ("estimator", components.estimator),
            ("base_learner", components.learner),
        )
    }
    spec.update(reward_shift=settings.reward_shift, scale=settings.scale)
    # Only non-default regularisation enters the hash (older checkpoints stay valid).
    for key, default in (("learning_rate", 1.0), ("l2", 0.0), ("warm_start", None)):
        if getattr(settings, key) != default:
            spec[key] = getattr(settings, key)
    if settings.warm_start is not None:
        spec["warm_start_prob"] = settings.warm_start_prob
    if holdout is not None:
        spec["selection"] = dataclasses.asdict(holdout[1])
    h.update(json.dumps(json_params(spec), sort_keys=True).encode())
    return h.hexdigest()


@dataclass(frozen=True, eq=False)
class Progress:
    """How far a fit has come, as a checkpoint stores it: the seed, the committed rounds, F
    on the training rows (n, K) and on the evaluation rows (None without them), the history
    (metric -> per-round values) and why the fit stopped (None while it may go on)."""

    seed: int
    round: int
    scores: np.ndarray
    eval_scores: np.ndarray | None
    history: dict[str, list[float]]
    stop_reason: str | None


@dataclass(frozen=True, eq=False)
class Restored:
    """What a fit continues from: the checkpoint's progress (a stop at ``n_rounds`` reads
    back as None, so that a fit with more rounds goes on), the ensemble of its rounds, which
    the learner continues, (round, ensemble) of a best round a callback marked, or None, what
    the reward-model start chose (``reward_start``, or None) and the held-out choice's state
    (``RoundSelection.state()``, or None)."""

    progress: Progress
    ensemble: Any
    best: tuple[int, Any] | None
    reward_start: dict[str, Any] | None = None
    selection: dict[str, Any] | None = None


def restored(
    checkpoint: Mapping[str, Any],
    *,
    fingerprint: str,
    learner: BaseLearner,
    has_eval: bool,
) -> Restored:
    """What a fit continues from, read from ``checkpoint`` (as
    :meth:`opboost.core.callbacks.Checkpoint.load_checkpoint` returns it); ``has_eval``: the
    resuming fit has evaluation logs, whose scores are read back. Refused when the checkpoint's
    fingerprint is not ``fingerprint`` (other data or settings) or ``learner`` cannot continue
    an ensemble (it has no ``warm_start``)."""
    if checkpoint["fingerprint"] != fingerprint:
        raise InvalidParameterError(
            f"The checkpoint in {checkpoint['directory']} was written by a fit with other data "
            f"or settings; delete that directory or checkpoint to a new one."
        )
    if type(learner).warm_start is BaseLearner.warm_start:
        raise InvalidParameterError(
            f"The base learner {learner.name!r} cannot resume from a checkpoint (it "
            f"has no warm_start method); delete {checkpoint['directory']} to start afresh."
        )
    stop = checkpoint.get("stop_reason")
    progress = Progress(
        seed=int(checkpoint["seed"]),
        round=int(checkpoint["round"]),
        scores=np.array(checkpoint["scores"], dtype=np.float64),
        eval_scores=np.array(checkpoint["eval_scores"], dtype=np.float64) if has_eval else None,
        history={k: list(v) for k, v in checkpoint["history"].items()},
        stop_reason=stop if stop and stop != "n_rounds reached" else None,
    )
    best = None
    if checkpoint.get("best_ensemble") is not None:
        best = (int(checkpoint["best_round"]), checkpoint["best_ensemble"])
    return Restored(
        progress,
        checkpoint["ensemble"],
        best,
        reward_start=checkpoint.get("reward_start"),
        selection=checkpoint.get("selection"),
    )


def snapshot(
    progress: Progress,
    fingerprint: str,
    policy: Policy,
    best: tuple[int, Policy] | None,
    *,
    reward_start: dict[str, Any] | None = None,
    selection: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Everything :class:`~opboost.core.callbacks.Checkpoint` writes of a fit with
    ``progress`` and ``fingerprint``: its ``policy`` of every committed round, (round,
    policy) of a ``best`` round before the last, or None, what its reward-model start chose
    and the state of its held-out choice (arrays and numbers), or None."""
    return {
        "reward_start": reward_start,
        "selection": selection,
        "round": progress.round,
        "seed": progress.seed,
        "fingerprint": fingerprint,
        "stop_reason": progress.stop_reason,
        "history": progress.history,
        "policy": policy,
        "scores": progress.scores,
        "eval_scores": progress.eval_scores,
        "best_round": None if best is None else best[0],
        "best_policy": None if best is None else best[1],
    }
