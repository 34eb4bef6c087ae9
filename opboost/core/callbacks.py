"""The built-in fit callbacks: early stopping, progress (``opboost.core.progress``), history
and checkpoints.

The interface they implement ([`Callback`][opboost.api.callback.Callback], which sees a frozen
[`RoundEnv`][opboost.api.callback.RoundEnv]) is in [`opboost.api.callback`][opboost.api.callback].

Resuming: ``Checkpoint(directory, every=k)`` (``resume=True`` by default) writes the ensemble (via
[`Policy.save`][opboost.api.policy.Policy.save]), the booster state (JSON) and the training scores
(``.npy``, read with ``allow_pickle=False``) every k rounds and at the end of the fit. A later
``Booster.fit(..., callbacks=[Checkpoint(directory, every=k)])`` with the same data and settings
continues from the last checkpoint and ends with bit-identical predictions.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from numbers import Real
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from opboost.api.callback import FIT_METRICS, Callback, RoundEnv
from opboost.api.constraints import InstanceOf, Interval, Options
from opboost.api.exceptions import InvalidParameterError
from opboost.api.files.atomic import fsync_dir, write_atomic
from opboost.api.hookspecs import hookimpl
from opboost.core.progress import Progress

__all__ = ["Callback", "Checkpoint", "EarlyStopping", "History", "Progress", "RoundEnv"]


class EarlyStopping(Callback):
    """Stop when ``metric`` has not improved by more than ``min_delta`` for ``patience`` rounds.

    ``metric`` is any train or eval metric name (e.g. "eval_snips_argmax", which needs
    ``eval_data``, or "train_objective"). ``mode`` "auto" minimises names ending in
    "objective" or "norm" and maximises the rest. Like LightGBM's early stopping, the fitted
    policy ends at the best round (``best_round_``; the ``patience`` worse rounds after it are
    dropped, while ``history_`` and ``n_rounds_`` keep every round run). After resuming from a
    checkpoint, a best round before the checkpoint cannot be restored: the policy then keeps
    the rounds up to the last best seen since the resume.
    """

    name: ClassVar[str] = "early_stopping"
    chooses_rounds: ClassVar[bool] = True
    order: ClassVar[int] = 30
    _parameter_constraints: ClassVar[dict] = {
        "metric": [
            Options(
                FIT_METRICS,
                text="a metric a fit records, one of {values}",
                fix="eval_* metrics need Booster.fit(..., eval_data=...), select_* ones "
                "validation_fraction",
            )
        ],
        "patience": [
            Interval(int, 1, None, fix="use the number of rounds without improvement to tolerate")
        ],
        "min_delta": [Interval(Real, 0.0, None)],
        "mode": [Options(("auto", "min", "max"))],
    }

    def __init__(
        self,
        *,
        metric: str = "eval_snips_argmax",
        patience: int = 10,
        min_delta: float = 0.0,
        mode: str = "auto",
    ) -> None:
        self.metric = metric
        self.patience = patience
        self.min_delta = min_delta
        self.mode = mode

    def on_fit_start(self, env: RoundEnv) -> None:
        self.validate_params()
        auto_min = self.metric.endswith(("objective", "norm"))
        self._sign = -1.0 if self.mode == "min" or (self.mode == "auto" and auto_min) else 1.0
        self._best, self._best_round, self._wait = -np.inf, 0, 0
        if self.metric in env.history:  # resumed fit: replay the recorded rounds
            for i, value in enumerate(env.history[self.metric]):
                self._update(float(value), i + 1)

    def _update(self, value: float, round_: int) -> bool:
        """Record ``value`` of round ``round_``; whether it is a new best."""
        if self._sign * value > self._best + self.min_delta:
            self._best, self._best_round, self._wait = self._sign * value, round_, 0
            return True
        self._wait += 1
        return False

    def on_round_end(self, env: RoundEnv) -> None:
        metrics = env.metrics
        if self.metric not in metrics:
            raise InvalidParameterError(
                f"The 'metric' parameter of EarlyStopping is {self.metric!r}, which this fit "
                f"does not compute. Available: {', '.join(sorted(metrics))}; eval_* metrics "
                f"need Booster.fit(..., eval_data=...)."
            )
        if self._update(float(metrics[self.metric]), env.round):
            env.mark_best()
        if self._wait >= self.patience:
            env.request_stop(
                f"patience {self.patience} reached: {self.metric} best "
                f"{self._sign * self._best:.6g} at round {self._best_round}"
            )


class History(Callback):
    """Records every metric of every round in ``history_`` (name -> (rounds,) array)."""

    name: ClassVar[str] = "history"
    order: ClassVar[int] = 70

    def __init__(self) -> None:
        pass

    def on_fit_start(self, env: RoundEnv) -> None:
        self._records = {k: list(env.history[k]) for k in env.history}
        self._records.setdefault("round", list(range(1, env.round + 1)))

    def on_round_end(self, env: RoundEnv) -> None:
        self._records["round"].append(env.round)
        for key, value in env.metrics.items():
            self._records.setdefault(key, []).append(float(value))
        self.history_ = {k: np.asarray(v) for k, v in self._records.items()}

    def on_fit_end(self, env: RoundEnv) -> None:
        self.history_ = {k: np.asarray(v) for k, v in self._records.items()}


class Checkpoint(Callback):
    """Every ``every`` rounds (and at the end) write the fit state to ``directory``.

    Layout: ``LATEST`` names the newest complete ``round-NNNNNN/`` directory holding
    ``state.json``, ``policy/`` (the ensemble so far) and ``scores.npy``
    (+ ``eval_scores.npy``, ``best_policy/`` when a callback marked an earlier round as
    the best, so that a resumed fit still ends there, and ``selection_*.npy`` with the
    held-out choice's scores, so that a resumed fit chooses as an uninterrupted one). A write
    goes: new round directory complete and fsynced (under a unique temporary name) ->
    ``LATEST`` switched atomically -> older rounds removed, so a fit killed at any point
    resumes from the previous checkpoint or the new one. With ``resume=True`` a fit with this
    callback continues from ``LATEST`` when it exists.
    """

    name: ClassVar[str] = "checkpoint"
    order: ClassVar[int] = 90
    writes_checkpoints: ClassVar[bool] = True
    _parameter_constraints: ClassVar[dict] = {
        "directory": [InstanceOf((str, os.PathLike), "a path (str or os.PathLike)")],
        "every": [Interval(int, 1, None, fix="write a checkpoint every k >= 1 rounds")],
        "resume": ["boolean"],
    }

    def __init__(
        self, directory: str | os.PathLike = "checkpoints", *, every: int = 10, resume: bool = True
    ) -> None:
        self.directory = directory
        self.every = every
        self.resume = resume

    def _check(self) -> Path:
        self.validate_params()
        return Path(self.directory)

    def on_round_end(self, env: RoundEnv) -> None:
        self._check()
        if env.round % self.every == 0:
            self.write(env)

    def on_fit_end(self, env: RoundEnv) -> None:
        self.write(env)

    def write(self, env: RoundEnv) -> Path:
        """Write the current fit state; returns the round directory.

        Order (crash-safe at every step): the new round directory is written under a unique
        temporary name and fsynced; ``LATEST`` is switched to it atomically (unique temporary
        file, fsync, ``os.replace``); only then are older rounds removed. ``LATEST`` therefore
        always names a complete directory: a fit killed at any point resumes from the old
        checkpoint or from the new one.
        """
        root = self._check()
        state = env.snapshot()
        root.mkdir(parents=True, exist_ok=True)
        name = f"round-{state['round']:06d}"
        staging = Path(tempfile.mkdtemp(prefix=f".{name}.tmp-", dir=root))
        try:
            state["policy"].save(staging / "policy")
            np.save(staging / "scores.npy", state["scores"], allow_pickle=False)
            if state["eval_scores"] is not None:
                np.save(staging / "eval_scores.npy", state["eval_scores"], allow_pickle=False)
            if state.get("best_policy") is not None:  # a callback's best round (mark_best)
                state["best_policy"].save(staging / "best_policy")
            keys = ("round", "seed", "fingerprint", "stop_reason", "history", "best_round")
            meta = {k: state.get(k) for k in keys}
            meta["reward_start"] = state.get("reward_start")
            meta["selection"] = _write_selection(staging, state.get("selection"))
            (staging / "state.json").write_text(json.dumps(meta), encoding="utf-8")
            _fsync_tree(staging)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        fsync_dir(root)
        target = root / name
        if target.exists():  # e.g. the fit ends on a checkpoint round: LATEST may name it
            _point_latest(root, staging.name)  # LATEST -> the complete staging copy first
            shutil.rmtree(target)
        os.replace(staging, target)
        fsync_dir(root)
        _point_latest(root, target.name)
        for old in root.iterdir():  # older rounds, staging leftovers of killed writes
            if old.name != target.name and old.name.startswith(("round-", ".round-")):
                if old.is_dir():
                    shutil.rmtree(old, ignore_errors=True)
            elif old.name.startswith(".LATEST.") and old.name.endswith(".tmp"):
                old.unlink(missing_ok=True)
        return target

    def load_checkpoint(self) -> dict[str, Any] | None:
        """The last checkpoint in ``directory`` (None when absent or ``resume`` is False)."""
        root = self._check()
        if not self.resume or not (root / "LATEST").is_file():
            return None
        from opboost.core.policy_loading import load_policy

        target = _resolve(root, (root / "LATEST").read_text(encoding="utf-8").strip())
        try:
            state = json.loads((target / "state.json").read_text(encoding="utf-8"))
            state["ensemble"] = load_policy(target / "policy").ensemble
            state["scores"] = np.load(target / "scores.npy", allow_pickle=False)
            path = target / "eval_scores.npy"
            state["eval_scores"] = np.load(path, allow_pickle=False) if path.exists() else None
            best = target / "best_policy"
            state["best_ensemble"] = load_policy(best).ensemble if best.is_dir() else None
            state["selection"] = _read_selection(target, state.get("selection"))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(
                f"Checkpoint {target} is unreadable ({exc}); delete {root} to start afresh."
            ) from exc
        state["directory"] = str(root)
        return state


def _write_selection(staging: Path, selection: dict[str, Any] | None) -> dict[str, Any] | None:
    """Save the arrays of a held-out choice's ``selection`` state as ``selection_NAME.npy``
    in ``staging``; its numbers (and the arrays' names) for ``state.json``."""
    if selection is None:
        return None
    arrays = {k: v for k, v in selection.items() if isinstance(v, np.ndarray)}
    for key, values in arrays.items():
        np.save(staging / f"selection_{key}.npy", values, allow_pickle=False)
    numbers = {k: v for k, v in selection.items() if k not in arrays}
    return {**numbers, "arrays": sorted(arrays)}


def _read_selection(target: Path, saved: Any) -> dict[str, Any] | None:
    """A held-out choice's state as :func:`_write_selection` left it in ``target``; ValueError
    naming what is malformed (a file from elsewhere is checked before a fit reads it)."""
    if saved is None:
        return None
    if not isinstance(saved, dict) or set(saved) != {"arrays", "best_round", "best", "last"}:
        raise ValueError(f"state.json's selection is malformed: {saved!r:.120}")
    names = saved["arrays"]
    if not isinstance(names, list) or not {"start_scores", "scores"} <= set(names) <= {
        "start_scores",
        "scores",
        "best_rows",
    }:
        raise ValueError(f"state.json names selection arrays {names!r:.120}")
    arrays = {k: np.load(target / f"selection_{k}.npy", allow_pickle=False) for k in names}
    start, now = arrays["start_scores"], arrays["scores"]
    rows = arrays.get("best_rows", np.empty(start.shape[:1]))
    if not (start.ndim == 2 and now.shape == start.shape and rows.shape == start.shape[:1]):
        shapes = {k: v.shape for k, v in arrays.items()}
        raise ValueError(f"selection arrays of mismatched shapes {shapes}")
    if any(v.dtype.kind != "f" for v in arrays.values()):
        raise ValueError(
            f"selection arrays must be floats, got {[str(v.dtype) for v in arrays.values()]}"
        )
    best_round = saved["best_round"]
    estimates = [saved["last"]] + ([] if best_round is None else [saved["best"]])
    valid = best_round is None or (isinstance(best_round, int) and best_round >= 0)
    for estimate in estimates:
        valid = valid and isinstance(estimate, list) and len(estimate) == 4
        valid = valid and all(isinstance(v, int | float) for v in estimate)
    if not valid:
        raise ValueError(f"state.json's selection estimates are malformed: {saved!r:.120}")
    return {k: v for k, v in saved.items() if k != "arrays"} | arrays


def _fsync_tree(root: Path) -> None:
    """fsync every file and directory under ``root`` (and ``root``)."""
    for dirpath, _, files in os.walk(root):
        for name in files:
            with open(os.path.join(dirpath, name), "rb") as fh:
                os.fsync(fh.fileno())
        fsync_dir(Path(dirpath))


def _resolve(root: Path, name: str) -> Path:
    """The directory ``LATEST``'s ``name`` refers to.

    While a round is rewritten ``LATEST`` briefly names the complete staging copy
    ``.round-NNNNNN.tmp-*``, which is then renamed (atomically) to ``round-NNNNNN``: when the
    staging copy is gone, it is that round directory.
    """
    path = root / name
    if not path.exists() and name.startswith(".round-") and ".tmp-" in name:
        return root / name[1:].split(".tmp-", 1)[0]
    return path


def _point_latest(root: Path, name: str) -> None:
    """Make ``root/LATEST`` name ``name`` atomically."""
    write_atomic(root / "LATEST", name)


@hookimpl
def opboost_register_callbacks():
    return [EarlyStopping, Progress, History, Checkpoint]
