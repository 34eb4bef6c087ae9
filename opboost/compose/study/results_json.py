"""The content of a study's results.json: trials in plan order, search selections, summary,
fallbacks, failed trials, library versions and plugins."""

from __future__ import annotations

import sys
from typing import Any

from opboost.api.exceptions import OpboostError
from opboost.compose.config.experiment import ExperimentConfig, resolved_config
from opboost.compose.trial.plan import TrialKey

__all__ = [
    "FORMAT",
    "PLUGIN_PREFIX",
    "assemble",
    "comparable",
    "plugins",
    "trial_versions",
    "versions",
]

FORMAT = "opboost-study-1"
#: How :func:`versions` names an installed plugin distribution.
PLUGIN_PREFIX = "plugin "


def versions() -> dict[str, str]:
    """Versions of Python, opboost, the numerical libraries results depend on and every
    installed opboost plugin (``"plugin <distribution>"``)."""
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": sys.version.split()[0]}
    for name in ("opboost", "numpy", "scipy", "scikit-learn", "lightgbm", "river"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    try:
        from opboost.core.registry import get_registry

        for info in get_registry().plugins:
            if not info.builtin:
                out[f"{PLUGIN_PREFIX}{info.distribution}"] = info.version
    except OpboostError:  # pragma: no cover - a broken plugin already failed the config
        pass
    return out


def trial_versions(
    config: ExperimentConfig, keys: list[TrialKey], current: dict[str, str]
) -> dict[TrialKey, dict[str, str]]:
    """{key: the entries of ``current`` (:func:`versions`) its numbers depend on}: Python,
    opboost and the numerical libraries, and only the plugin distributions that provide a
    component the trial names (:func:`opboost.compose.trial.plan.trial_names`: its
    algorithm, search candidate or data set). Installing or upgrading another plugin leaves
    the trial's stored record valid."""
    from opboost.compose.trial.plan import trial_names
    from opboost.core.registry import get_registry

    provides = {}  # distribution -> names of its components
    for info in get_registry().plugins:
        if not info.builtin:
            names = {n for kind_names in info.components.values() for n in kind_names}
            provides.setdefault(info.distribution, set()).update(names)
    out = {}
    for key in keys:
        names = trial_names(config, key)
        used = {dist for dist, provided in provides.items() if provided & names}
        out[key] = {
            name: version
            for name, version in current.items()
            if not name.startswith(PLUGIN_PREFIX) or name[len(PLUGIN_PREFIX) :] in used
        }
    return out


def comparable(results: Any) -> Any:
    """``results`` without any ``timings`` entry (for comparing two runs of a study)."""
    if isinstance(results, dict):
        return {k: comparable(v) for k, v in results.items() if k != "timings"}
    if isinstance(results, list):
        return [comparable(v) for v in results]
    return results


def plugins() -> list[dict[str, Any]]:
    """Every registered plugin: ``name``, ``distribution``, ``version`` and ``builtin``
    (results.json's ``plugins``)."""
    try:
        from opboost.core.registry import get_registry

        return [
            {
                "name": info.name,
                "distribution": info.distribution,
                "version": info.version,
                "builtin": bool(info.builtin),
            }
            for info in get_registry().plugins
        ]
    except OpboostError:  # pragma: no cover - a broken plugin already failed the config
        return []


def assemble(
    config: ExperimentConfig,
    keys: list[TrialKey],
    done: dict,
    failed: dict | None = None,
    *,
    library_versions: dict[str, str] | None = None,
    plugin_list: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """results.json's content (without timings) from finished trials, in plan order.

    ``failed`` ({key: failure entry}) are listed among the trials and in ``failed``; the
    summary and the search use the successful trials only.
    """
    from opboost.compose.study.report import fallback_counts, summarise

    failed = failed or {}
    trials = [done[k] if k in done else failed[k] for k in keys]
    ok = [t for t in trials if not t.get("failed")]
    metric = "valid_reward" if config.experiment["selection"] == "true" else "valid_snips"
    reported, search = _search_selection(config, ok, metric)
    confidence = config.experiment["confidence"]
    return {
        "format": FORMAT,
        "config_file": str(config.file),
        "config": resolved_config(config),
        "seeds": list(config.experiment["seeds"]),
        "versions": versions() if library_versions is None else library_versions,
        "plugins": plugins() if plugin_list is None else plugin_list,
        "families": {a.label: a.family for a in config.algorithms},
        "summary": {label: summarise(ts, confidence) for label, ts in reported.items()},
        "fallbacks": fallback_counts(reported, {a.label: a.family for a in config.algorithms}),
        "search": search,
        "trials": trials,
        "failed": [
            {k: failed[key][k] for k in ("label", "seed", "candidate", "error")}
            for key in keys
            if key in failed
        ],
    }


def _search_selection(
    config: ExperimentConfig, ok: list[dict], metric: str
) -> tuple[dict[str, list[dict]], dict[str, Any]]:
    """{label: its reported trials} (the selected candidate of a search) and results.json's
    ``search`` ({label: metric, selected candidate, its overrides, every candidate's mean
    validation ``metric``}) from the successful trials ``ok``."""
    from opboost.compose.config.search import select_candidate

    reported: dict[str, list[dict]] = {}
    search: dict[str, Any] = {}
    for algo in config.algorithms:
        mine = [t for t in ok if t["label"] == algo.label]
        if algo.search is None:
            reported[algo.label] = mine
            continue
        scores: dict[int, list[float]] = {}
        for t in mine:
            value = t["metrics"].get(metric)
            scores.setdefault(t["candidate"], [])
            if value is not None:
                scores[t["candidate"]].append(value)
        chosen = select_candidate(scores) if scores else None
        reported[algo.label] = [t for t in mine if t["candidate"] == chosen]
        search[algo.label] = {
            "metric": metric,
            "selected": chosen,
            "selected_overrides": reported[algo.label][0]["overrides"] if mine else None,
            "candidates": [
                {
                    "candidate": i,
                    "overrides": next(t["overrides"] for t in mine if t["candidate"] == i),
                    "mean_validation": (sum(v) / len(v)) if v else None,
                }
                for i, v in sorted(scores.items())
            ],
        }
    return reported, search
