"""Stored trial files (``out/trials/*.json``): which are still valid, which must be re-run
and why, and the timings they record."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from opboost.compose.trial.plan import TrialKey, trial_filenames

__all__ = ["MALFORMED", "load_stored_trials", "stored_timings"]

_RESULT_FIELDS = (
    "label",
    "family",
    "seed",
    "candidate",
    "overrides",
    "metrics",
    "curves",
    "info",
    "timings",
    "fallback",
)
#: The reason given for stored trial files that are not a complete trial record.
MALFORMED = "the stored file is not a complete trial record"


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _record_problem(obj: Any, key: TrialKey) -> str | None:
    """What is wrong with a stored trial file's JSON ``obj`` for ``key``, or None when it has
    the shape the study writes (values the fingerprint cannot vouch for are checked too)."""
    if not isinstance(obj, dict):
        return f"not a JSON object but {type(obj).__name__}"
    missing = [k for k in ("fingerprint", "result") if k not in obj]
    if missing:
        return "no " + " and no ".join(repr(k) for k in missing)
    if not isinstance(obj["fingerprint"], str):
        return "'fingerprint' is not a string"
    if not isinstance(obj.get("data_hash", ""), str | None):
        return "'data_hash' is not a string"
    stored_versions = obj.get("versions", {})
    if not isinstance(stored_versions, dict | None) or not all(
        isinstance(v, str) for v in (stored_versions or {}).values()
    ):
        return "'versions' is not an object of strings"
    result = obj["result"]
    if not isinstance(result, dict):
        return "'result' is not a JSON object"
    missing = [k for k in _RESULT_FIELDS if k not in result]
    if missing:
        return "'result' lacks " + ", ".join(repr(k) for k in missing)
    extra = sorted(set(result) - set(_RESULT_FIELDS))
    if extra:
        return "'result' has unexpected " + ", ".join(repr(k) for k in extra)
    if result["label"] != key.label or not isinstance(result["family"], str):
        return "'result' is not this trial's (label or family)"
    for name, want in (("seed", key.seed), ("candidate", key.candidate)):
        value = result[name]
        if isinstance(value, bool) or value != want or type(value) is not type(want):
            return f"'result' is not this trial's ({name} {value!r}, expected {want!r})"
    for name in ("overrides", "metrics", "curves", "info", "timings"):
        if not isinstance(result[name], dict):
            return f"'result.{name}' is not a JSON object"
    if not all(v is None or _number(v) for v in result["metrics"].values()):
        return "'result.metrics' has a value that is not a number"
    timings = result["timings"].values()
    if not all(_number(v) or (isinstance(v, list) and all(map(_number, v))) for v in timings):
        return "'result.timings' has a value that is not a number (or a list of numbers)"
    for name, curve in result["curves"].items():
        if not isinstance(curve, list) or not all(v is None or _number(v) for v in curve):
            return f"'result.curves.{name}' is not a list of numbers"
    if not isinstance(result["fallback"], str | None):
        return "'result.fallback' is not a string"
    return None


def load_stored_trials(
    trial_dir: Path,
    keys: list[TrialKey],
    prints: dict[TrialKey, str],
    digest: str,
    current: dict[TrialKey, dict[str, str]],
    names: dict[TrialKey, str] | None = None,
) -> tuple[dict[TrialKey, dict], dict[str, list[str]]]:
    """Stored trials still valid, and {reason: [file, ...]} of stored trials to re-run.

    ``current`` gives each trial's library versions (:func:`opboost.compose.study.results_json.
    trial_versions`): a stored trial is re-run when one of those changed, not when a version
    it does not depend on (an unrelated plugin's) did. A file that is not valid JSON, or valid
    JSON of another shape than a trial record, is listed under :data:`MALFORMED` as
    ``"<file> (<what is wrong>)"``: its trial is re-run.
    """
    names = names or trial_filenames(keys)
    done: dict[TrialKey, dict] = {}
    stale: dict[str, list[str]] = {}
    for key in keys:
        path = trial_dir / names[key]
        if not path.is_file():
            continue
        try:
            obj = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError) as exc:
            what = "not readable" if isinstance(exc, OSError) else "not valid JSON"
            stale.setdefault(MALFORMED, []).append(f"{path.name} ({what})")
            continue
        problem = _record_problem(obj, key)
        if problem is not None:
            stale.setdefault(MALFORMED, []).append(f"{path.name} ({problem})")
            continue
        stored_print, result = obj["fingerprint"], obj["result"]
        old_digest = obj.get("data_hash")
        if old_digest is not None and old_digest != digest:
            reason = (
                f"the data set's contents changed (data hash {old_digest[:12]} -> {digest[:12]})"
            )
        elif stored_print != prints[key]:
            reason = "the config, the data set or its contents changed"
        else:
            old, now = obj.get("versions") or {}, current[key]
            changed = [
                f"{name} {old.get(name, '?')} -> {version}"
                for name, version in sorted(now.items())
                if old.get(name) != version
            ]
            if not changed:
                done[key] = result
                continue
            reason = "library versions changed (" + ", ".join(changed) + ")"
        stale.setdefault(reason, []).append(path.name)
    return done, stale


def stored_timings(trial_dir: Path) -> dict[str, list[float]]:
    """{label: [total seconds of each stored trial]} from the trial files in ``trial_dir``
    (any stored trial, reusable or not: a timing is only an estimate)."""
    out: dict[str, list[float]] = {}
    if not trial_dir.is_dir():
        return out
    for path in sorted(trial_dir.glob("*.json")):
        try:
            result = json.loads(path.read_text(encoding="utf-8"))["result"]
            seconds = result["timings"]["total_seconds"]
            label = result["label"]
        except (OSError, ValueError, RecursionError, KeyError, TypeError):
            continue
        if _number(seconds) and math.isfinite(seconds) and isinstance(label, str):
            out.setdefault(label, []).append(float(seconds))
    return out
