"""The files a study writes: trial records and results.json, results.csv, results.md and
the plots, each atomically (unique temporary name in the same directory, fsync,
``os.replace``)."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from opboost.api.files.atomic import json_safe, write_atomic
from opboost.compose.study.errors import StudyError

__all__ = [
    "remove_leftover_temporaries",
    "reported_trials",
    "write_outputs",
    "write_partial_outputs",
    "write_trial_record",
]


def _write_text(path: Path, text: str) -> None:
    """Write atomically: a unique temporary file in the same directory, fsynced, then
    ``os.replace``d; a killed writer leaves the old file or the new one, never half, and
    concurrent writers never share a temporary file. The study's checked writes use it; the
    best-effort partial outputs use :func:`write_atomic` directly."""
    write_atomic(path, text)


def _write_json(path: Path, obj: Any, write: Callable[[Path, str], None] | None = None) -> None:
    notes: list[dict[str, str]] = []
    clean = json_safe(obj, "", notes)
    if notes and isinstance(clean, dict):
        clean["non_finite"] = [
            *clean.get("non_finite", []),
            *(dict(n, written_as="null") for n in notes),
        ]
    (write or _write_text)(path, json.dumps(clean, indent=1, allow_nan=False) + "\n")


def write_trial_record(path: Path, record: dict[str, Any]) -> None:
    """Write one trial file (``fingerprint``, ``data_hash``, ``versions``, ``result``)."""
    _write_json(path, record)


_TEMPORARY = re.compile(r"\..+\.(?:json|csv|md)\.[^.]+\.tmp")


def remove_leftover_temporaries(*folders: Path) -> None:
    """Delete the temporary files of :func:`_write_text` that a killed study left behind
    (only called while holding the lock: no other study is writing them)."""
    for folder in folders:
        for path in folder.glob(".*.tmp"):
            if _TEMPORARY.fullmatch(path.name):
                with contextlib.suppress(OSError):
                    path.unlink()


def reported_trials(results: dict[str, Any]) -> dict[str, list[dict]]:
    """{label: successful trials reported for it} (the selected candidate of a search)."""
    out: dict[str, list[dict]] = {}
    for t in results["trials"]:
        if t.get("failed"):
            continue
        chosen = results["search"].get(t["label"], {}).get("selected")
        if t["candidate"] == chosen:
            out.setdefault(t["label"], []).append(t)
    return out


def write_outputs(results: dict[str, Any], out: Path, *, plots: bool = True) -> list[Path]:
    """Write results.json, results.csv, results.md and the plots under ``out``.

    Each output is written atomically and independently; when any fails, the others are
    still written and :class:`StudyError` names every output that failed and why (the
    per-trial files under ``out/trials`` are never touched here).
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    reported = reported_trials(results)
    written: list[Path] = []
    problems: list[str] = []

    def attempt(what: str, write: Callable[[], list[Path]]) -> None:
        try:
            written.extend(write())
        except Exception as exc:  # reported together below
            problems.append(f"{what}: {type(exc).__name__}: {exc}")

    def json_out() -> list[Path]:
        _write_json(out / "results.json", results)
        return [out / "results.json"]

    def csv_out() -> list[Path]:
        from opboost.compose.study.report import csv_table

        selected = {(label, ts[0]["candidate"]) for label, ts in reported.items() if ts}
        _write_text(out / "results.csv", csv_table(results["trials"], selected))
        return [out / "results.csv"]

    def md_out() -> list[Path]:
        _write_text(out / "results.md", _markdown(results, reported))
        return [out / "results.md"]

    def plots_out() -> list[Path]:
        from opboost.compose.study.plots import plot_study

        shown = {label: ts for label, ts in reported.items() if ts}
        families = {k: v for k, v in results["families"].items() if k in shown}
        confidence = results["config"]["experiment"]["confidence"]
        return plot_study(shown, families, out, confidence=confidence)

    attempt("results.json", json_out)
    attempt("results.csv", csv_out)
    attempt("results.md", md_out)
    if plots:
        attempt("the plots (*.png)", plots_out)
    if problems:
        n = sum(1 for t in results["trials"] if not t.get("failed"))
        raise StudyError(
            f"Writing the study's outputs in {out} failed: " + "; ".join(problems) + ". "
            f"The {n} finished trials are kept in {out / 'trials'}; fix the cause and re-run "
            f"the same study to resume from them (only the outputs are rewritten)."
        )
    return written


def write_partial_outputs(results: dict[str, Any], out: Path) -> list[Path]:
    """Write results.json and results.md of an unfinished study (``results["partial"]``:
    finished and planned trial counts), atomically; called after every finished trial, so an
    interrupted study leaves a partial table. The final :func:`write_outputs` replaces them."""
    out = Path(out)
    _write_json(out / "results.json", results, write_atomic)
    write_atomic(out / "results.md", _markdown(results, reported_trials(results)))
    return [out / "results.json", out / "results.md"]


def _markdown(results: dict[str, Any], reported: dict[str, list[dict]]) -> str:
    from opboost.compose.study.report import failed_trials_markdown, markdown_table, trial_starts

    seconds = {
        label: sum(t["timings"].get("total_seconds", 0.0) for t in ts) / len(ts)
        for label, ts in reported.items()
        if ts
    }
    failed_counts: dict[str, int] = {}
    for t in results["trials"]:
        if t.get("failed"):
            failed_counts[t["label"]] = failed_counts.get(t["label"], 0) + 1
    confidence = results["config"]["experiment"]["confidence"]
    table = markdown_table(
        results["summary"],
        results["families"],
        seconds,
        confidence,
        fallbacks=results.get("fallbacks"),
        n_trials={label: len(ts) for label, ts in reported.items()},
        failed=failed_counts,
        starts=trial_starts(reported),
    )
    data = results["config"]["data"]
    if "world" in data:  # a simulated world: its parameters
        params = ", ".join(f"{k}={v}" for k, v in data.items() if k != "world")
        source = f"World: {data['world']} ({params})"
    else:
        source = f"Logs: {data['path']}" if "path" in data else f"Data set: {data['name']}"
    header = f"# Study: {results['config_file']}\n\n{source}"
    header += f"; seeds: {results['seeds']}.\n\n"
    if results.get("partial"):
        done, planned = results["partial"]["finished"], results["partial"]["planned"]
        header += (
            f"**Partial results: {done} of {planned} trials finished** (the study is running "
            f"or was interrupted; re-run the same command to resume).\n\n"
        )
    failures = [t for t in results["trials"] if t.get("failed")]
    if "deployment" in results["config"]:
        from opboost.compose.study.report_deployment import deployment_markdown

        table += deployment_markdown(reported, results["families"], confidence)
    return header + table + (failed_trials_markdown(failures) if failures else "")
