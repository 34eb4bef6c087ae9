"""The data of one trial of a study on the user's own logs (``[data] path = ...``).

The file is read once per process and turned into a :class:`~opboost.LoggedBandit` with
:meth:`~opboost.LoggedBandit.from_dataframe` and the config's column mapping. For trial seed
s, the held-out logs are ``round(holdout_fraction * n)`` rows (at least one) drawn without
replacement by ``numpy.random.default_rng(numpy.random.SeedSequence([s, 0])).permutation(n)``
(its first rows; :func:`holdout_rows`); every algorithm of the trial is fitted on the other
rows and judged on them. No labels are needed.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from opboost.api.data.logged import LoggedBandit
from opboost.compose.config.logs_table import check_logs_file
from opboost.compose.config.specs import LogsSpec

__all__ = ["LogsTrialData", "holdout_rows", "load_logs", "logs_hash", "prepare_logs_trial"]


@dataclass(frozen=True, eq=False)
class LogsTrialData:
    """What every algorithm of one trial on logs sees: ``logged``, the training rows, and
    ``holdout``, the held-out rows that judge the policies."""

    name: str
    seed: int
    n_actions: int
    logged: LoggedBandit
    holdout: LoggedBandit

    def rows_text(self) -> str:
        """The row counts in words (for the command line)."""
        return f"{len(self.logged)} logged training rows, {len(self.holdout)} held-out rows"

    def sizes(self) -> dict[str, int]:
        """Row counts: logged training rows and held-out rows."""
        return {"n_logged": len(self.logged), "n_holdout": len(self.holdout)}


def _mapping(spec: LogsSpec) -> dict[str, Any]:
    """The keyword arguments of ``LoggedBandit.from_dataframe`` of ``spec``."""
    return {
        "contexts": list(spec.contexts),
        "action": spec.action,
        "propensity": spec.propensity,
        "reward": spec.reward,
        "actions": None if spec.actions is None else list(spec.actions),
        "n_actions": spec.n_actions,
        "position": spec.position,
    }


@functools.lru_cache(maxsize=2)
def _load_cached(file_path: str, mapping_json: str, mtime_ns: int) -> LoggedBandit:
    import pandas as pd

    path = Path(file_path)
    frame = pd.read_csv(path) if path.suffix.lower() == ".csv" else pd.read_parquet(path)
    try:
        return LoggedBandit.from_dataframe(frame, **json.loads(mapping_json))
    except (ValueError, TypeError) as exc:
        raise ValueError(f"logs file {path}: {exc}") from exc


def load_logs(spec: LogsSpec) -> LoggedBandit:
    """Every row of the logs file of ``spec`` (cached per process while the file is unchanged)."""
    check_logs_file(spec)
    mapping = json.dumps(_mapping(spec), sort_keys=True)
    return _load_cached(spec.file_path, mapping, Path(spec.file_path).stat().st_mtime_ns)


def logs_hash(spec: LogsSpec) -> str:
    """SHA-256 of the logs file's bytes and the column mapping (a study's data hash)."""
    check_logs_file(spec)
    h = hashlib.sha256(json.dumps(_mapping(spec), sort_keys=True).encode())
    with open(spec.file_path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def holdout_rows(n: int, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted row indices (train, held-out) of trial ``seed`` (see the module docstring)."""
    order = np.random.default_rng(np.random.SeedSequence([int(seed), 0])).permutation(n)
    n_holdout = min(n - 1, max(1, round(fraction * n)))
    return np.sort(order[n_holdout:]), np.sort(order[:n_holdout])


def prepare_logs_trial(spec: LogsSpec, seed: int) -> LogsTrialData:
    """The training and held-out logs of trial ``seed``."""
    logs = load_logs(spec)
    if len(logs) < 2:
        raise ValueError(
            f"logs file {spec.file_path} has {len(logs)} row; a study needs rows to fit on "
            f"and rows to hold out."
        )
    train, holdout = holdout_rows(len(logs), spec.holdout_fraction, seed)
    return LogsTrialData(
        name=spec.name,
        seed=int(seed),
        n_actions=logs.n_actions,
        logged=logs.subset(train),
        holdout=logs.subset(holdout),
    )
