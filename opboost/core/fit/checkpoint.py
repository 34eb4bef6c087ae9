"""Checkpoints of an in-memory fit: the fingerprint that ties one to its data and settings,
what :class:`~opboost.core.callbacks.Checkpoint` writes, and the restore that continues exactly."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from opboost.api.exceptions import InvalidParameterError
from opboost.api.files.atomic import json_params
from opboost.api.learner import BaseLearner

__all__ = ["fingerprint", "restore", "snapshot"]


def fingerprint(fit: Any) -> str:
    """Hash of the data and every setting that changes the trajectory (not n_rounds)."""
    h = hashlib.sha256()
    for d in (fit.data, fit.eval_data):
        if d is None:
            h.update(b"none")
            continue
        x = d.contexts
        for arr in (x.data, x.indices, x.indptr) if d.is_sparse else (x,):
            h.update(np.ascontiguousarray(arr).tobytes())
        for arr in (d.actions, d.propensities, d.rewards):
            h.update(np.ascontiguousarray(arr).tobytes())
    s = fit.settings
    spec = {
        p: (type(c).__name__, c.get_params(deep=False))
        for p, c in (
            ("objective", fit.objective),
            ("estimator", fit.estimator),
            ("base_learner", fit.learner),
        )
    }
    spec.update(reward_shift=s.reward_shift, scale=s.scale)
    # Only non-default regularisation enters the hash (older checkpoints stay valid).
    for key, default in (("learning_rate", 1.0), ("l2", 0.0), ("warm_start", None)):
        if getattr(s, key) != default:
            spec[key] = getattr(s, key)
    if s.warm_start is not None:
        spec["warm_start_prob"] = s.warm_start_prob
    h.update(json.dumps(json_params(spec), sort_keys=True).encode())
    return h.hexdigest()


def restore(fit: Any, ckpt: Mapping[str, Any]) -> None:
    """Continue ``fit`` from a checkpoint written by :class:`opboost.core.callbacks.Checkpoint`."""
    if ckpt["fingerprint"] != fit.fingerprint:
        raise InvalidParameterError(
            f"The checkpoint in {ckpt['directory']} was written by a fit with other data "
            f"or settings; delete that directory or checkpoint to a new one."
        )
    if type(fit.learner).warm_start is BaseLearner.warm_start:
        raise InvalidParameterError(
            f"The base learner {fit.learner.name!r} cannot resume from a checkpoint (it "
            f"has no warm_start method); delete {ckpt['directory']} to start afresh."
        )
    fit.seed, fit.round = int(ckpt["seed"]), int(ckpt["round"])
    fit.scores = np.array(ckpt["scores"], dtype=np.float64)
    if fit.eval_data is not None:
        fit.eval_scores = np.array(ckpt["eval_scores"], dtype=np.float64)
    fit.history = {k: list(v) for k, v in ckpt["history"].items()}
    stop = ckpt.get("stop_reason")
    fit.stop_reason = stop if stop and stop != "n_rounds reached" else None
    fit.ensemble_start = ckpt["ensemble"]
    if ckpt.get("best_ensemble") is not None:
        fit.best = (int(ckpt["best_round"]), ckpt["best_ensemble"])


def snapshot(fit: Any) -> dict[str, Any]:
    """Everything :class:`~opboost.core.callbacks.Checkpoint` writes, as of the last round."""
    full = fit.policy_of(fit.learner.ensemble(), fit.metadata(fit.round))
    best = None
    if fit.best is not None and fit.best[0] < fit.round:
        best = fit.policy_of(fit.best[1], fit.metadata(fit.best[0]))
    return {
        "round": fit.round,
        "seed": fit.seed,
        "fingerprint": fit.fingerprint,
        "stop_reason": fit.stop_reason,
        "history": fit.history,
        "policy": full,
        "scores": fit.scores,
        "eval_scores": fit.eval_scores,
        "best_round": None if best is None else fit.best[0],
        "best_policy": best,
    }
