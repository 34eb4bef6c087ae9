"""Logged bandit feedback: the validated, immutable data every offline learner consumes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from opboost.api.validation import check_random_state, check_scalar

__all__ = ["LoggedBandit"]

Contexts = np.ndarray | sp.csr_matrix | sp.csr_array


def _bad(field: str, rule: str, index: int | tuple, value: Any, fix: str) -> ValueError:
    return ValueError(f"LoggedBandit: {field} {rule}; index {index} has {value!r}. {fix}")


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _real(field: str, value: Any) -> np.ndarray:
    """``value`` as a float64 array. Complex input with a nonzero imaginary part is a
    ValueError (casting would silently drop it); non-numeric input is a ValueError."""
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"LoggedBandit: {field} must be numeric: {exc}.") from exc
    if array.dtype.kind == "c":
        bad = np.imag(array) != 0
        if bad.any():
            where = np.argwhere(bad)[0] if array.ndim else ()
            index: Any = tuple(int(i) for i in where)
            raise _bad(
                field,
                "must be real numbers",
                index[0] if len(index) == 1 else index,
                complex(array[index]),
                "Pass the real part (np.real) if the imaginary parts are rounding noise.",
            )
        array = np.real(array)
    try:
        return np.asarray(array, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"LoggedBandit: {field} must be numeric: {exc}.") from exc


def _readonly(array: np.ndarray) -> np.ndarray:
    array = np.array(array, copy=True)
    array.flags.writeable = False
    return array


def _check_size(shape: tuple[int, ...]) -> None:
    if shape[0] == 0:
        raise ValueError("LoggedBandit: contexts has 0 rows; need at least one example.")
    if shape[1] == 0:
        raise ValueError(
            f"LoggedBandit: contexts has 0 features (shape {shape}); need at least one "
            f"column. Use a constant column (np.ones((n, 1))) for context-free bandits."
        )


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
        n_actions = self.n_actions
        if isinstance(n_actions, bool) or not isinstance(n_actions, int | np.integer):
            raise ValueError(f"LoggedBandit: n_actions must be an int >= 2. Got {n_actions!r}.")
        if n_actions < 2:
            raise ValueError(
                f"LoggedBandit: n_actions must be an int >= 2. Got {n_actions!r}; a bandit "
                f"problem needs at least two actions to choose from."
            )
        set_ = object.__setattr__
        set_(self, "n_actions", int(n_actions))
        set_(self, "contexts", self._check_contexts(self.contexts))
        n = self.contexts.shape[0]
        actions = np.asarray(self.actions)
        if actions.dtype.kind == "c":
            actions = _real("actions", actions)
        propensities = _real("propensities", self.propensities)
        rewards = _real("rewards", self.rewards)
        for field, arr in (
            ("actions", actions),
            ("propensities", propensities),
            ("rewards", rewards),
        ):
            if arr.shape != (n,):
                raise ValueError(
                    f"LoggedBandit: {field} must have shape ({n},) to match contexts "
                    f"{self.contexts.shape}. Got shape {arr.shape}."
                )
        if actions.dtype.kind == "f":
            bad = ~np.isfinite(actions) | (actions != np.round(actions))
            if bad.any():
                i = _first(bad)
                raise _bad(
                    "actions", "must be integers", i, float(actions[i]), "Encode actions as 0..K-1."
                )
        elif actions.dtype.kind not in "iu":
            raise ValueError(
                f"LoggedBandit: actions must be integers in [0, {n_actions}). Got dtype "
                f"{actions.dtype}; encode actions as 0..K-1."
            )
        # Compare before casting: values >= 2**63 (uint64, large floats) would wrap in int64.
        bad = (actions < 0) | (actions >= n_actions)
        if bad.any():
            i = _first(bad)
            value = actions[i]
            raise _bad(
                "actions",
                f"must be in [0, {n_actions})",
                i,
                int(value) if actions.dtype.kind in "iu" else float(value),
                "Encode actions as 0..K-1 or raise n_actions.",
            )
        actions = actions.astype(np.int64)
        bad = ~np.isfinite(propensities) | (propensities <= 0) | (propensities > 1)
        if bad.any():
            i = _first(bad)
            raise _bad(
                "propensities",
                "must be in (0, 1]",
                i,
                float(propensities[i]),
                "Drop or re-log zero-propensity rows; propensities are probabilities of the "
                "logged action, not scores.",
            )
        bad = ~np.isfinite(rewards)
        if bad.any():
            i = _first(bad)
            raise _bad(
                "rewards", "must be finite", i, float(rewards[i]), "Drop or impute those rows."
            )
        if self.logging_probs is not None:
            probs = _real("logging_probs", self.logging_probs)
            self._check_logging_probs(probs, actions, propensities)
            set_(self, "logging_probs", _readonly(probs))
        set_(self, "actions", _readonly(actions))
        set_(self, "propensities", _readonly(propensities))
        set_(self, "rewards", _readonly(rewards))

    def _check_contexts(self, contexts: Any) -> Contexts:
        if sp.issparse(contexts):
            if contexts.dtype.kind == "c":
                coo = sp.coo_matrix(contexts)
                bad = np.imag(coo.data) != 0
                k = _first(bad) if bad.any() else 0
                raise _bad(
                    "contexts",
                    "must be real numbers",
                    (int(coo.row[k]), int(coo.col[k])),
                    complex(coo.data[k]),
                    "Pass the real part if the imaginary parts are rounding noise.",
                )
            contexts = sp.csr_matrix(contexts, dtype=np.float64, copy=True)
            if contexts.ndim != 2:
                raise ValueError(f"LoggedBandit: contexts must be 2-D. Got {contexts.ndim}-D.")
            _check_size(contexts.shape)
            contexts.sum_duplicates()  # canonical, so the frozen arrays are never rewritten
            bad = ~np.isfinite(contexts.data)
            if bad.any():
                k = _first(bad)
                row = int(np.searchsorted(contexts.indptr, k, side="right") - 1)
                col = int(contexts.indices[k])
                raise _bad(
                    "contexts",
                    "must be finite",
                    (row, col),
                    float(contexts.data[k]),
                    "Impute or drop rows with NaN or inf features.",
                )
            for part in (contexts.data, contexts.indices, contexts.indptr):
                part.flags.writeable = False
            return contexts
        array = _real("contexts", contexts)
        if array.ndim != 2:
            raise ValueError(
                f"LoggedBandit: contexts must be a 2-D (n, d) array. Got shape {array.shape}; "
                f"reshape a single feature with x.reshape(-1, 1)."
            )
        _check_size(array.shape)
        bad = ~np.isfinite(array)
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise _bad(
                "contexts",
                "must be finite",
                (int(i), int(j)),
                float(array[i, j]),
                "Impute or drop rows with NaN or inf features.",
            )
        return _readonly(array)

    def _check_logging_probs(self, probs, actions, propensities) -> None:
        n, k = len(actions), self.n_actions
        if probs.shape != (n, k):
            raise ValueError(
                f"LoggedBandit: logging_probs must have shape ({n}, {k}). Got {probs.shape}."
            )
        bad = ~np.isfinite(probs) | (probs < 0) | (probs > 1)
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise _bad(
                "logging_probs",
                "must be in [0, 1]",
                (int(i), int(j)),
                float(probs[i, j]),
                "Pass probabilities, not scores.",
            )
        sums = probs.sum(axis=1)
        bad = np.abs(sums - 1) > 1e-6
        if bad.any():
            i = _first(bad)
            raise _bad(
                "logging_probs", "rows must sum to 1", i, float(sums[i]), "Normalise each row."
            )
        logged = probs[np.arange(n), actions]
        bad = np.abs(logged - propensities) > 1e-6
        if bad.any():
            i = _first(bad)
            raise _bad(
                "propensities",
                "must equal logging_probs[i, actions[i]]",
                i,
                float(propensities[i]),
                f"logging_probs gives {float(logged[i])!r}.",
            )

    # --- shape ------------------------------------------------------------------------------

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
        missing = [c for c in columns if c not in df.columns]
        if missing:
            raise ValueError(
                f"LoggedBandit.from_dataframe: column(s) {missing} not in the DataFrame. "
                f"Available: {list(df.columns)}."
            )
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
            pi_b = _real("pi_b", pi_b)
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
