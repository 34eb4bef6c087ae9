"""heldout_value.png of a study on the user's own logs: every algorithm's value on the
held-out logs by IPS, SNIPS and DR, with the estimators' confidence intervals."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from opboost.compose.study.plot_parts import add_legend, new_figure, save_figure, set_title

__all__ = ["HELDOUT_PANELS", "heldout_points", "plot_heldout"]

#: Estimators drawn, with their legend names.
HELDOUT_PANELS: dict[str, str] = {"ips": "IPS", "snips": "SNIPS", "dr": "DR"}


def heldout_points(trials: list[dict[str, Any]], name: str) -> tuple[float, float, float] | None:
    """``(mean, low, high)`` over seeds of ``heldout_<name>`` and of its interval's ends in
    ``trials``, or None when no trial has it."""
    rows = []
    for t in trials:
        m = t["metrics"]
        values = [m.get(f"heldout_{name}{end}") for end in ("", "_low", "_high")]
        if all(v is not None and math.isfinite(float(v)) for v in values):
            rows.append(values)
    if not rows:
        return None
    mean, low, high = np.mean(np.array(rows, dtype=np.float64), axis=0)
    return float(mean), float(low), float(high)


def plot_heldout(
    plt: Any,
    reported: dict[str, list[dict]],
    families: dict[str, str],
    out: Path,
    confidence: float,
) -> list[Path]:
    """heldout_value.png: per algorithm, IPS, SNIPS and DR on the held-out logs (mean over
    seeds) with the mean of their ``confidence`` intervals; nothing without held-out metrics."""
    labels = [label for label, ts in reported.items() if heldout_points(ts, "snips")]
    if not labels:
        return []
    fig, ax = new_figure(plt, 7.5, 1.6 + 0.6 * len(labels))
    ys = np.arange(len(labels))[::-1]
    named: set[str] = set()  # one legend entry per estimator
    for j, (name, shown) in enumerate(HELDOUT_PANELS.items()):
        for y, label in zip(ys, labels, strict=True):
            point = heldout_points(reported[label], name)
            if point is None:
                continue
            mean, low, high = point
            legend = None if name in named else shown
            named.add(name)
            ax.errorbar(
                [mean],
                [y + 0.2 * (1 - j)],
                xerr=[[max(0.0, mean - low)], [max(0.0, high - mean)]],
                fmt="osD"[j],
                color=f"C{j}",
                capsize=3,
                alpha=0.85,
                label=legend,
            )
    ax.set_yticks(ys, [f"{label} ({families.get(label, '?')})" for label in labels])
    ax.set_xlabel("estimated value on the held-out logs (mean over seeds)")
    ax.grid(axis="x", alpha=0.3)
    set_title(ax, "Value of each policy on the held-out logs (no labels)", 70)
    add_legend(
        fig,
        ax,
        f"Bars: the estimator's {confidence:.0%} interval on the held-out logs, averaged over "
        f"seeds. The logging policy has no DR value (DR needs its whole action distribution).",
    )
    return [save_figure(plt, fig, out / "heldout_value.png")]
