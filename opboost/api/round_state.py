"""The per-round state an objective computes once per round: ``RoundState`` (and
``ActionState`` for per-action coefficients).

A state built by ``opboost.api.objective.Objective.round_state`` does not hold the
gradient g = e_{a_i} - pi(x_i): the per-round methods read it a block of rows at a time
from the policy (``opboost.api.numerics.row_blocks``), and ``state.g`` builds it on first use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from opboost.api.numerics.row_blocks import gradient_products, logged_gradient

__all__ = ["ActionState", "RoundState"]


@dataclass(frozen=True, eq=False)
class RoundState:
    """Everything one round needs about the current ensemble, computed once.

    ``scores`` F (n, K); ``probs`` softmax(F) (n, K); ``coef`` c (n,); ``actions`` (n,);
    ``pi_logged`` pi(a_i|x_i) (n,); ``g`` e_{a_i} - pi(x_i) (n, K); ``xi`` and ``sigma`` (n,);
    ``log_norm`` logsumexp(F_i) (n,), so log pi(a_i|x_i) = F[i, a_i] - log_norm[i] without
    underflow.

    ``g`` may be given as None: it is then built from ``probs`` and ``actions`` on first use.
    ``Objective.round_state`` does so, and the per-round methods read g through
    ``gradient_products`` and ``gradient_rows``, a block of rows at a time, so a fit
    never holds it whole.
    """

    scores: np.ndarray
    probs: np.ndarray
    coef: np.ndarray
    actions: np.ndarray
    pi_logged: np.ndarray
    g: np.ndarray
    xi: np.ndarray
    sigma: np.ndarray
    log_norm: np.ndarray

    @property
    def log_pi_logged(self) -> np.ndarray:
        """log pi(a_i|x_i), shape (n,), from the scores (never log of an underflowed 0)."""
        return self.scores[np.arange(self.n), self.actions] - self.log_norm

    @property
    def n(self) -> int:
        return int(self.scores.shape[0])

    def gradient_products(self, other: np.ndarray | None = None) -> np.ndarray:
        """sum_a g_{i,a} other_{i,a} per row (n,) for ``other`` (n, K); ||g_i||^2 for None."""
        g = self.__dict__.get("_g")
        if g is None:
            return gradient_products(self.probs, self.actions, other)
        return np.einsum("ij,ij->i", g, g if other is None else other)

    def gradient_rows(self, rows: slice) -> np.ndarray:
        """g on a slice of rows, (m, K) (a new array when g is not held)."""
        g = self.__dict__.get("_g")
        return logged_gradient(self.probs, self.actions, rows) if g is None else g[rows]


class _LoggedGradient:
    """``RoundState.g``: the array given, or built from probs and actions on first use."""

    def __get__(self, state: Any, owner: Any = None) -> Any:
        if state is None:
            return self
        g = state.__dict__.get("_g")
        if g is None:
            g = state.__dict__["_g"] = logged_gradient(state.probs, state.actions)
        return g

    def __set__(self, state: Any, value: Any) -> None:  # the dataclass __init__ only
        state.__dict__["_g"] = value


# After the decorator: the field ``g`` stays in the generated __init__, which stores it here.
RoundState.g = _LoggedGradient()  # type: ignore[assignment]


@dataclass(frozen=True, eq=False)
class ActionState(RoundState):
    """A ``RoundState`` for per-action coefficients: ``coef`` is the row-centred matrix
    Gamma (n, K); ``direction`` u = -n dR/dF (n, K); ``kappa`` the curvature (n,) of the
    smoothness bound (``xi`` is 1 and ``sigma`` is ``kappa``; neither is used)."""

    direction: np.ndarray
    kappa: np.ndarray
