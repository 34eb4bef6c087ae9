"""The deployment part of a study's report: cumulative reward and regret against interactions,
mean and Student-t interval over seeds at each end of the stream's batches
(:mod:`opboost.compose.trial.stream` records them).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from opboost.api.estimator import normal_interval

__all__ = ["DEPLOYMENT_CURVES", "deployment_markdown", "family_label", "interval_curve"]

#: The deployment curves against ``curves.interactions``, with their titles.
DEPLOYMENT_CURVES: dict[str, str] = {
    "cumulative_reward": "cumulative reward",
    "cumulative_regret": "cumulative regret (best action of every row minus reward)",
}
#: At most this many interaction counts are columns of the Markdown tables.
_MAX_COLUMNS = 6


def interval_curve(
    trials: Sequence[dict[str, Any]], y_key: str, confidence: float = 0.95
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(xs, mean, low, high)`` of ``curves[y_key]`` against ``curves.interactions`` over
    ``trials`` (seeds), at every x any trial has; the interval is NaN with fewer than two
    values."""
    points: dict[float, list[float]] = {}
    for trial in trials:
        curves = trial.get("curves", {})
        for x, y in zip(curves.get("interactions") or [], curves.get(y_key) or [], strict=False):
            if x is not None and y is not None and math.isfinite(float(y)):
                points.setdefault(float(x), []).append(float(y))
    xs = np.array(sorted(points), dtype=np.float64)
    stats = [normal_interval(np.array(points[x]), confidence) for x in xs]
    mean = np.array([s.value for s in stats], dtype=np.float64)
    low = np.array([s.low if math.isfinite(s.low) else math.nan for s in stats])
    high = np.array([s.high if math.isfinite(s.high) else math.nan for s in stats])
    return xs, mean, low, high


def _columns(xs: np.ndarray) -> list[float]:
    """At most ``_MAX_COLUMNS`` evenly spaced interaction counts, ending with the last."""
    step = -(-len(xs) // _MAX_COLUMNS)
    return [float(x) for x in xs[::-1][::step][::-1]]


def family_label(trials: list[dict[str, Any]], family: str) -> str:
    """The family, and how it played when the name does not say it: "offline, batched"."""
    mode = trials[0].get("info", {}).get("deployment", "")
    return family if mode in ("", family) else f"{family}, {mode}"


def deployment_markdown(
    reported: dict[str, list[dict[str, Any]]],
    families: dict[str, str],
    confidence: float = 0.95,
) -> str:
    """The results.md section of a deployment study: per curve, a table of the mean ±
    half-width of the interval at up to six interaction counts, one row per algorithm
    (its family and how it played: batched, online or fixed); "" without deployment curves."""
    curves = {
        label: {key: interval_curve(trials, key, confidence) for key in DEPLOYMENT_CURVES}
        for label, trials in reported.items()
        if trials
    }
    curves = {label: c for label, c in curves.items() if len(c["cumulative_reward"][0])}
    if not curves:
        return ""
    xs = np.unique(np.concatenate([c["cumulative_reward"][0] for c in curves.values()]))
    columns = _columns(xs)
    lines = ["", "## Deployment: reward collected on the stream", ""]
    for key, title in DEPLOYMENT_CURVES.items():
        lines += [f"{title[0].upper()}{title[1:]} after n interactions:", ""]
        head = ["algorithm", "family", *(f"n = {int(x):,}" for x in columns)]
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for label, found in curves.items():
            x, mean, low, high = found[key]
            cells = [label, family_label(reported[label], families.get(label, ""))]
            for column in columns:
                where = np.flatnonzero(x == column)
                if not len(where):
                    cells.append("—")
                    continue
                i = int(where[0])
                half = (high[i] - low[i]) / 2
                cells.append(f"{mean[i]:.1f}" + ("" if math.isnan(half) else f" ± {half:.1f}"))
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    lines.append(
        f"Mean over seeds ± half-width of the {confidence:.0%} Student-t interval. batched: "
        f"refitted on all the logs after every batch and deployed with exploration; online: "
        f"updated after every interaction; fixed: one policy throughout."
    )
    return "\n".join(lines) + "\n"
