"""Study reports: summaries with intervals, Markdown/CSV tables and PNG plots.

Inputs are the JSON-ready trial dicts of :class:`opboost.compose.experiment.TrialResult`. Intervals
are Student-t intervals over seeds (:func:`opboost.api.estimator.normal_interval`). In a
Markdown table the best mean of each metric is bold, and so is every other entry whose
interval overlaps the best one's (the convention of London et al., Table 1). A trial whose
``Booster(safe=True)`` fell back to the best constant action has ``fallback = "constant"``:
the CSV has a ``fallback`` column, and the Markdown table a ``fallbacks`` column (fallback
trials / reported trials) when any reported trial fell back. A trial that raised has
``failed = True`` and ``error``: it is left out of summaries and plots, and the Markdown table
gets a ``failed`` column (see :func:`failed_trials_markdown` for the list).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from opboost.api.estimator import normal_interval

__all__ = [
    "TABLE_METRICS",
    "aligned_rows",
    "csv_table",
    "failed_trials_markdown",
    "fallback_counts",
    "format_value",
    "markdown_table",
    "mean_curve",
    "plot_study",
    "summarise",
    "text_table",
]

#: Metrics shown in tables, in order, with their column titles.
TABLE_METRICS: dict[str, str] = {
    "test_reward": "test reward",
    "valid_reward": "validation reward",
    "valid_snips": "validation SNIPS",
    "progressive_reward": "progressive reward",
}


def summarise(trials: Sequence[dict[str, Any]], confidence: float = 0.95) -> dict[str, Any]:
    """{metric: {mean, low, high, n}} over ``trials`` (one algorithm, one candidate)."""
    names: list[str] = []
    for trial in trials:
        names += [m for m in trial["metrics"] if m not in names]
    out: dict[str, Any] = {}
    for name in names:
        values = [t["metrics"].get(name) for t in trials]
        values = np.array([v for v in values if v is not None], dtype=np.float64)
        if len(values) == 0:
            continue
        ci = normal_interval(values, confidence)
        out[name] = {
            "mean": float(ci.value),
            "low": float(ci.low) if math.isfinite(ci.low) else None,
            "high": float(ci.high) if math.isfinite(ci.high) else None,
            "n": len(values),
        }
    return out


def fallback_counts(
    reported: dict[str, Sequence[dict[str, Any]]], families: dict[str, str]
) -> dict[str, int]:
    """{label: number of ``reported`` trials that fell back} for every offline algorithm."""
    return {
        label: sum(1 for t in trials if t.get("fallback"))
        for label, trials in reported.items()
        if families.get(label) == "offline"
    }


def _metrics_present(summary: dict[str, dict[str, Any]]) -> list[str]:
    return [m for m in TABLE_METRICS if any(m in s for s in summary.values())]


def _cell(stat: dict[str, Any] | None) -> str:
    if stat is None:
        return "—"
    if stat["low"] is None:
        return f"{stat['mean']:.4f}"
    return f"{stat['mean']:.4f} ± {(stat['high'] - stat['low']) / 2:.4f}"


def _bold(summary: dict[str, dict[str, Any]], metric: str) -> set[str]:
    stats = {label: s[metric] for label, s in summary.items() if metric in s}
    if not stats:
        return set()
    best = max(stats, key=lambda k: stats[k]["mean"])
    low = stats[best]["low"]
    if low is None:
        return {best}
    return {
        k for k, s in stats.items() if k == best or (s["high"] is not None and s["high"] >= low)
    }


def markdown_table(
    summary: dict[str, dict[str, Any]],
    families: dict[str, str],
    seconds: dict[str, float] | None = None,
    confidence: float = 0.95,
    *,
    fallbacks: dict[str, int] | None = None,
    n_trials: dict[str, int] | None = None,
    failed: dict[str, int] | None = None,
) -> str:
    """A Markdown table: one row per algorithm, mean ± half-width of the interval.

    ``fallbacks`` ({label: fallback trials}, see :func:`fallback_counts`) adds a
    ``fallbacks`` column, "k/n" with n from ``n_trials`` (default: the test reward's n), when
    any count is positive. ``failed`` ({label: failed trials}) adds a ``failed`` column when
    any count is positive.
    """
    metrics = _metrics_present(summary)
    bold = {m: _bold(summary, m) for m in metrics}
    show_fallbacks = bool(fallbacks) and any(fallbacks.values())
    head = ["algorithm", "family", *(TABLE_METRICS[m] for m in metrics)]
    if show_fallbacks:
        head.append("fallbacks")
    show_failed = bool(failed) and any(failed.values())
    if show_failed:
        head.append("failed")
    if seconds is not None:
        head.append("seconds / trial")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, stats in summary.items():
        cells = [label, families.get(label, "")]
        for m in metrics:
            text = _cell(stats.get(m))
            cells.append(f"**{text}**" if label in bold[m] else text)
        if show_fallbacks:
            cells.append(_fallback_cell(label, stats, fallbacks, n_trials))
        if show_failed:
            n_failed = failed.get(label, 0)
            cells.append(f"**{n_failed} FAILED**" if n_failed else "0")
        if seconds is not None:
            cells.append(f"{seconds.get(label, float('nan')):.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    n = max((s.get("test_reward", {}).get("n", 0) for s in summary.values()), default=0)
    lines.append("")
    lines.append(
        f"Mean over {n} seeds ± half-width of the {confidence:.0%} Student-t interval; bold: "
        f"the best mean and every entry whose interval overlaps it."
    )
    if show_fallbacks:
        lines.append(
            "fallbacks: trials whose Booster(safe=True) fell back to the best constant action "
            "(its metrics are the constant policy's) / reported trials."
        )
    if show_failed:
        lines.append(
            "failed: trials that raised an error; they are not in the means (see the list of "
            "failed trials and results.json)."
        )
    return "\n".join(lines) + "\n"


def failed_trials_markdown(trials: Sequence[dict[str, Any]]) -> str:
    """A Markdown section listing failed trials (label, seed, candidate, error)."""
    lines = ["", "## Failed trials", ""]
    lines.append("| algorithm | seed | candidate | error |")
    lines.append("|---|---|---|---|")
    for t in trials:
        error = str(t.get("error", "")).replace("|", "\\|").replace("\n", " ")
        candidate = "" if t.get("candidate") is None else str(t["candidate"])
        lines.append(f"| {t['label']} | {t['seed']} | {candidate} | {error} |")
    lines.append("")
    lines.append(
        "These trials are not stored in trials/: re-running the study retries them (and "
        "reuses every finished trial). Tracebacks are in results.json."
    )
    return "\n".join(lines) + "\n"


def _fallback_cell(
    label: str,
    stats: dict[str, Any],
    fallbacks: dict[str, int],
    n_trials: dict[str, int] | None,
) -> str:
    if label not in fallbacks:
        return "—"
    n = (n_trials or {}).get(label, stats.get("test_reward", {}).get("n", 0))
    return f"{fallbacks[label]}/{n}"


def format_value(value: Any, digits: int = 4) -> str:
    """A number for printed tables: ints as they are, floats with ``digits`` decimals (in
    scientific notation when tiny or huge), NaN/infinity as ``nan``/``inf``, None as ``—``."""
    if value is None:
        return "—"
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        return str(value)
    if isinstance(value, int | np.integer):
        return str(int(value))
    value = float(value)
    if not math.isfinite(value):
        return str(value)
    if value != 0 and not 1e-3 <= abs(value) < 1e7:
        return f"{value:.{digits}e}"
    return f"{value:.{digits}f}"


def aligned_rows(
    rows: Sequence[tuple[str, Any]], indent: int = 2, gap: int = 2, min_width: int = 24
) -> str:
    """``name  value`` lines, the names padded to ``min_width`` or to the longest one plus
    ``gap`` spaces (so a long name never runs into its value), values formatted by
    :func:`format_value`."""
    if not rows:
        return ""
    width = max(min_width, max(len(name) for name, _ in rows) + gap)
    lines = [f"{' ' * indent}{name:<{width}}{format_value(value)}" for name, value in rows]
    return "\n".join(lines) + "\n"


def text_table(summary: dict[str, dict[str, Any]], metric: str = "test_reward") -> str:
    """A plain-text table of one metric: mean and interval per algorithm (columns aligned,
    four decimals)."""
    title = TABLE_METRICS.get(metric, metric)
    rows = []
    for label, stats in summary.items():
        s = stats.get(metric)
        if s is None:
            continue
        interval = (
            "—" if s["low"] is None else f"[{format_value(s['low'])}, {format_value(s['high'])}]"
        )
        rows.append((label, format_value(s["mean"]), interval))
    width = max([len("algorithm"), *(len(r[0]) for r in rows)]) + 2
    mean_width = max([len(title), *(len(r[1]) for r in rows)])
    lines = [f"{'algorithm':<{width}}{title:>{mean_width}}   95% interval"]
    for label, mean, interval in rows:
        lines.append(f"{label:<{width}}{mean:>{mean_width}}   {interval}")
    return "\n".join(lines) + "\n"


def csv_table(trials: Sequence[dict[str, Any]], selected: set[tuple]) -> str:
    """One CSV row per trial: key columns, every metric, n_rounds, fallback (e.g.
    "constant", empty when none), total seconds."""
    metrics: list[str] = []
    for t in trials:
        metrics += [m for m in t["metrics"] if m not in metrics]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    head = ["label", "family", "seed", "candidate", "selected", "overrides", *metrics]
    writer.writerow([*head, "n_rounds", "fallback", "total_seconds"])
    for t in trials:
        key = (t["label"], t["candidate"])
        overrides = ";".join(f"{k}={v}" for k, v in t["overrides"].items())
        row = [t["label"], t["family"], t["seed"], t["candidate"], key in selected, overrides]
        row += [t["metrics"].get(m, "") for m in metrics]
        row += [t["info"].get("n_rounds", ""), t.get("fallback") or ""]
        row.append(t["timings"].get("total_seconds", ""))
        writer.writerow(row)
    return buffer.getvalue()


# --- plots --------------------------------------------------------------------------------

#: The note plotted under every per-round / per-step mean curve.
CARRY_FORWARD_NOTE = (
    "Mean over seeds; a seed that stopped early (early stopping) keeps its last value in the "
    "mean after its last round (x: where a seed stopped)."
)
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


def _title(ax: Any, text: str, width: int = 55) -> None:
    import textwrap

    ax.set_title("\n".join(textwrap.wrap(text, width)), fontsize=10)


def plot_study(
    reported: dict[str, list[dict[str, Any]]], families: dict[str, str], out: Path
) -> list[Path]:
    """Write the study's PNG plots into ``out``; return their paths.

    ``reported`` maps each algorithm label to its reported trials (the selected candidate).
    Per-round and per-step curves are means over seeds with each seed's last value carried
    forward after it stops (:func:`mean_curve`; noted under the plot). A plot is drawn only
    when it has data: ``offline_*`` with offline learners' curves,
    ``online_progressive_reward.png`` and ``offline_vs_online.png`` with online learners;
    ``test_reward.png`` (every algorithm's final test reward) always. Curves differ in line
    style and marker, and are slightly transparent, so none hides another; legends sit below
    the axes.
    """
    plt = _pyplot()
    out = Path(out)
    written: list[Path] = []
    by_family: dict[str, list[str]] = {}
    for label, family in families.items():
        by_family.setdefault(family, []).append(label)

    def figure(width: float = 7.0, height: float = 4.8) -> tuple[Any, Any]:
        return plt.subplots(figsize=(width, height), layout="constrained")

    def legend(fig: Any, ax: Any, note: str | None = CARRY_FORWARD_NOTE) -> None:
        """The legend below the axes (never over the data), the note as its title."""
        import textwrap

        handles, labels = ax.get_legend_handles_labels()
        if handles:
            fig.legend(
                handles,
                labels,
                loc="outside lower center",
                ncols=min(3, len(labels)),
                fontsize=7,
                frameon=False,
                title="\n".join(textwrap.wrap(note, 100)) if note else None,
                title_fontsize=7,
            )

    def save(fig: Any, name: str) -> None:
        path = out / name
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)

    def curves(labels: list[str], x_key: str, y_key: str) -> dict[str, tuple]:
        found = {}
        for label in labels:
            xs, ys, stops = mean_curve(reported.get(label, []), x_key, y_key)
            if len(xs):
                found[label] = (xs, ys, stops)
        return found

    def draw(ax: Any, found: dict[str, tuple], suffix: str = "") -> None:
        for i, (label, (xs, ys, stops)) in enumerate(found.items()):
            line, marker = _STYLES[i % len(_STYLES)]
            every = max(1, len(xs) // 12)
            (drawn,) = ax.plot(
                xs,
                ys,
                linestyle=line,
                marker=marker,
                markevery=every,
                markersize=4,
                alpha=0.8,
                label=label + suffix,
            )
            for x in stops:
                y = float(np.interp(x, xs, ys))
                ax.plot([x], [y], "x", color=drawn.get_color(), markersize=7, alpha=0.9)

    offline = by_family.get("offline", [])
    for y_key, title, name in (
        ("test_reward_round", "true test reward (argmax)", "offline_test_reward.png"),
        ("gradient_norm", "gradient norm", "offline_gradient_norm.png"),
    ):
        found = curves(offline, "round", y_key)
        if not found:
            continue
        fig, ax = figure()
        draw(ax, found)
        ax.set_xlabel("boosting round")
        ax.set_ylabel(title)
        ax.grid(alpha=0.3)
        _title(ax, f"Offline learners: {title} per round (mean over seeds)")
        legend(fig, ax)
        save(fig, name)
    online = by_family.get("online", [])
    found = curves(online, "step", "progressive_reward")
    if found:
        fig, ax = figure()
        draw(ax, found)
        ax.set_xlabel("interactions")
        ax.set_ylabel("progressive reward")
        ax.grid(alpha=0.3)
        _title(ax, "Online learners: progressive reward (mean over seeds)")
        legend(fig, ax)
        save(fig, "online_progressive_reward.png")
    greedy = curves(online, "eval_step", "test_reward_step")
    if greedy:  # without an online learner the panel would be a single column of points
        fig, ax = figure(7.5, 5.2)
        draw(ax, greedy, " (online, greedy)")
        for label, trials in reported.items():
            family = families.get(label, "online")
            trials = [t for t in trials if "test_reward" in t["metrics"]]
            if not trials or family == "online":
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
        ax.set_xlabel("logged examples used / online interactions")
        ax.set_ylabel("true test reward")
        ax.grid(alpha=0.3)
        _title(ax, "Offline vs online on the same logged rows (mean over seeds, min-max bars)")
        legend(fig, ax)
        save(fig, "offline_vs_online.png")
    rows = final_rewards(reported, families)
    if rows:
        fig, ax = figure(7.0, 1.2 + 0.45 * len(rows))
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
        _title(ax, "Test reward per algorithm", 70)
        save(fig, "test_reward.png")
    return written
