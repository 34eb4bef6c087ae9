"""Study reports: summaries with intervals, Markdown, CSV and plain-text tables.

Inputs are the JSON-ready trial dicts of :class:`opboost.compose.trial.result.TrialResult`.
Intervals are Student-t intervals over seeds (:func:`opboost.api.estimator.normal_interval`). In a
Markdown table the best mean of each metric is bold, and so is every other entry whose
interval overlaps the best one's (the convention of London et al., Table 1). A trial whose
``Booster(safe=True)`` fell back to the best constant action has ``fallback = "constant"``:
the CSV has a ``fallback`` column, and the Markdown table a ``fallbacks`` column (fallback
trials / reported trials) when any reported trial fell back. A trial that raised has
``failed = True`` and ``error``: it is left out of summaries and plots, and the Markdown table
gets a ``failed`` column (see :func:`failed_trials_markdown` for the list). The plots are
:mod:`opboost.compose.study.plots`.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
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
    "summarise",
    "text_table",
    "trial_starts",
]

#: Metrics shown in tables, in order, with their column titles.
TABLE_METRICS: dict[str, str] = {
    "test_reward": "test reward",
    "valid_reward": "validation reward",
    "valid_snips": "validation SNIPS",
    "progressive_reward": "progressive reward",
    "stream_reward": "stream reward",
    "heldout_ips": "held-out IPS",
    "heldout_snips": "held-out SNIPS",
    "heldout_dr": "held-out DR",
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
    starts: dict[str, str] | None = None,
) -> str:
    """A Markdown table: one row per algorithm, mean ± half-width of the interval.

    ``starts`` ({label: the start its offline fits ran from}, see :func:`trial_starts`) adds
    a ``start`` column after ``family`` (``—`` for the other algorithms).
    ``fallbacks`` ({label: fallback trials}, see :func:`fallback_counts`) adds a
    ``fallbacks`` column, "k/n" with n from ``n_trials`` (default: the test reward's n), when
    any count is positive. ``failed`` ({label: failed trials}) adds a ``failed`` column when
    any count is positive.
    """
    metrics = _metrics_present(summary)
    bold = {m: _bold(summary, m) for m in metrics}
    show_fallbacks = bool(fallbacks) and any(fallbacks.values())
    head = [
        "algorithm",
        "family",
        *(["start"] if starts else []),
        *(TABLE_METRICS[m] for m in metrics),
    ]
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
        if starts:
            cells.append(starts.get(label, "—"))
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
    n = max((stat["n"] for s in summary.values() for stat in s.values()), default=0)
    lines.append("")
    lines.append(
        f"Mean over {n} seeds ± half-width of the {confidence:.0%} Student-t interval; bold: "
        f"the best mean and every entry whose interval overlaps it."
    )
    if starts:
        lines.append(
            "start: where the offline fits began boosting (F_0): none (F_0 = 0, London et al.'s "
            "algorithm), reward_model/<family> (the base learner's reward model), "
            "best_constant, logging."
        )
    if any(m.startswith("heldout_") for m in metrics):
        lines.append(
            "held-out IPS, SNIPS, DR: each policy's estimated value on the held-out logs (no "
            "labels), ± over seeds; each estimate's own interval is in results.csv "
            "(heldout_*_low, heldout_*_high) and heldout_value.png."
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


def trial_starts(reported: dict[str, Sequence[dict[str, Any]]]) -> dict[str, str]:
    """{label: the start(s) its ``reported`` offline trials ran from (``info["start"]``,
    e.g. "reward_model/trees" or "none"; several joined by ", ")} for the labels with one."""
    out = {}
    for label, trials in reported.items():
        starts = sorted({str(t["info"]["start"]) for t in trials if "start" in t["info"]})
        if starts:
            out[label] = ", ".join(starts)
    return out


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
