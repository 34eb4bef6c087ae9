"""The slot view of candidate logs: each row's candidates listed in slots 0 .. C_i - 1.

Boosting over per-row candidate sets keeps its dense (n, C) score matrices by numbering each
row's candidates: slot j of row i holds the candidate ``items[i, j]`` (ascending action ids),
for j < C_i; the slots C_i .. C - 1 (C = max_i C_i, at least 2) are padding, invalid in
``valid``. Memory is O(n C), never O(n K) in the catalogue size K.

Invalid slots hold the score :data:`MASKED_SCORE`: finite (so a product with their zero
probability stays 0, where -inf would give NaN) and so low that the softmax gives them
probability exactly 0 and argmax never picks them. Every objective, estimator and selection
rule then runs unchanged on the slot logs (:meth:`SlotView.slot_logs`), whose actions are the
logged slots and whose candidates are ``valid``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from opboost.api.data.candidates import Candidates, candidate_pairs, count_candidates
from opboost.api.data.logged import LoggedBandit

__all__ = ["MASKED_SCORE", "SlotView", "mask_slots"]

#: Score of an invalid slot (or a non-candidate): exp(MASKED_SCORE - F) is exactly 0.
MASKED_SCORE = -1e30


def mask_slots(scores: np.ndarray, valid: Any) -> np.ndarray:
    """``scores`` (n, C) with :data:`MASKED_SCORE` where ``valid`` (n, C) is False (a new
    array; a sparse mask is densified)."""
    valid = valid.toarray() if hasattr(valid, "toarray") else np.asarray(valid, dtype=bool)
    return np.where(valid, scores, MASKED_SCORE)


@dataclass(frozen=True, eq=False)
class SlotView:
    """Each row's candidates in slots.

    ``items`` (n, C) int64: the action in each slot (padding repeats the row's first
    candidate, so every gather stays in range); ``valid`` (n, C) bool; ``n_actions`` K, the
    catalogue size. ``rows``, ``pair_items`` and ``flat`` (each (P,), P = sum_i C_i) list the
    valid slots row by row: their row, action and index into the flattened (n, C) matrix.
    """

    items: np.ndarray
    valid: np.ndarray
    n_actions: int
    rows: np.ndarray
    pair_items: np.ndarray
    flat: np.ndarray

    @classmethod
    def from_candidates(cls, candidates: Candidates | None, n: int, n_actions: int) -> SlotView:
        """The view of an (n, K) candidate mask (dense or CSR); None: every action."""
        if candidates is None:
            counts = np.full(n, n_actions, dtype=np.int64)
            rows = np.repeat(np.arange(n, dtype=np.int64), n_actions)
            actions = np.tile(np.arange(n_actions, dtype=np.int64), n)
        else:
            counts = count_candidates(candidates)
            rows, actions = candidate_pairs(candidates)
        width = max(int(counts.max()) if n else 1, 2)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        slots = np.arange(len(rows), dtype=np.int64) - np.repeat(starts, counts)
        flat = rows * width + slots
        items = np.empty((n, width), dtype=np.int64)
        items[:] = actions[starts][:, None] if len(actions) else 0
        items.ravel()[flat] = actions
        valid = np.zeros((n, width), dtype=bool)
        valid.ravel()[flat] = True
        return cls(items, valid, int(n_actions), rows, actions, flat)

    @property
    def full(self) -> bool:
        """Whether every slot is valid (every row has C candidates): then the valid slots
        are the flattened (n, C) matrix itself, and gathers and scatters are reshapes."""
        return self.n_pairs == self.items.size

    def take(self, keep: np.ndarray) -> SlotView:
        """The view of the rows ``keep`` (n,) bool: their slots, pairs in the same order."""
        items, valid = self.items[keep], self.valid[keep]
        flat = np.flatnonzero(valid.ravel())
        rows = flat // valid.shape[1]
        return SlotView(items, valid, self.n_actions, rows, items.ravel()[flat], flat)

    def gather(self, slot_values: np.ndarray) -> np.ndarray:
        """(P,) values of the valid slots of an (n, C) matrix (a view when :attr:`full`)."""
        flat = np.asarray(slot_values).ravel()
        return flat if self.full else flat[self.flat]

    @property
    def n_slots(self) -> int:
        """C, the slots per row (at least 2)."""
        return int(self.items.shape[1])

    @property
    def n_pairs(self) -> int:
        """P = sum_i C_i, the valid (row, candidate) pairs."""
        return len(self.flat)

    def slot_of(self, actions: np.ndarray) -> np.ndarray:
        """(n,) int64: the slot of each row's action ``actions[i]`` (-1 if not a candidate)."""
        hit = (self.items == np.asarray(actions)[:, None]) & self.valid
        return np.where(hit.any(axis=1), hit.argmax(axis=1), -1).astype(np.int64)

    def scatter(self, pair_values: np.ndarray, fill: float) -> np.ndarray:
        """(n, C) slot matrix of per-pair values (P,), ``fill`` in the invalid slots."""
        if self.full:
            return np.array(pair_values, dtype=np.float64).reshape(self.items.shape)
        out = np.full(self.items.shape, fill, dtype=np.float64)
        out.ravel()[self.flat] = pair_values
        return out

    def to_actions(self, slot_values: np.ndarray, fill: float) -> np.ndarray:
        """(n, K) matrix of slot values (n, C): row i's action items[i, j] gets
        slot_values[i, j], non-candidates ``fill`` (for serving: K is a request's catalogue)."""
        out = np.full((self.items.shape[0], self.n_actions), fill, dtype=np.float64)
        out[self.rows, self.pair_items] = slot_values.ravel()[self.flat]
        return out

    def slot_logs(self, data: LoggedBandit) -> LoggedBandit:
        """``data`` in slot coordinates: n_actions C, actions the logged slots, candidates
        ``valid``; contexts, propensities, rewards and positions unchanged; the full
        ``logging_probs`` gathered to the slots when given."""
        logged = self.slot_of(data.actions)
        probs = None
        if data.logging_probs is not None:
            probs = np.where(self.valid, np.take_along_axis(data.logging_probs, self.items, 1), 0)
        return LoggedBandit(
            data.contexts,
            logged,
            data.propensities,
            data.rewards,
            self.n_slots,
            logging_probs=probs,
            positions=data.positions,
            candidates=self.valid,
        )
