"""Logged bandit feedback: the validated, immutable data every offline learner consumes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from opboost.api.data.candidates import Candidates, check_candidates, count_candidates
from opboost.api.data.field_checks import (
    Contexts,
    as_real,
    check_action_features,
    check_columns,
    check_contexts,
    check_logging_probs,
    check_n_actions,
    check_positions,
    check_row_fields,
    readonly,
)
from opboost.api.data.frame_feedback import check_field_columns, feedback_column
from opboost.api.data.obp_format import feedback_fields
from opboost.api.data.tabular import (
    TabularSchema,
    check_same_schema,
    check_schema,
    dataframe_fields,
    encode_contexts,
)
from opboost.api.exceptions import InvalidParameterError
from opboost.api.validation import check_random_state, check_scalar

__all__ = ["LoggedBandit", "check_data", "check_eval_data"]


@dataclass(frozen=True, eq=False)
class LoggedBandit:
    """Logged contextual-bandit feedback S = (x_i, a_i, p_i, r_i), i = 1..n.

    Parameters
    ----------
    contexts
        (n, d) float array, or a scipy.sparse CSR matrix.
    actions
        (n,) integers in [0, n_actions): the logged actions.
    propensities
        (n,) floats in (0, 1]: the logging policy's probability of the logged action.
    rewards
        (n,) finite floats: the observed rewards.
    n_actions
        K >= 2, the number of actions.
    logging_probs
        optional (n, K) logging distribution over all actions (rows sum to 1); when given,
        ``propensities`` must equal ``logging_probs[i, actions[i]]``.
    positions
        optional (n,) integers in [0, L): a slate log under Open Bandit Pipeline's
        per-position convention, each row one (context, position, action) impression;
        ``propensities`` (and ``logging_probs``) are then the logger's probabilities at the
        row's own position. Estimators read obp's (n, K, L) ``action_dist`` at
        ``positions[i]``.
    action_features
        optional (n_actions, d_a) finite features of each action (obp's ``action_context``),
        or a pandas DataFrame of one row per action whose string, object or category columns
        are categorical: they are stored as integer codes (-1 missing) and ``item_schema``
        records the columns and categories, so boosting splits them as LightGBM categorical
        features and serving encodes a new catalogue the same way.
    candidates
        optional (n, n_actions) boolean mask of the actions eligible in each row (True or 1
        where eligible): a dense array, stored as a read-only ``bool`` array, or a
        scipy.sparse matrix, stored as a read-only boolean CSR matrix (n * K bytes against
        about 12 bytes per candidate: use sparse input for large catalogues). Every row has a
        candidate, each logged action is a candidate of its row and ``logging_probs`` put no
        mass outside the candidates; estimators reject policies that do.
    schema
        optional [`TabularSchema`][opboost.api.data.tabular.TabularSchema]: the table the logs came
        from (``from_dataframe`` sets it): context column names, the categories of categorical
        columns and the action ids. Kept by ``subset``, ``split`` and ``with_rewards``.
    item_schema
        the [`TabularSchema`][opboost.api.data.tabular.TabularSchema] of a DataFrame
        ``action_features`` (set from it; pass it with already-encoded features to restore it).

    Notes
    -----
    All arrays are copied and made read-only; invalid input raises ``ValueError`` naming the
    field, the first bad index and its value.
    """

    contexts: Contexts
    actions: np.ndarray
    propensities: np.ndarray
    rewards: np.ndarray
    n_actions: int
    logging_probs: np.ndarray | None = None
    positions: np.ndarray | None = None
    action_features: np.ndarray | None = None
    candidates: Candidates | None = None
    schema: TabularSchema | None = None
    item_schema: TabularSchema | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        n_actions = check_n_actions(self.n_actions)
        set_(self, "n_actions", n_actions)
        set_(self, "contexts", check_contexts(self.contexts))
        actions, propensities, rewards = check_row_fields(
            self.actions, self.propensities, self.rewards, self.contexts.shape, n_actions
        )
        if self.logging_probs is not None:
            probs = as_real("logging_probs", self.logging_probs)
            check_logging_probs(probs, actions, propensities, n_actions)
            set_(self, "logging_probs", readonly(probs))
        set_(self, "actions", readonly(actions))
        set_(self, "propensities", readonly(propensities))
        set_(self, "rewards", readonly(rewards))
        if self.positions is not None:
            set_(self, "positions", readonly(check_positions(self.positions, len(actions))))
        if self.action_features is not None:
            features, item_schema = item_features(self.action_features, self.item_schema)
            set_(self, "action_features", check_action_features(features, n_actions))
            set_(self, "item_schema", item_schema)
        elif self.item_schema is not None:
            raise ValueError("LoggedBandit: item_schema describes action_features; pass both.")
        if self.candidates is not None:
            mask = check_candidates(self.candidates, n_actions, actions, self.logging_probs)
            set_(self, "candidates", mask)
        if self.schema is not None:
            check_schema(self.schema, self.contexts.shape[1], n_actions)

    def __len__(self) -> int:
        return int(self.contexts.shape[0])

    @property
    def n_rounds(self) -> int:
        """n, the number of logged interactions."""
        return len(self)

    @property
    def n_features(self) -> int:
        """d, the context dimension."""
        return int(self.contexts.shape[1])

    @property
    def n_positions(self) -> int:
        """L, the number of slots: max(positions) + 1, or 1 when there are no positions."""
        return 1 if self.positions is None else int(self.positions.max()) + 1

    @property
    def n_candidates(self) -> np.ndarray:
        """(n,) int64: each row's number of candidates (n_actions for all without
        ``candidates``)."""
        if self.candidates is None:
            return np.full(len(self), self.n_actions, dtype=np.int64)
        return count_candidates(self.candidates)

    @property
    def is_sparse(self) -> bool:
        return sp.issparse(self.contexts)

    def __repr__(self) -> str:
        kind = "sparse " if self.is_sparse else ""
        slots = "" if self.positions is None else f", n_positions={self.n_positions}"
        if self.candidates is not None:
            slots += f", candidates per row={self.n_candidates.mean():.4g}"
        return (
            f"LoggedBandit(n={len(self)}, d={self.n_features} {kind}features, "
            f"n_actions={self.n_actions}{slots}, mean reward={self.rewards.mean():.4g})"
        )

    # --- subsets ----------------------------------------------------------------------------

    def subset(self, indices: Sequence[int] | np.ndarray) -> LoggedBandit:
        """The rows at ``indices`` (integer positions or a boolean mask) as a new LoggedBandit."""
        idx = np.asarray(indices)
        if idx.dtype == bool:
            if idx.shape != (len(self),):
                raise ValueError(
                    f"LoggedBandit.subset: boolean mask must have shape ({len(self)},). "
                    f"Got {idx.shape}."
                )
            idx = np.flatnonzero(idx)
        if idx.size == 0:
            raise ValueError(
                "LoggedBandit.subset: no rows selected; a LoggedBandit needs at least one row."
            )
        if idx.dtype.kind not in "iu":
            raise ValueError(
                f"LoggedBandit.subset: indices must be integer positions or a boolean mask. "
                f"Got dtype {idx.dtype}."
            )
        return LoggedBandit(
            contexts=self.contexts[idx],
            actions=self.actions[idx],
            propensities=self.propensities[idx],
            rewards=self.rewards[idx],
            n_actions=self.n_actions,
            logging_probs=None if self.logging_probs is None else self.logging_probs[idx],
            positions=None if self.positions is None else self.positions[idx],
            action_features=self.action_features,
            candidates=None if self.candidates is None else self.candidates[idx],
            schema=self.schema,
            item_schema=self.item_schema,
        )

    def split(
        self, test_size: float = 0.2, *, random_state: Any = None, shuffle: bool = True
    ) -> tuple[LoggedBandit, LoggedBandit]:
        """Split into (train, test); ``test_size`` is a fraction in (0, 1)."""
        check_scalar(
            test_size,
            "test_size",
            "LoggedBandit.split",
            low=0.0,
            high=1.0,
            low_inclusive=False,
            high_inclusive=False,
        )
        n = len(self)
        n_test = round(n * test_size)
        if n_test == 0 or n_test == n:
            raise ValueError(
                f"LoggedBandit.split: test_size={test_size} leaves an empty side for n={n} rows."
            )
        order = check_random_state(random_state).permutation(n) if shuffle else np.arange(n)
        return self.subset(np.sort(order[n_test:])), self.subset(np.sort(order[:n_test]))

    def with_rewards(self, rewards: np.ndarray) -> LoggedBandit:
        """A copy with ``rewards`` replaced (e.g. translated by a constant), checked as the
        constructor checks them. The other fields are shared, not copied: they are read-only
        (a fit with ``reward_shift`` copied 1M x 50 float64 contexts, 400 MB, before)."""
        rewards = check_row_fields(
            self.actions, self.propensities, rewards, self.contexts.shape, self.n_actions
        )[2]
        shifted = object.__new__(LoggedBandit)
        shifted.__dict__.update(self.__dict__)
        object.__setattr__(shifted, "rewards", readonly(rewards))
        return shifted

    # --- adapters ---------------------------------------------------------------------------

    @classmethod
    def from_dataframe(
        cls,
        df: Any,
        *,
        contexts: Sequence[str],
        action: str,
        propensity: str,
        reward: str,
        actions: Sequence[Any] | None = None,
        n_actions: int | None = None,
        position: str | None = None,
        action_features: Any = None,
        schema: TabularSchema | None = None,
    ) -> LoggedBandit:
        """Build from a pandas DataFrame: ``contexts`` columns, and one column per field.

        Context columns may be numeric (finite), or categorical: a pandas ``category``, a
        string column or an ``object`` column of strings, encoded as integer codes (missing
        values: -1, LightGBM's missing category); see ``opboost.api.data.tabular``.
        ``actions`` is the action catalogue, the list of every action id (strings or any
        hashable): action a is ``actions[a]`` and ``n_actions`` is its length. Without it,
        integer ids are the actions themselves (``n_actions`` defaults to max + 1) and other
        ids are the sorted ids seen, both with an ``ActionCatalogueWarning``. ``schema``
        records the columns, categories and ids; pass another log's ``schema`` (the training
        logs') to encode with its categories and catalogue. ``position`` optionally names a
        column of 0-based slot indices (``positions``); ``action_features`` is passed through.
        """
        columns = [*contexts, action, propensity, reward, *([position] if position else [])]
        check_columns(columns, df.columns, "LoggedBandit.from_dataframe", "the DataFrame")
        fields = {"action": action, "propensity": propensity, "reward": reward}
        check_field_columns(contexts, {**fields, "position": position})
        if len(df) == 0:
            raise ValueError(
                "LoggedBandit.from_dataframe: the DataFrame has no rows; a LoggedBandit needs "
                "at least one logged row."
            )
        X, indices, n_actions, schema = dataframe_fields(
            df, contexts, action, actions, n_actions, schema
        )
        return cls(
            contexts=X,
            actions=indices,
            propensities=feedback_column(df, propensity, "propensity"),
            rewards=feedback_column(df, reward, "reward"),
            n_actions=n_actions,
            positions=df[position].to_numpy() if position else None,
            action_features=action_features,
            schema=schema,
        )

    @classmethod
    def from_obp(cls, bandit_feedback: Mapping[str, Any]) -> LoggedBandit:
        """Build from Open Bandit Pipeline's dict (n_rounds, n_actions, context, action,
        reward, pscore; optional position, action_context and pi_b of shape (n, K),
        (n, K, 1) or (n, K, L), of which row i keeps slot position[i]). obp is not imported.
        obp has no candidate sets, so ``candidates`` is None."""
        data = cls(**feedback_fields(bandit_feedback))
        n_rounds = bandit_feedback.get("n_rounds")
        if n_rounds is not None and int(n_rounds) != len(data):
            raise ValueError(
                f"LoggedBandit.from_obp: n_rounds is {n_rounds} but context has {len(data)} rows."
            )
        return data

    def to_obp(self) -> dict[str, Any]:
        """Open Bandit Pipeline's bandit-feedback dict: dense ``context``; ``position`` (None
        without positions); ``action_context`` when there are action features; ``pi_b`` of
        shape (n, K, L) when ``logging_probs`` is set, every slot holding row i's logging
        distribution (obp reads only slot ``position[i]``, so ``from_obp`` gets it back).
        obp has no candidate field: ``candidates`` are not written (mask the evaluated
        policies' ``action_dist`` instead)."""
        context = self.contexts.toarray() if self.is_sparse else np.array(self.contexts)
        feedback: dict[str, Any] = {
            "n_rounds": len(self),
            "n_actions": self.n_actions,
            "context": context,
            "action": np.array(self.actions),
            "position": None if self.positions is None else np.array(self.positions),
            "reward": np.array(self.rewards),
            "pscore": np.array(self.propensities),
        }
        if self.logging_probs is not None:
            slots = (1, 1, self.n_positions)
            feedback["pi_b"] = np.tile(np.array(self.logging_probs)[..., None], slots)
        if self.action_features is not None:
            feedback["action_context"] = np.array(self.action_features)
        return feedback


def item_features(features: Any, schema: TabularSchema | None) -> tuple[Any, TabularSchema | None]:
    """(numeric features, schema) of ``action_features``: a DataFrame is encoded with its own
    schema (categorical columns as codes), anything else is passed through with ``schema``,
    which must then have one column per feature."""
    owner = "LoggedBandit: action_features"
    if hasattr(features, "columns") and hasattr(features, "dtypes"):
        schema = encode_contexts(features, list(features.columns), owner)
        return schema.encode(features, owner), schema
    if schema is not None:
        width = np.shape(features)[1] if np.ndim(features) == 2 else None
        if width != len(schema.columns):
            raise ValueError(
                f"LoggedBandit: item_schema has {len(schema.columns)} column(s) but "
                f"action_features has shape {np.shape(features)}; pass the features it describes."
            )
    return features, schema


def check_data(data: Any, name: str) -> None:
    """``data`` (the fit's argument ``name``) must be a :class:`LoggedBandit`."""
    if not isinstance(data, LoggedBandit):
        raise InvalidParameterError(
            f"Booster.fit: {name} must be an opboost.LoggedBandit. Got {type(data).__name__}; "
            f"build one with LoggedBandit(contexts=..., actions=..., propensities=..., "
            f"rewards=..., n_actions=...)"
            + (
                ", or pass the contexts as X with y = an (n, 3) array [action, propensity, "
                "reward] (the scikit-learn route)."
                if name == "data"
                else "."
            )
        )


def check_eval_data(data: LoggedBandit, eval_data: LoggedBandit) -> None:
    """``eval_data`` must be logs of the same problem as ``data``."""
    check_data(eval_data, "eval_data")
    if (eval_data.n_actions, eval_data.n_features) != (data.n_actions, data.n_features):
        raise InvalidParameterError(
            f"Booster.fit: eval_data has {eval_data.n_actions} actions and "
            f"{eval_data.n_features} features but data has {data.n_actions} and "
            f"{data.n_features}; evaluate on rows of the same problem."
        )
    try:
        check_same_schema(data, eval_data, "eval_data", "Booster.fit")
    except ValueError as exc:
        raise InvalidParameterError(str(exc)) from None
