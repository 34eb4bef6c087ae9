"""Logged bandit feedback: the validated, immutable data every offline learner consumes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from opboost.api.data_checks import (
    Contexts,
    as_real,
    check_columns,
    check_contexts,
    check_logging_probs,
    check_n_actions,
    check_row_fields,
    readonly,
)
from opboost.api.validation import check_random_state, check_scalar

__all__ = ["LoggedBandit"]


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

    All arrays are copied and made read-only; invalid input raises ``ValueError`` naming the
    field, the first bad index and its value.
    """

    contexts: Contexts
    actions: np.ndarray
    propensities: np.ndarray
    rewards: np.ndarray
    n_actions: int
    logging_probs: np.ndarray | None = None

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
    def is_sparse(self) -> bool:
        return sp.issparse(self.contexts)

    def __repr__(self) -> str:
        kind = "sparse " if self.is_sparse else ""
        return (
            f"LoggedBandit(n={len(self)}, d={self.n_features} {kind}features, "
            f"n_actions={self.n_actions}, mean reward={self.rewards.mean():.4g})"
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
        return LoggedBandit(
            contexts=self.contexts[idx],
            actions=self.actions[idx],
            propensities=self.propensities[idx],
            rewards=self.rewards[idx],
            n_actions=self.n_actions,
            logging_probs=None if self.logging_probs is None else self.logging_probs[idx],
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
        """A copy with ``rewards`` replaced (e.g. translated by a constant)."""
        return LoggedBandit(
            self.contexts,
            self.actions,
            self.propensities,
            rewards,
            self.n_actions,
            self.logging_probs,
        )

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
        n_actions: int | None = None,
    ) -> LoggedBandit:
        """Build from a pandas DataFrame: ``contexts`` columns, and one column per field.

        ``n_actions`` defaults to ``max(action) + 1``.
        """
        columns = [*contexts, action, propensity, reward]
        check_columns(columns, df.columns, "LoggedBandit.from_dataframe", "the DataFrame")
        actions = df[action].to_numpy()
        if n_actions is None:
            n_actions = int(np.max(actions)) + 1 if len(actions) else 0
        return cls(
            contexts=df[list(contexts)].to_numpy(dtype=np.float64),
            actions=actions,
            propensities=df[propensity].to_numpy(dtype=np.float64),
            rewards=df[reward].to_numpy(dtype=np.float64),
            n_actions=n_actions,
        )

    @classmethod
    def from_obp(cls, bandit_feedback: Mapping[str, Any]) -> LoggedBandit:
        """Build from Open Bandit Pipeline's dict (n_rounds, n_actions, context, action,
        reward, pscore; optional pi_b of shape (n, K) or (n, K, 1)). obp is not imported."""
        required = ("n_actions", "context", "action", "reward", "pscore")
        missing = [k for k in required if k not in bandit_feedback]
        if missing:
            raise ValueError(
                f"LoggedBandit.from_obp: bandit_feedback lacks key(s) {missing}; expected "
                f"Open Bandit Pipeline's dict with keys {list(required)}."
            )
        n_actions = bandit_feedback["n_actions"]
        if isinstance(n_actions, float | np.floating) and float(n_actions).is_integer():
            n_actions = int(n_actions)
        if isinstance(n_actions, bool) or not isinstance(n_actions, int | np.integer):
            raise ValueError(
                f"LoggedBandit.from_obp: n_actions must be an int >= 2. Got {n_actions!r}; "
                f"it is not truncated to an integer."
            )
        pi_b = bandit_feedback.get("pi_b")
        if pi_b is not None:
            pi_b = as_real("pi_b", pi_b)
            if pi_b.ndim == 3:
                if pi_b.shape[2] != 1:
                    raise ValueError(
                        f"LoggedBandit.from_obp: pi_b has shape {pi_b.shape}, {pi_b.shape[2]} "
                        f"slots (positions); multi-slot logs are not supported yet. Pass one "
                        f"slot's rows, with pi_b of shape (n, K) or (n, K, 1)."
                    )
                pi_b = pi_b[..., 0]
        position = bandit_feedback.get("position")
        if position is not None:
            pos = np.asarray(position)
            nonzero = np.flatnonzero(pos.reshape(-1) != 0) if pos.ndim else np.array([])
            if pos.ndim != 1 or len(nonzero):
                i = int(nonzero[0]) if len(nonzero) else 0
                value = pos.reshape(-1)[i].item() if pos.size else pos
                raise ValueError(
                    f"LoggedBandit.from_obp: position must be None or all 0 (one slot); "
                    f"index {i} has {value!r}. Multi-slot logs are not supported yet; pass "
                    f"one slot's rows (position == 0)."
                )
        data = cls(
            contexts=bandit_feedback["context"],
            actions=bandit_feedback["action"],
            propensities=bandit_feedback["pscore"],
            rewards=bandit_feedback["reward"],
            n_actions=n_actions,
            logging_probs=pi_b,
        )
        n_rounds = bandit_feedback.get("n_rounds")
        if n_rounds is not None and int(n_rounds) != len(data):
            raise ValueError(
                f"LoggedBandit.from_obp: n_rounds is {n_rounds} but context has {len(data)} rows."
            )
        return data

    def to_obp(self) -> dict[str, Any]:
        """Open Bandit Pipeline's bandit-feedback dict (dense context; ``position`` None)."""
        context = self.contexts.toarray() if self.is_sparse else np.array(self.contexts)
        feedback: dict[str, Any] = {
            "n_rounds": len(self),
            "n_actions": self.n_actions,
            "context": context,
            "action": np.array(self.actions),
            "position": None,
            "reward": np.array(self.rewards),
            "pscore": np.array(self.propensities),
        }
        if self.logging_probs is not None:
            feedback["pi_b"] = np.array(self.logging_probs)[..., None]
        return feedback
