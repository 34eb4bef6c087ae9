"""PNG plots of a study, one function per panel kind: per-round curves of the offline
learners, the online learners' progressive reward, offline vs online on the same logged rows
and every algorithm's final test reward.

``reported`` maps each algorithm label to its reported trials: JSON-ready dicts of
:class:`opboost.compose.trial.result.TrialResult`, the selected candidate of a search.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from opboost.compose.study.plot_parts import (
    CARRY_FORWARD_NOTE,
    add_legend,
    new_figure,
    save_figure,
    set_title,
)
from opboost.compose.study.plots_heldout import plot_heldout

__all__ = ["CARRY_FORWARD_NOTE", "final_rewards", "mean_curve", "plot_study", "start_note"]

_STYLES = [
    ("-", "o"),
    ("--", "s"),
    ("-.", "^"),
    (":", "D"),
    ((0, (5, 1, 1, 1)), "v"),
    ((0, (1, 1)), "P"),
]


def mean_curve(
    trials: Sequence[dict], x_key: str, y_key: str
) -> tuple[np.ndarray, np.ndarray, list[float]]:
    """The plotted mean curve of ``y_key`` against ``x_key`` over ``trials`` (seeds).

    Returns ``(xs, ys, stops)``: ``xs`` every x any trial reached, sorted; ``ys`` the mean
    over ALL trials at each x, where a trial that has no value at x (it stopped earlier, or
    the value is missing) contributes its last value before x -- carried forward, so the
    mean does not jump where one seed stops. A trial contributes from its first value on.
    ``stops`` are the x where a trial ended before the longest one (the early stops).
    """
    series: list[tuple[dict[float, float], float]] = []
    grid_xs: set[float] = set()
    for t in trials:
        xs = t.get("curves", {}).get(x_key) or []
        ys = t.get("curves", {}).get(y_key) or []
        points = {
            float(x): float(y)
            for x, y in zip(xs, ys, strict=False)
            if x is not None and y is not None and math.isfinite(float(y))
        }
        if points:
            reached = {float(x) for x in xs[: len(ys)] if x is not None}
            series.append((points, max(reached)))
            grid_xs.update(reached)
    if not series:
        return np.array([]), np.array([]), []
    grid = sorted(grid_xs)
    columns = []
    for points, _ in series:
        last = math.nan
        column = []
        for x in grid:
            last = points.get(x, last)
            column.append(last)
        columns.append(column)
    values = np.array(columns, dtype=np.float64)
    with np.errstate(all="ignore"):
        counts = np.sum(~np.isnan(values), axis=0)
        ys = np.where(counts > 0, np.nansum(values, axis=0) / np.maximum(counts, 1), np.nan)
    end = grid[-1]
    stops = sorted(last for _, last in series if last < end)
    return np.array(grid, dtype=np.float64), ys, stops


def final_rewards(
    reported: dict[str, list[dict[str, Any]]], families: dict[str, str]
) -> list[tuple[str, float, float, float]]:
    """``(label, mean, min, max)`` of the test reward over seeds, per algorithm with one."""
    rows = []
    for label, trials in reported.items():
        values = [t["metrics"].get("test_reward") for t in trials]
        values = [float(v) for v in values if v is not None and math.isfinite(float(v))]
        if values:
            rows.append((label, float(np.mean(values)), min(values), max(values)))
    return rows


def plot_study(
    reported: dict[str, list[dict[str, Any]]],
    families: dict[str, str],
    out: Path,
    *,
    confidence: float = 0.95,
) -> list[Path]:
    """Write the study's PNG plots into ``out``; return their paths.

    ``reported`` maps each algorithm label to its reported trials (the selected candidate).
    Per-round and per-step curves are means over seeds with each seed's last value carried
    forward after it stops (:func:`mean_curve`; noted under the plot). A plot is drawn only
    when it has data: ``offline_*`` with offline learners' curves,
    ``online_progressive_reward.png`` and ``offline_vs_online.png`` with online learners;
    ``test_reward.png`` (every algorithm's final test reward) always; in a deployment study
    ``deployment_cumulative_reward.png`` and ``deployment_cumulative_regret.png`` (against
    interactions, with ``confidence`` intervals over seeds); in a study on logs
    ``heldout_value.png`` (:mod:`opboost.compose.study.plots_heldout`). Curves differ in line
    style and marker, and are slightly transparent, so none hides another; legends sit below
    the axes.
    """
    plt = _pyplot()
    out = Path(out)
    by_family: dict[str, list[str]] = {}
    for label, family in families.items():
        by_family.setdefault(family, []).append(label)
    online = by_family.get("online", [])
    written = _offline_curves(plt, reported, by_family.get("offline", []), out)
    written += _online_curve(plt, reported, online, out)
    written += _offline_vs_online(plt, reported, families, online, out)
    written += _deployment_curves(plt, reported, families, out, confidence)
    written += _test_rewards(plt, reported, families, out)
    written += plot_heldout(plt, reported, families, out, confidence)
    return written


def _deployment_curves(
    plt: Any, reported: dict, families: dict[str, str], out: Path, confidence: float
) -> list[Path]:
    """deployment_cumulative_reward.png and deployment_cumulative_regret.png: every
    algorithm's curve against interactions on the stream from 0 (where both are 0), its
    interval over seeds shaded."""
    from opboost.compose.study.report_deployment import (
        DEPLOYMENT_CURVES,
        family_label,
        interval_curve,
    )

    written = []
    for key, title in DEPLOYMENT_CURVES.items():
        found = {label: interval_curve(ts, key, confidence) for label, ts in reported.items()}
        found = {label: curve for label, curve in found.items() if len(curve[0])}
        if not found:
            continue
        fig, ax = new_figure(plt, 7.5, 5.2)
        for i, (label, curve) in enumerate(found.items()):
            xs, mean, low, high = (np.concatenate([[0.0], c]) for c in curve)  # 0 at the start
            line, marker = _STYLES[i % len(_STYLES)]
            family = family_label(reported[label], families.get(label, "?"))
            name = _with_start(label, reported[label], family)
            (drawn,) = ax.plot(
                xs, mean, linestyle=line, marker=marker, markersize=4, alpha=0.85, label=name
            )
            ax.fill_between(xs, low, high, color=drawn.get_color(), alpha=0.15, linewidth=0)
        ax.set_xlabel("interactions on the stream")
        ax.set_ylabel(title.split(" (")[0])
        ax.grid(alpha=0.3)
        set_title(ax, f"Deployment: {title} (mean over seeds)")
        note = f"Shaded: the {confidence:.0%} Student-t interval over seeds."
        add_legend(fig, ax, note)
        written.append(save_figure(plt, fig, out / f"deployment_{key}.png"))
    return written


def _offline_curves(plt: Any, reported: dict, labels: list[str], out: Path) -> list[Path]:
    """offline_test_reward.png and offline_gradient_norm.png: per boosting round."""
    written = []
    for y_key, title, name in (
        ("test_reward_round", "true test reward (argmax)", "offline_test_reward.png"),
        ("gradient_norm", "gradient norm", "offline_gradient_norm.png"),
    ):
        found = _curves(reported, labels, "round", y_key)
        found = {_with_start(label, reported[label]): c for label, c in found.items()}
        if found:
            caption = f"Offline learners: {title} per round (mean over seeds)"
            xlabel = "boosting round (0: the start)"
            written.append(_curve_panel(plt, found, xlabel, title, caption, out / name))
    return written


def _online_curve(plt: Any, reported: dict, labels: list[str], out: Path) -> list[Path]:
    """online_progressive_reward.png: per interaction."""
    found = _curves(reported, labels, "step", "progressive_reward")
    if not found:
        return []
    title = "Online learners: progressive reward (mean over seeds)"
    path = out / "online_progressive_reward.png"
    return [_curve_panel(plt, found, "interactions", "progressive reward", title, path)]


def start_note(trials: Sequence[dict]) -> str:
    """Where an offline algorithm's fits began, for legends: "from a reward model", "from
    F0 = 0", ... (the ``info["start"]`` of its trials), or "" when they do not say."""
    starts = {str(t.get("info", {}).get("start")) for t in trials} - {"None"}
    notes = sorted({_STARTS.get(s.split("/")[0], f"from {s}") for s in starts})
    return ", ".join(notes)


#: How legends name an offline fit's start (``info["start"]`` up to its first "/").
_STARTS = {
    "none": "from F0 = 0",
    "reward_model": "from a reward model",
    "best_constant": "from the best constant action",
    "logging": "from the logging policy",
}


def _with_start(label: str, trials: Sequence[dict], family: str = "") -> str:
    """``label (family, start note)``, the parts that are known."""
    parts = [p for p in (family, start_note(trials)) if p]
    return f"{label} ({', '.join(parts)})" if parts else label


def _offline_vs_online(
    plt: Any, reported: dict, families: dict[str, str], online: list[str], out: Path
) -> list[Path]:
    """offline_vs_online.png on one axis of logged interactions: the online learners' greedy
    test reward along the stream (from 0 interactions, the untrained learner), the offline
    learners' learning curves (fitted on the first n logged rows; 0: the uniform policy) and
    every other algorithm's test reward at the number of logged rows it used."""
    greedy = _curves(reported, online, "eval_step", "test_reward_step")
    if not greedy:  # without an online learner the panel would be a single column of points
        return []
    fig, ax = new_figure(plt, 8.5, 6.4)
    _draw(ax, {f"{label} (online, greedy)": c for label, c in greedy.items()})
    offline = [label for label in reported if families.get(label) == "offline"]
    learned = _curves(reported, offline, "n_logged_used", "test_reward_n")
    shown = {
        _with_start(label, reported[label], "offline"): curve for label, curve in learned.items()
    }
    _draw(ax, shown, styles=[("-", m) for _, m in _STYLES[::-1]], width=2.8)
    for label, trials in reported.items():
        family = families.get(label, "online")
        trials = [t for t in trials if "test_reward" in t["metrics"]]
        if not trials or family == "online" or label in learned:
            continue
        x = float(np.mean([t["info"]["n_logged"] for t in trials]))
        y = np.array([t["metrics"]["test_reward"] for t in trials], dtype=np.float64)
        mean = float(np.mean(y))
        err = [[max(0.0, mean - float(y.min()))], [max(0.0, float(y.max()) - mean)]]
        ax.errorbar(
            [x],
            [mean],
            yerr=err,
            fmt="o" if family == "offline" else "s",
            capsize=3,
            alpha=0.85,
            label=f"{label} ({family})",
        )
    ax.set_xlabel("logged interactions (offline: the first n logged rows; online: interactions)")
    ax.set_ylabel("true test reward")
    ax.grid(alpha=0.3)
    set_title(ax, "Offline vs online on the same logged rows (mean over seeds, min-max bars)")
    add_legend(
        fig,
        ax,
        "Mean over seeds. Offline curves: fitted on the first n logged rows (n = 0: the "
        "uniform policy, before any data); online curves: the greedy policy after n "
        "interactions (n = 0: the untrained learner; passes over the rows continue the axis).",
        ncols=2,
    )
    return [save_figure(plt, fig, out / "offline_vs_online.png")]


def _test_rewards(plt: Any, reported: dict, families: dict[str, str], out: Path) -> list[Path]:
    """test_reward.png: every algorithm's final test reward, mean and min-max over seeds."""
    rows = final_rewards(reported, families)
    if not rows:
        return []
    fig, ax = new_figure(plt, 7.0, 1.2 + 0.45 * len(rows))
    ys = np.arange(len(rows))[::-1]
    for y, (label, mean, low, high) in zip(ys, rows, strict=True):
        family = families.get(label, "")
        ax.errorbar(
            [mean],
            [y],
            xerr=[[max(0.0, mean - low)], [max(0.0, high - mean)]],
            fmt="o" if family == "offline" else ("D" if family == "online" else "s"),
            capsize=3,
            color=f"C{['offline', 'online', 'policy', 'baseline'].index(family) % 10}"
            if family in ("offline", "online", "policy", "baseline")
            else "C4",
        )
    ax.set_yticks(ys, [f"{label} ({families.get(label, '?')})" for label, *_ in rows])
    ax.set_xlabel("true test reward (mean over seeds, min-max bars)")
    ax.grid(axis="x", alpha=0.3)
    set_title(ax, "Test reward per algorithm", 70)
    return [save_figure(plt, fig, out / "test_reward.png")]


# --- drawing ---------------------------------------------------------------------------------


def _pyplot():
    try:
        import matplotlib
    except ImportError as exc:
        raise ImportError(
            "opboost study plots need matplotlib, which is not installed: pip install "
            "matplotlib (a dependency of opboost that this environment lacks) or pass --no-plots."
        ) from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _curves(reported: dict, labels: list[str], x_key: str, y_key: str) -> dict[str, tuple]:
    """{label: (xs, ys, stops)} of :func:`mean_curve` for the labels that have the curve."""
    found = {}
    for label in labels:
        xs, ys, stops = mean_curve(reported.get(label, []), x_key, y_key)
        if len(xs):
            found[label] = (xs, ys, stops)
    return found


def _draw(
    ax: Any, found: dict[str, tuple], suffix: str = "", styles: list = _STYLES, width: float = 1.5
) -> None:
    """The mean curves of ``found`` (lines ``width`` points wide), an x marker where a seed
    stopped early."""
    for i, (label, (xs, ys, stops)) in enumerate(found.items()):
        line, marker = styles[i % len(styles)]
        every = max(1, len(xs) // 12)
        (drawn,) = ax.plot(
            xs,
            ys,
            linestyle=line,
            marker=marker,
            markevery=every,
            markersize=4,
            alpha=0.8,
            linewidth=width,
            label=label + suffix,
        )
        for x in stops:
            y = float(np.interp(x, xs, ys))
            ax.plot([x], [y], "x", color=drawn.get_color(), markersize=7, alpha=0.9)


def _curve_panel(
    plt: Any, found: dict[str, tuple], xlabel: str, ylabel: str, title: str, path: Path
) -> Path:
    """One figure of mean curves with its labels, title and carry-forward note."""
    fig, ax = new_figure(plt)
    _draw(ax, found)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    set_title(ax, title)
    add_legend(fig, ax)
    return save_figure(plt, fig, path)
