"""Logged bandit feedback as Dask arrays, partitioned by rows across a cluster's workers.

:class:`DaskLoggedBandit` holds lazy (or persisted) Dask arrays with the same row chunks:
contexts (n, d), actions, propensities and rewards (n,). Each row chunk is one partition;
:meth:`DaskLoggedBandit.partitions` turns every partition into an ordinary, validated
:class:`opboost.LoggedBandit` on the worker that holds it, so the values are checked there
(an error names the partition and its rows) and never travel to the client.
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from opboost.api.data.field_checks import check_columns
from opboost.api.data.logged import LoggedBandit

if TYPE_CHECKING:  # pragma: no cover
    import dask.array as da

__all__ = ["DaskLoggedBandit", "partition_bandit"]

_FIELDS = ("contexts", "actions", "propensities", "rewards")


def _fix_unknown(field: str) -> str:
    return (
        f"DaskLoggedBandit: {field} has unknown chunk sizes (NaN), as arrays from a Dask "
        f"DataFrame's .values do; build them with ddf.to_dask_array(lengths=True) or call "
        f"array.compute_chunk_sizes() first."
    )


@dataclass(frozen=True, eq=False)
class DaskLoggedBandit:
    """Logged feedback S = (x_i, a_i, p_i, r_i) as Dask arrays partitioned by rows.

    Parameters
    ----------
    contexts
        dask array (n, d) of floats, chunked by rows only (one column chunk).
    actions
        dask array (n,) of integers in [0, n_actions).
    propensities
        dask array (n,) in (0, 1].
    rewards
        dask array (n,) of finite floats.
    n_actions
        K >= 2.

    Notes
    -----
    All four arrays must have the same, known row chunks: chunk p of each is partition p.
    Shapes and chunks are checked here; values are checked per partition on the workers
    when a fit starts ([`partitions`][opboost.dask.data.DaskLoggedBandit.partitions]). Fit with
    ``Booster(base_learner="lightgbm_dask_tree").fit(data)`` (see docs/dask.md and docs/scaling.md).
    """

    contexts: da.Array
    actions: da.Array
    propensities: da.Array
    rewards: da.Array
    n_actions: int

    def __post_init__(self) -> None:
        import dask.array as da

        K = self.n_actions
        if isinstance(K, bool) or not isinstance(K, numbers.Integral) or K < 2:
            raise ValueError(f"DaskLoggedBandit: n_actions must be an int >= 2. Got {K!r}.")
        object.__setattr__(self, "n_actions", int(K))
        for field in _FIELDS:
            value = getattr(self, field)
            if not isinstance(value, da.Array):
                raise TypeError(
                    f"DaskLoggedBandit: {field} must be a dask.array.Array. Got "
                    f"{type(value).__name__}; wrap in-memory data with "
                    f"DaskLoggedBandit.from_logged_bandit(data, npartitions=...) or "
                    f"dask.array.from_array(x, chunks=...)."
                )
            if any(math.isnan(c) for dim in value.chunks for c in dim):
                raise ValueError(_fix_unknown(field))
        X = self.contexts
        if X.ndim != 2:
            raise ValueError(
                f"DaskLoggedBandit: contexts must be 2-D (n, d). Got shape {X.shape}; reshape a "
                f"single feature with x.reshape(-1, 1)."
            )
        if X.dtype.kind not in "fiub":
            raise ValueError(
                f"DaskLoggedBandit: contexts must be numeric. Got dtype {X.dtype}; cast with "
                f"contexts.astype('float64')."
            )
        if len(X.chunks[1]) != 1:
            raise ValueError(
                f"DaskLoggedBandit: contexts must be chunked by rows only, each partition "
                f"holding all {X.shape[1]} columns. Got column chunks {X.chunks[1]}; use "
                f"contexts.rechunk({{1: -1}})."
            )
        rows = X.chunks[0]
        if X.shape[0] == 0:
            raise ValueError("DaskLoggedBandit: contexts has 0 rows; need at least one example.")
        for field in _FIELDS[1:]:
            value = getattr(self, field)
            if value.ndim != 1 or value.shape[0] != X.shape[0]:
                raise ValueError(
                    f"DaskLoggedBandit: {field} must have shape ({X.shape[0]},) to match "
                    f"contexts {X.shape}. Got shape {value.shape}."
                )
            if value.chunks[0] != rows:
                raise ValueError(
                    f"DaskLoggedBandit: {field} must have the row chunks of contexts, so that "
                    f"partition p of every array holds the same rows. Got {_short(value.chunks[0])}"
                    f" but contexts has {_short(rows)}; use {field}.rechunk(contexts.chunks[0])."
                )
        if self.actions.dtype.kind not in "iuf":
            raise ValueError(
                f"DaskLoggedBandit: actions must be integers in [0, {K}). Got dtype "
                f"{self.actions.dtype}; encode actions as 0..K-1."
            )

    # --- constructors -----------------------------------------------------------------------

    @classmethod
    def from_dask_arrays(
        cls,
        contexts: da.Array,
        actions: da.Array,
        propensities: da.Array,
        rewards: da.Array,
        *,
        n_actions: int,
    ) -> DaskLoggedBandit:
        """From Dask arrays with the same row chunks (see the class docstring)."""
        return cls(contexts, actions, propensities, rewards, n_actions)

    @classmethod
    def from_logged_bandit(cls, data: LoggedBandit, *, npartitions: int) -> DaskLoggedBandit:
        """Split an in-memory (dense) [`LoggedBandit`][opboost.api.data.logged.LoggedBandit] into
        ``npartitions`` row partitions of near-equal size; for tests and for data that fits the
        client."""
        import dask.array as da

        if not isinstance(data, LoggedBandit):
            raise TypeError(
                f"DaskLoggedBandit.from_logged_bandit: data must be an opboost.LoggedBandit. "
                f"Got {type(data).__name__}."
            )
        if data.is_sparse:
            raise ValueError(
                "DaskLoggedBandit.from_logged_bandit: sparse contexts are not supported by the "
                "distributed fit; pass dense contexts (data.contexts.toarray())."
            )
        n = len(data)
        if isinstance(npartitions, bool) or not isinstance(npartitions, numbers.Integral):
            raise TypeError(f"npartitions must be an int. Got {npartitions!r}.")
        if not 1 <= npartitions <= n:
            raise ValueError(
                f"DaskLoggedBandit.from_logged_bandit: npartitions must be in [1, {n}] (rows). "
                f"Got {npartitions}."
            )
        bounds = np.linspace(0, n, int(npartitions) + 1).round().astype(int)

        def arr(x: np.ndarray) -> da.Array:
            # One graph per chunk (not slices of one shared array key), so that building a
            # partition on a worker never ships the whole array there.
            x = np.asarray(x)
            chunks = [x[a:b] for a, b in itertools.pairwise(bounds)]
            return da.concatenate([da.from_array(c, chunks=c.shape) for c in chunks])

        return cls(
            arr(data.contexts),
            arr(data.actions),
            arr(data.propensities),
            arr(data.rewards),
            data.n_actions,
        )

    @classmethod
    def from_parquet(
        cls,
        path: Any,
        *,
        context_columns: Sequence[str],
        action_column: str,
        reward_column: str,
        propensity_column: str,
        n_actions: int,
        **read_kwargs: Any,
    ) -> DaskLoggedBandit:
        """Read partitioned Parquet files with ``dask.dataframe.read_parquet``: one row
        partition per partition of the DataFrame (after dask's own file grouping), empty
        ones dropped. ``read_kwargs`` go to ``read_parquet`` (e.g. ``storage_options``).
        Counts each partition's rows once (a pass that reads the files on the workers, if a
        client is running); the fit reads them again, each on the worker that keeps it."""
        import dask
        import dask.array as da
        import dask.dataframe as dd
        from dask import delayed

        if not context_columns:
            raise ValueError("DaskLoggedBandit.from_parquet: context_columns is empty.")
        columns = [*context_columns, action_column, propensity_column, reward_column]
        try:
            ddf = dd.read_parquet(path, **read_kwargs)
        except (OSError, ValueError) as exc:  # pyarrow's errors name no file
            raise _unreadable(path, exc) from exc
        check_columns(columns, ddf.columns, "DaskLoggedBandit.from_parquet", str(path))
        _check_numeric(ddf, columns, path)
        # Per-partition frames of the optimised graph: to_dask_array(lengths=...) on the
        # frame itself can refer to partitions that dask's optimiser has since merged.
        frames = ddf[columns].to_delayed()
        try:
            lengths = dask.compute(*(delayed(len)(frame) for frame in frames))
        except (OSError, ValueError) as exc:
            raise _unreadable(path, exc) from exc
        kept = [(f, int(m)) for f, m in zip(frames, lengths, strict=True) if m]
        if not kept:
            raise ValueError(f"DaskLoggedBandit.from_parquet: {path} holds no rows.")
        d = len(context_columns)

        def field(names: list[str], dtype: Any, width: int | None) -> da.Array:
            pick = delayed(_frame_columns, pure=True)
            return da.concatenate(
                [
                    da.from_delayed(
                        pick(frame, names, dtype, width is None),
                        (m,) if width is None else (m, width),
                        dtype=dtype,
                    )
                    for frame, m in kept
                ]
            )

        return cls(
            field(list(context_columns), np.float64, d),
            field([action_column], np.float64, None),  # checked to be integers per partition
            field([propensity_column], np.float64, None),
            field([reward_column], np.float64, None),
            n_actions,
        )

    # --- shape --------------------------------------------------------------------------

    def __len__(self) -> int:
        return int(self.contexts.shape[0])

    @property
    def n_features(self) -> int:
        """d, the context dimension."""
        return int(self.contexts.shape[1])

    @property
    def npartitions(self) -> int:
        return len(self.contexts.chunks[0])

    @property
    def row_chunks(self) -> tuple[int, ...]:
        """Rows per partition."""
        return tuple(int(c) for c in self.contexts.chunks[0])

    @property
    def nbytes(self) -> int:
        """Bytes of the four arrays at their dtypes (what one process would need to hold)."""
        return int(sum(getattr(self, f).nbytes for f in _FIELDS))

    def __repr__(self) -> str:
        return (
            f"DaskLoggedBandit(n={len(self)}, d={self.n_features}, n_actions={self.n_actions}, "
            f"npartitions={self.npartitions})"
        )

    # --- per partition ------------------------------------------------------------------

    def partitions(self) -> list[Any]:
        """One ``dask.delayed`` [`LoggedBandit`][opboost.api.data.logged.LoggedBandit] per row
        partition (lazy).

        Computed on the workers, each validates its rows; a ValueError names the partition.
        """
        from dask import delayed

        blocks = [getattr(self, f).to_delayed().ravel().tolist() for f in _FIELDS]
        starts = np.concatenate([[0], np.cumsum(self.row_chunks)[:-1]])
        build = delayed(partition_bandit, pure=True)
        return [
            build(X, a, p, r, self.n_actions, index, int(start))
            for index, (start, X, a, p, r) in enumerate(zip(starts, *blocks, strict=True))
        ]

    def to_logged_bandit(self) -> LoggedBandit:
        """Gather everything into one in-memory
        [`LoggedBandit`][opboost.api.data.logged.LoggedBandit] (small data only: this is what the
        distributed fit never does)."""
        import dask

        X, a, p, r = dask.compute(*(getattr(self, f) for f in _FIELDS))
        return LoggedBandit(X, a, p, r, self.n_actions)

    def make_engine(
        self, components: Any, settings: Any, *, eval_data: Any = None, callbacks: Any = ()
    ) -> Any:
        """The engine [`Booster.fit`][opboost.core.booster.Booster.fit] runs on these logs
        ([`RemoteLogs`][opboost.api.engine.RemoteLogs]): a fit whose rows stay on the workers."""
        from opboost.dask.boosting import make_engine

        return make_engine(self, components, settings, eval_data=eval_data, callbacks=callbacks)


def partition_bandit(
    contexts: np.ndarray,
    actions: np.ndarray,
    propensities: np.ndarray,
    rewards: np.ndarray,
    n_actions: int,
    index: int,
    start: int,
) -> LoggedBandit:
    """A validated LoggedBandit of one partition's numpy blocks; errors name its rows."""
    try:
        return LoggedBandit(
            np.asarray(contexts), np.asarray(actions), propensities, rewards, n_actions
        )
    except ValueError as exc:
        stop = start + len(actions) - 1
        raise ValueError(
            f"DaskLoggedBandit partition {index} (rows {start}..{stop}; indices below are "
            f"within the partition): {exc}"
        ) from exc


def _check_numeric(ddf: Any, columns: list[str], path: Any) -> None:
    """ValueError naming the first column of ``columns`` whose dtype is not numeric."""
    import pandas as pd

    for column in columns:
        dtype = ddf.dtypes[column]
        if not (pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_complex_dtype(dtype)):
            raise ValueError(
                f"DaskLoggedBandit.from_parquet: column {column!r} of {path} has dtype {dtype}; "
                f"contexts, actions, propensities and rewards must be numeric. Encode it as "
                f"numbers (categories as integer codes) when writing the files."
            )


def _unreadable(path: Any, exc: Exception) -> ValueError:
    """The error of Parquet files that could not be read: names the first file whose footer
    does not parse (a truncated or foreign file), else ``path``."""
    import pyarrow.parquet as pq

    root = Path(str(path))
    files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
    for file in files:
        if file.name.startswith(("_", ".")):  # _metadata, _SUCCESS, hidden files
            continue
        try:
            pq.ParquetFile(file)
        except (OSError, ValueError) as bad:
            return ValueError(
                f"DaskLoggedBandit.from_parquet: {file}: not a readable Parquet file ({bad}); "
                f"it is truncated or corrupted: write it again or remove it."
            )
    return ValueError(f"DaskLoggedBandit.from_parquet: could not read {path}: {exc}")


def _frame_columns(frame: Any, names: list[str], dtype: Any, vector: bool) -> np.ndarray:
    """Columns ``names`` of a pandas DataFrame as a (m, len(names)) array, or (m,) if vector."""
    values = frame[names].to_numpy(dtype=dtype)
    return values[:, 0] if vector else values


def _short(chunks: tuple) -> str:
    text = str(tuple(chunks))
    return text if len(text) <= 60 else text[:57] + "...)"
