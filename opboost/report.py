"""Study reports: summaries with intervals, Markdown/CSV tables and PNG plots.

Inputs are the JSON-ready trial dicts of :class:`opboost.experiment.TrialResult`. Intervals
are Student-t intervals over seeds (:func:`opboost.estimators.base.normal_interval`). In a
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

from opboost.estimators.base import normal_interval

__all__ = [
    "TABLE_METRICS",
    "csv_table",
    "failed_trials_markdown",
    "fallback_counts",
    "markdown_table",
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


def text_table(summary: dict[str, dict[str, Any]], metric: str = "test_reward") -> str:
    """A plain-text table of one metric: mean and interval per algorithm."""
    title = TABLE_METRICS.get(metric, metric)
    width = max([len("algorithm"), *(len(k) for k in summary)]) + 2
    lines = [f"{'algorithm':<{width}}{title:>20}   95% interval"]
    for label, stats in summary.items():
        s = stats.get(metric)
        if s is None:
            continue
        interval = "—" if s["low"] is None else f"[{s['low']:.4f}, {s['high']:.4f}]"
        lines.append(f"{label:<{width}}{s['mean']:>20.4f}   {interval}")
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


def _mean_curve(trials: Sequence[dict], x_key: str, y_key: str) -> tuple[np.ndarray, np.ndarray]:
    """Mean of y over trials at each x (x values present in any trial; missing ones skipped)."""
    sums: dict[float, list[float]] = {}
    for t in trials:
        xs, ys = t["curves"].get(x_key, []), t["curves"].get(y_key, [])
        for x, y in zip(xs, ys, strict=False):
            if y is not None:
                sums.setdefault(x, []).append(y)
    xs = np.array(sorted(sums), dtype=np.float64)
    return xs, np.array([np.mean(sums[x]) for x in sorted(sums)])


def _pyplot():
    try:
        import matplotlib
    except ImportError as exc:
        raise ImportError(
            "opboost study plots need matplotlib, which is not installed: "
            "pip install 'opboost[plots]' (or pass --no-plots)."
        ) from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_study(
    reported: dict[str, list[dict[str, Any]]], families: dict[str, str], out: Path
) -> list[Path]:
    """Write the study's PNG plots into ``out``; return their paths.

    ``reported`` maps each algorithm label to its reported trials (the selected candidate).
    """
    plt = _pyplot()
    out = Path(out)
    written: list[Path] = []
    by_family = {f: [k for k, v in families.items() if v == f] for f in set(families.values())}

    def save(fig: Any, name: str) -> None:
        fig.tight_layout()
        path = out / name
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)

    offline = by_family.get("offline", [])
    if offline:
        for y_key, title, name in (
            ("test_reward_round", "true test reward (argmax)", "offline_test_reward.png"),
            ("gradient_norm", "gradient norm", "offline_gradient_norm.png"),
        ):
            fig, ax = plt.subplots(figsize=(6, 4))
            for label in offline:
                xs, ys = _mean_curve(reported.get(label, []), "round", y_key)
                if len(xs):
                    ax.plot(xs, ys, label=label)
            ax.set_xlabel("boosting round")
            ax.set_ylabel(title)
            ax.set_title(f"Offline learners: {title} per round (mean over seeds)")
            ax.legend(fontsize=8)
            save(fig, name)
    online = by_family.get("online", [])
    if online:
        fig, ax = plt.subplots(figsize=(6, 4))
        for label in online:
            xs, ys = _mean_curve(reported.get(label, []), "step", "progressive_reward")
            ax.plot(xs, ys, label=label)
        ax.set_xlabel("interactions")
        ax.set_ylabel("progressive reward")
        ax.set_title("Online learners: progressive reward (mean over seeds)")
        ax.legend(fontsize=8)
        save(fig, "online_progressive_reward.png")
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label in online:
        xs, ys = _mean_curve(reported.get(label, []), "eval_step", "test_reward_step")
        if len(xs):
            ax.plot(xs, ys, marker=".", label=f"{label} (online, greedy)")
    for label, trials in reported.items():
        trials = [t for t in trials if "test_reward" in t["metrics"]]
        if not trials or families.get(label, "online") == "online":
            continue
        x = float(np.mean([t["info"]["n_logged"] for t in trials]))
        y = np.array([t["metrics"]["test_reward"] for t in trials])
        mean = float(np.mean(y))
        err = [[max(0.0, mean - float(y.min()))], [max(0.0, float(y.max()) - mean)]]
        style = "o" if families[label] == "offline" else "s"
        ax.errorbar(
            [x], [mean], yerr=err, fmt=style, capsize=3, label=f"{label} ({families[label]})"
        )
    ax.set_xlabel("logged examples used / online interactions")
    ax.set_ylabel("true test reward")
    ax.set_title("Offline vs online on the same logged rows (mean over seeds, min-max bars)")
    ax.legend(fontsize=7, loc="best")
    save(fig, "offline_vs_online.png")
    return written
