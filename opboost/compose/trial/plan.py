"""The trials of a study: their keys, file names, search overrides, fingerprints, and each
trial resolved once into the plain data a worker runs (:class:`ResolvedTrial`)."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from opboost.compose.config.algorithms import parse_algorithm
from opboost.compose.config.experiment import ExperimentConfig, resolved_config
from opboost.compose.config.specs import AlgorithmSpec, ComponentSpec, LogsSpec, WorldSpec

__all__ = [
    "ResolvedTrial",
    "TrialKey",
    "fingerprint",
    "label_slug",
    "learning_curves",
    "plan_trials",
    "resolve_trial",
    "trial_filenames",
    "trial_names",
    "trial_overrides",
]


@dataclass(frozen=True)
class TrialKey:
    """One trial of a study: algorithm label, seed and search candidate (None: no search)."""

    label: str
    seed: int
    candidate: int | None = None

    @property
    def filename(self) -> str:
        """``<label slug>[__c<candidate>]__s<seed>.json`` (see :func:`label_slug`)."""
        return self.filename_with(label_slug(self.label))

    def filename_with(self, slug: str) -> str:
        cand = "" if self.candidate is None else f"__c{self.candidate}"
        return f"{slug}{cand}__s{self.seed}.json"


#: A label used as it is in file names: letters, digits, '.', '-' and single inner '_'.
_PLAIN_LABEL = re.compile(r"[A-Za-z0-9.-]+(?:_[A-Za-z0-9.-]+)*")


def label_slug(label: str, *, hashed: bool = False) -> str:
    """The file-name form of an algorithm label, unique per label.

    A plain label (letters, digits, ``.``, ``-`` and single inner ``_``, at most 64
    characters) is used as it is. Any other label -- or any label when ``hashed`` -- becomes
    ``<slug>~<hash>``: its characters outside that set replaced by ``_`` (at most 48 kept) and
    ``~`` plus 10 hex digits of the SHA-256 of the exact label, so that labels which slugify
    alike (``"BOPL (fast)"``, ``"BOPL [fast]"``) never share a file. ``~`` never occurs in a
    plain label, so a hashed name cannot collide with a plain one either.
    """
    if not hashed and len(label) <= 64 and _PLAIN_LABEL.fullmatch(label):
        return label
    slug = re.sub(r"[^A-Za-z0-9.-]+", "_", label).strip("_")[:48].strip("_") or "algorithm"
    return f"{slug}~{hashlib.sha256(label.encode('utf-8')).hexdigest()[:10]}"


def trial_filenames(keys: list[TrialKey]) -> dict[TrialKey, str]:
    """{key: its trial file name}; distinct for distinct keys, even on file systems that
    ignore case (plain labels equal but for case are hashed, see :func:`label_slug`)."""
    labels = list(dict.fromkeys(k.label for k in keys))
    folded: dict[str, list[str]] = {}
    for label in labels:
        folded.setdefault(label_slug(label).casefold(), []).append(label)
    slugs = {
        label: label_slug(label, hashed=len(folded[label_slug(label).casefold()]) > 1)
        for label in labels
    }
    return {k: k.filename_with(slugs[k.label]) for k in keys}


def learning_curves(config: ExperimentConfig) -> bool:
    """Whether the offline algorithms of ``config`` also record a learning curve over the
    logged rows: in an offline-vs-online study (an online learner, no ``[deployment]``, a
    data set) with ``[experiment] offline_curve_points`` > 0."""
    return (
        not config.on_logs
        and config.deployment is None
        and config.experiment["offline_curve_points"] > 0
        and any(a.family == "online" for a in config.algorithms)
    )


def plan_trials(config: ExperimentConfig) -> list[TrialKey]:
    """Every trial of the study, seed-major (all algorithms of seed 1, then seed 2, ...)."""
    keys = []
    for seed in config.experiment["seeds"]:
        for algo in config.algorithms:
            if algo.search is None:
                keys.append(TrialKey(algo.label, seed))
            else:
                n = len(algo.search.candidates())
                keys.extend(TrialKey(algo.label, seed, i) for i in range(n))
    return keys


def trial_overrides(config: ExperimentConfig, key: TrialKey) -> tuple[Any, dict[str, Any]]:
    """The algorithm of ``key`` with its search candidate applied, and the candidate's
    overrides ({dotted key: value}; {} without a search)."""
    algo = config.algorithm(key.label)
    if key.candidate is None:
        return algo, {}
    from opboost.compose.config.search import with_candidate

    overrides = algo.search.candidates()[key.candidate]
    table = with_candidate(algo.raw, overrides)
    return parse_algorithm(table, algo.index, config.file, search=False), overrides


@dataclass(frozen=True)
class ResolvedTrial:
    """One trial of a study, resolved once by the study: plain data (picklable) that a worker
    process receives and runs without the config.

    Attributes
    ----------
    key
        The trial's algorithm label, seed and search candidate.
    algorithm
        Its algorithm, with the search candidate's overrides applied.
    overrides
        The candidate's overrides ({dotted key: value}; {} without a search).
    data
        The study's ``[data]``: a data set, the user's logs (path resolved) or a world.
    simulation
        ``[simulation]`` with its defaults ({} on logs or a world).
    settings
        What the trial reads of ``[experiment]``: ``online_eval_points``,
        ``offline_curve_points`` (0: no learning curve for this trial) and ``confidence``.
    deployment
        ``[deployment]`` with its defaults in a deployment study, else None.
    data_dir
        Where data sets are cached and read (None: their default).
    """

    key: TrialKey
    algorithm: AlgorithmSpec
    overrides: dict[str, Any]
    data: ComponentSpec | LogsSpec | WorldSpec
    simulation: dict[str, Any]
    settings: dict[str, Any]
    deployment: dict[str, Any] | None = None
    data_dir: str | None = None

    @property
    def kind(self) -> str:
        """How the trial runs (each kind has its runner, ``opboost.compose.trial.run.RUNNERS``):
        ``"logs"`` on the user's logs, ``"catalogue"`` or ``"slates"`` on a world's stream,
        ``"stream"`` on a data set's stream (a deployment study), else ``"labelled"`` (a data
        set's logs, scored on its labelled test rows)."""
        if isinstance(self.data, LogsSpec):
            return "logs"
        if isinstance(self.data, WorldSpec):
            return self.data.name
        return "labelled" if self.deployment is None else "stream"


def resolve_trial(
    config: ExperimentConfig,
    key: TrialKey,
    data_dir: str | None = None,
    *,
    algorithm: AlgorithmSpec | None = None,
    overrides: dict[str, Any] | None = None,
) -> ResolvedTrial:
    """The :class:`ResolvedTrial` of ``key`` in ``config``.

    Parameters
    ----------
    config
        The study's parsed config.
    key
        The trial.
    data_dir
        Where data sets are cached and read (None: their default).
    algorithm, overrides
        The key's algorithm with its candidate applied and the candidate's overrides, when
        the caller has them already (else :func:`trial_overrides` derives them).
    """
    if algorithm is None:
        algorithm, overrides = trial_overrides(config, key)
    curve = algorithm.family == "offline" and learning_curves(config)
    experiment = config.experiment
    settings = {
        "online_eval_points": experiment["online_eval_points"],
        "offline_curve_points": experiment["offline_curve_points"] if curve else 0,
        "confidence": experiment["confidence"],
    }
    return ResolvedTrial(
        key=key,
        algorithm=algorithm,
        overrides=dict(overrides or {}),
        data=config.data,
        simulation=dict(config.simulation),
        settings=settings,
        deployment=None if config.deployment is None else dict(config.deployment),
        data_dir=data_dir,
    )


def trial_names(config: ExperimentConfig, key: TrialKey) -> set[str]:
    """Every string of a trial's resolved algorithm, search candidate and data set spec: the
    registry names of the components it uses (among other text)."""
    resolved = resolved_config(config)
    row = resolved["algorithms"][config.algorithm(key.label).index]
    _, overrides = trial_overrides(config, key)
    names: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, str):
            names.add(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list | tuple):
            for item in value:
                walk(item)

    walk([resolved["data"], row, overrides])
    return names


def fingerprint(config: ExperimentConfig, key: TrialKey, data_digest: str = "") -> str:
    """Hash of everything a trial's numbers depend on: the data set's spec and contents
    (``data_digest``, see :func:`opboost.compose.trial.trial_data.data_hash`), simulation,
    algorithm, seed, and in a deployment study its ``[deployment]`` section."""
    resolved = resolved_config(config)
    algo = config.algorithm(key.label)
    row = resolved["algorithms"][algo.index]
    _, overrides = trial_overrides(config, key)
    experiment = {k: resolved["experiment"][k] for k in ("online_eval_points",)}
    if learning_curves(config) and algo.family == "offline":  # its curve is part of the trial
        experiment["offline_curve_points"] = resolved["experiment"]["offline_curve_points"]
    spec = {
        "data": resolved["data"],
        "data_hash": data_digest,
        "simulation": resolved["simulation"],
        "experiment": experiment,
        "algorithm": row,
        "overrides": overrides,
        "seed": key.seed,
        "candidate": key.candidate,
    }
    if "deployment" in resolved:  # a deployment study's stream and exploration
        spec["deployment"] = resolved["deployment"]
    return hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()
