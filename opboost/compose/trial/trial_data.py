"""The data of one trial: splits and simulated logs, identical for every algorithm.

For trial seed s (``[simulation] split = "per_trial"``; "fixed" uses seed 0 for the splits):

1. load the data set (cached per process); optionally keep a seeded subset of ``max_rows``;
2. test rows: the data set's official ``test_index`` if it has one, else a stratified
   ``test_fraction`` of the rows;
3. validation rows: a stratified ``valid_fraction`` of the remaining (training) rows;
4. ``supervised_to_bandit`` on the training rows (seeded by s): the logger is trained on
   ``log_fraction`` of them and logs one action for each of the others;
5. the validation rows are logged by the same logging policy (seeded by s), so a validation
   split exists both with labels (true reward) and as bandit feedback (SNIPS, eval_data).

Every random choice draws from ``numpy.random.SeedSequence([s, stage])``.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from opboost.api.data.logged import LoggedBandit
from opboost.compose.config.specs import LogsSpec, WorldSpec
from opboost.simulation.supervised import SoftmaxLoggingPolicy, reward_table, supervised_to_bandit

__all__ = ["TrialData", "data_digest", "data_hash", "load_dataset", "prepare_trial"]

_SPLIT, _VALID, _LOG, _LOG_VALID = 0, 1, 2, 3


@dataclass(frozen=True, eq=False)
class TrialData:
    """What every algorithm of one trial sees.

    ``logged`` (n_log rows) is the training log and ``y_logged`` its hidden labels (the online
    learners stream these rows); ``valid_logged``/``y_valid`` the logged validation rows (None
    when ``valid_fraction`` is 0); ``X_test``/``y_test`` the labelled test rows.
    """

    name: str
    seed: int
    n_actions: int
    reward: Any
    logged: LoggedBandit
    y_logged: Any
    logging_policy: SoftmaxLoggingPolicy
    X_test: Any
    y_test: Any
    valid_logged: LoggedBandit | None
    y_valid: Any

    @property
    def X_valid(self) -> Any:
        """Contexts of the validation rows, (n_valid, d), or None."""
        return None if self.valid_logged is None else self.valid_logged.contexts

    def rows_text(self) -> str:
        """The row counts in words (for the command line)."""
        n = self.sizes()
        return (
            f"{n['n_logged']} logged training rows, {n['n_valid']} validation rows, "
            f"{n['n_test']} test rows"
        )

    def sizes(self) -> dict[str, int]:
        """Row counts: logged training rows, validation rows and test rows."""
        return {
            "n_logged": len(self.logged),
            "n_valid": 0 if self.valid_logged is None else len(self.valid_logged),
            "n_test": int(self.X_test.shape[0]),
        }


def _rng(seed: int, stage: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([int(seed), stage]))


@functools.lru_cache(maxsize=4)
def _load_cached(name: str, params_json: str, data_dir: str | None) -> Any:
    from opboost.core.registry import make

    return make("dataset", name, **json.loads(params_json)).load(data_dir)


def load_dataset(spec: Any, data_dir: str | None = None) -> Any:
    """The :class:`SupervisedData` of a ``ComponentSpec`` of kind "dataset" (cached)."""
    return _load_cached(spec.name, json.dumps(spec.params, sort_keys=True), data_dir)


def clear_dataset_cache() -> None:
    """Forget the data sets loaded so far (a new study re-reads them from their source)."""
    _load_cached.cache_clear()


def _hash_array(h: Any, name: str, value: Any) -> None:
    if value is None:
        h.update(f"{name}:none;".encode())
        return
    if sp.issparse(value):
        csr = sp.csr_matrix(value)
        h.update(f"{name}:csr{csr.shape};".encode())
        for part in (csr.data, csr.indices, csr.indptr):
            _hash_array(h, name + ".part", np.asarray(part))
        return
    array = np.ascontiguousarray(np.asarray(value))
    if array.dtype == object:  # e.g. string labels: hash their text
        h.update(f"{name}:object{array.shape};".encode())
        h.update(json.dumps(array.tolist(), default=str).encode())
        return
    h.update(f"{name}:{array.dtype.str}{array.shape};".encode())
    h.update(memoryview(array).cast("B"))


def data_hash(data: Any) -> str:
    """SHA-256 of a :class:`SupervisedData`'s contents: X, y, test_index (bytes, dtype,
    shape; CSR: data, indices, indptr), task, number of actions and reward structure."""
    h = hashlib.sha256()
    reward = data.reward
    meta = {"task": data.task, "n_actions": int(data.n_actions)}
    if isinstance(reward, str):
        meta["reward"] = reward
    h.update(json.dumps(meta, sort_keys=True).encode())
    if not isinstance(reward, str):
        if isinstance(reward, np.ndarray) or sp.issparse(reward):
            _hash_array(h, "reward", reward)
        else:
            h.update(repr(reward).encode())
    _hash_array(h, "X", data.X)
    _hash_array(h, "y", data.y)
    _hash_array(h, "test_index", data.test_index)
    return h.hexdigest()


def data_digest(spec: Any, data_dir: str | None = None) -> str:
    """The data hash of a study's ``[data]``: :func:`data_hash` of a registered data set, or
    :func:`~opboost.compose.trial.logs_data.logs_hash` of the user's own logs."""
    if isinstance(spec, LogsSpec):
        from opboost.compose.trial.logs_data import logs_hash

        return logs_hash(spec)
    if isinstance(spec, WorldSpec):
        from opboost.compose.trial.world_data import world_hash

        return world_hash(spec)
    return data_hash(load_dataset(spec, data_dir))


def _stratified(rows: np.ndarray, labels: Any, fraction: float, rng: np.random.Generator):
    """Split ``rows`` into (rest, picked) with ``fraction`` picked, stratified when possible."""
    from sklearn.model_selection import train_test_split

    seed = int(rng.integers(2**31 - 1))
    stratify = labels if labels is not None and np.ndim(labels) == 1 else None
    try:
        rest, picked = train_test_split(
            rows, test_size=fraction, random_state=seed, stratify=stratify
        )
    except ValueError:  # a class too small to stratify
        rest, picked = train_test_split(rows, test_size=fraction, random_state=seed)
    return np.sort(rest), np.sort(picked)


def _subsample(rows: np.ndarray, fraction: float, rng: np.random.Generator) -> np.ndarray:
    keep = max(2, round(fraction * len(rows)))
    return np.sort(rng.choice(rows, size=min(keep, len(rows)), replace=False))


def _log_rows(
    policy: SoftmaxLoggingPolicy, X: Any, y: Any, reward: Any, n_actions: int, rng: Any
) -> LoggedBandit:
    """Bandit feedback for labelled rows (X, y) from an already trained logging policy."""
    probs = policy.predict_proba(X)
    table = reward_table(y, reward, n_actions)
    u = rng.random(X.shape[0])[:, None]
    actions = np.minimum((u > probs.cumsum(axis=1)).sum(axis=1), n_actions - 1)
    rows = np.arange(X.shape[0])
    return LoggedBandit(
        contexts=X,
        actions=actions,
        propensities=probs[rows, actions],
        rewards=table[rows, actions],
        n_actions=n_actions,
        logging_probs=probs,
    )


def _labels_for_split(data: Any) -> Any:
    return data.y if data.task == "multiclass" else None


def _split_rows(
    data: Any, simulation: dict[str, Any], seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row indices (train, valid, test) of trial ``seed``: steps 1-3 of the module docstring
    (``valid`` is empty when ``valid_fraction`` is 0)."""
    split_seed = seed if simulation["split"] == "per_trial" else 0
    rng = _rng(split_seed, _SPLIT)
    labels = _labels_for_split(data)
    n = len(data)
    if data.test_index is not None:
        test = np.sort(np.asarray(data.test_index, dtype=np.int64))
        train = np.setdiff1d(np.arange(n), test)
    else:
        train, test = _stratified(np.arange(n), labels, simulation["test_fraction"], rng)
    max_rows = simulation["max_rows"]
    if max_rows and n > max_rows:
        train = _subsample(train, max_rows / n, rng)
        test = _subsample(test, max_rows / n, rng)
    valid = np.zeros(0, dtype=np.int64)
    if simulation["valid_fraction"] > 0:
        sub = None if labels is None else labels[train]
        keep, picked = _stratified(
            np.arange(len(train)), sub, simulation["valid_fraction"], _rng(split_seed, _VALID)
        )
        train, valid = train[keep], train[picked]
    return train, valid, test


def prepare_trial(
    data_spec: Any, simulation: dict[str, Any], seed: int, data_dir: str | None = None
) -> Any:
    """Split and simulate the logs of trial ``seed`` (see the module docstring); with the
    user's own logs (a :class:`LogsSpec`), split off the held-out logs instead
    (:func:`~opboost.compose.trial.logs_data.prepare_logs_trial`); for a catalogue world, draw
    it (:func:`~opboost.compose.trial.world_data.prepare_world_trial`)."""
    if isinstance(data_spec, LogsSpec):
        from opboost.compose.trial.logs_data import prepare_logs_trial

        return prepare_logs_trial(data_spec, seed)
    if isinstance(data_spec, WorldSpec):
        from opboost.compose.trial.world_data import prepare_world_trial

        return prepare_world_trial(data_spec, seed)
    data = load_dataset(data_spec, data_dir)
    if data.task == "regression":
        raise ValueError(
            f"data set {data.name!r} is a regression task; studies need a classification "
            f"data set (multiclass or multilabel rewards)."
        )
    train, valid, test = _split_rows(data, simulation, seed)
    sim = supervised_to_bandit(
        data.X[train],
        data.y[train],
        n_actions=data.n_actions,
        reward=data.reward,
        log_fraction=simulation["log_fraction"],
        epsilon=simulation["epsilon"],
        logging_C=simulation["logging_C"],
        random_state=_rng(seed, _LOG),
    )
    valid_logged = y_valid = None
    if len(valid):
        y_valid = data.y[valid]
        valid_logged = _log_rows(
            sim.logging_policy,
            data.X[valid],
            y_valid,
            data.reward,
            data.n_actions,
            _rng(seed, _LOG_VALID),
        )
    return TrialData(
        name=data.name,
        seed=int(seed),
        n_actions=data.n_actions,
        reward=data.reward,
        logged=sim.logged,
        y_logged=sim.y_logged,
        logging_policy=sim.logging_policy,
        X_test=data.X[test],
        y_test=data.y[test],
        valid_logged=valid_logged,
        y_valid=y_valid,
    )


def dense(X: Any) -> np.ndarray:
    """``X`` as a dense float64 array (online learners take dense rows)."""
    return X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
