"""Open Bandit Pipeline's bandit-feedback dict, read and written without importing obp.

obp's keys: ``n_rounds``, ``n_actions``, ``context`` (n, d), ``action`` (n,), ``reward`` (n,),
``pscore`` (n,), and optionally ``position`` (n,) (slot indices, 0-based), ``action_context``
(K, d_a) and ``pi_b`` (n, K, L), the logging distribution of which row i uses slot
``position[i]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from opboost.api.data.field_checks import as_real, check_positions

__all__ = ["REQUIRED_KEYS", "feedback_fields", "logging_slot"]

REQUIRED_KEYS = ("n_actions", "context", "action", "reward", "pscore")


def feedback_fields(bandit_feedback: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments of ``LoggedBandit`` for obp's dict (validated there)."""
    missing = [k for k in REQUIRED_KEYS if k not in bandit_feedback]
    if missing:
        raise ValueError(
            f"LoggedBandit.from_obp: bandit_feedback lacks key(s) {missing}; expected "
            f"Open Bandit Pipeline's dict with keys {list(REQUIRED_KEYS)}."
        )
    n_actions = bandit_feedback["n_actions"]
    if isinstance(n_actions, float | np.floating) and float(n_actions).is_integer():
        n_actions = int(n_actions)
    if isinstance(n_actions, bool) or not isinstance(n_actions, int | np.integer):
        raise ValueError(
            f"LoggedBandit.from_obp: n_actions must be an int >= 2. Got {n_actions!r}; "
            f"it is not truncated to an integer."
        )
    position = bandit_feedback.get("position")
    pi_b = bandit_feedback.get("pi_b")
    if pi_b is not None:
        pi_b = logging_slot(as_real("pi_b", pi_b), position)
    return {
        "contexts": bandit_feedback["context"],
        "actions": bandit_feedback["action"],
        "propensities": bandit_feedback["pscore"],
        "rewards": bandit_feedback["reward"],
        "n_actions": n_actions,
        "logging_probs": pi_b,
        "positions": position,
        "action_features": bandit_feedback.get("action_context"),
    }


def logging_slot(pi_b: np.ndarray, position: Any) -> np.ndarray:
    """The (n, K) logging distribution of each row's own slot: ``pi_b[i, :, position[i]]``
    for obp's (n, K, L) ``pi_b``; (n, K) and (n, K, 1) need no position."""
    if pi_b.ndim != 3:
        return pi_b
    if pi_b.shape[2] == 1:
        return pi_b[..., 0]
    if position is None:
        raise ValueError(
            f"LoggedBandit.from_obp: pi_b has shape {pi_b.shape}, {pi_b.shape[2]} slots "
            f"(positions), but the dict has no position; obp reads row i's logging "
            f"distribution from pi_b[i, :, position[i]]. Pass position (n,), or one slot's "
            f"pi_b of shape (n, K) or (n, K, 1)."
        )
    positions = check_positions(position, pi_b.shape[0])
    bad = positions >= pi_b.shape[2]
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"LoggedBandit.from_obp: position index {i} has {int(positions[i])}, but pi_b "
            f"has shape {pi_b.shape}, only {pi_b.shape[2]} slots; positions must be in "
            f"[0, {pi_b.shape[2]})."
        )
    return pi_b[np.arange(pi_b.shape[0]), :, positions]
