"""What a fit records: the metadata of a fitted policy and the per-round evaluation metrics
of held-out logs (every engine, in memory or remote, records the same)."""

from __future__ import annotations

import functools
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import numpy as np

from opboost.api.data.logged import LoggedBandit
from opboost.api.numerics.arrays import dot
from opboost.api.numerics.softmax import softmax
from opboost.api.serving.masks import greedy

__all__ = ["opboost_version", "policy_metadata", "policy_values"]


def policy_values(
    data: LoggedBandit,
    scores: np.ndarray,
    *,
    prefix: str,
    tie_order: np.ndarray | None = None,
) -> dict[str, float]:
    """IPS and SNIPS values of the softmax and argmax policies of ``scores`` (n, K), the
    argmax's equal scores broken in ``tie_order`` (K,) (the policy's), else to the lower
    index."""
    rows = np.arange(len(data))
    ratio_soft = softmax(scores)[rows, data.actions] / data.propensities
    ratio_max = (greedy(scores, tie_order) == data.actions) / data.propensities
    out = {}
    for kind, ratio in (("softmax", ratio_soft), ("argmax", ratio_max)):
        total = float(np.sum(ratio))
        value = dot(ratio, data.rewards)
        out[f"{prefix}ips_{kind}"] = value / len(data)
        out[f"{prefix}snips_{kind}"] = value / total if total else 0.0
    return out


def policy_metadata(
    settings: Any,
    objective: Any,
    estimator: Any,
    learner: tuple[str, dict[str, Any]],
    *,
    n_rounds: int,
    n_actions: int,
    n_features: int,
    stop_reason: str | None,
) -> dict[str, Any]:
    """The metadata a fitted policy records: its components, the fit's settings
    ([`FitSettings`][opboost.api.engine.FitSettings]) and its shape. ``learner`` is the (registry
    name, parameters) ``load_policy`` reads with."""
    return {
        "objective": objective.name,
        "estimator": estimator.name,
        "base_learner": learner[0],
        "base_learner_params": learner[1],
        "opboost_version": opboost_version(),
        "n_rounds": n_rounds,
        "n_actions": n_actions,
        "n_features": n_features,
        "reward_shift": settings.reward_shift,
        "scale": settings.step.scale,
        "learning_rate": settings.step.learning_rate,
        "l2": settings.step.l2,
        "warm_start": settings.warm_start,
        "stop_reason": stop_reason,
    }


@functools.cache  # reading the installed metadata took 0.06 s of every fit
def opboost_version() -> str:
    """The installed opboost's version ("0+unknown" in a source tree without metadata)."""
    try:
        return version("opboost")
    except PackageNotFoundError:  # pragma: no cover - source tree without metadata
        return "0+unknown"
