"""An online contextual-bandit environment that hides the labels.

[`BanditEnvironment`][opboost.simulation.environment.BanditEnvironment] is built from labelled rows
(X, y) and a reward structure (see [`reward_table`][opboost.simulation.supervised.reward_table]). It
shows one context at a time and answers ``reward(action)`` once, for the current row only. The
labels and the reward table live in a closure, not in attributes; reading ``env.y``, ``env.labels``
or ``env.rewards``, asking for a second reward of the same row, or asking before a context was shown
raises [`HiddenLabelError`][opboost.api.exceptions.HiddenLabelError]. Orderings (one random
permutation per pass) follow a seed.

Evaluation data (whether each chosen action was the best one) is recorded per step and
revealed only through
[`BanditEnvironment.history`][opboost.simulation.environment.BanditEnvironment.history], which
refuses while rows remain.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from opboost.api.exceptions import HiddenLabelError, InvalidParameterError
from opboost.api.validation import check_random_state, check_scalar
from opboost.simulation.supervised import reward_table

__all__ = ["BanditEnvironment", "HiddenLabelError"]


_HIDDEN = ("y", "labels", "label", "rewards", "reward_table", "table")


class BanditEnvironment:
    """Stream of contexts from (X, y) that reveals only the reward of the chosen action.

    Parameters
    ----------
    X
        (n, d) dense array of contexts.
    y
        labels in the form ``reward`` expects ((n,) classes, or (n, K) 0/1 for multilabel).
    reward
        "multiclass", "multilabel" or a (classes x actions) matrix.
    n_actions
        K; inferred from ``reward`` / ``y`` when None.
    n_passes
        passes over the data, each in a fresh random order.
    shuffle
        permute rows each pass (else the given order, repeated).
    random_state
        seed of the orderings.

    Notes
    -----
    Iterating yields ``(t, x_t)``; then ``reward(action)`` may be called once.
    """

    def __init__(
        self,
        X: Any,
        y: Any,
        *,
        reward: Any = "multiclass",
        n_actions: int | None = None,
        n_passes: int = 1,
        shuffle: bool = True,
        random_state: Any = None,
    ) -> None:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise InvalidParameterError(
                f"BanditEnvironment: X must be a 2-D (n, d) array. Got shape {X.shape}."
            )
        check_scalar(n_passes, "n_passes", "BanditEnvironment", kind=int, low=1)
        table = reward_table(y, reward, n_actions)
        if table.shape[0] != X.shape[0]:
            raise InvalidParameterError(
                f"BanditEnvironment: X has {X.shape[0]} rows but y has {table.shape[0]}; "
                f"pass one label per row."
            )
        rng = check_random_state(random_state)
        n = X.shape[0]
        order = np.concatenate(
            [rng.permutation(n) if shuffle else np.arange(n) for _ in range(n_passes)]
        )
        best = table.max(axis=1)
        n_steps, n_actions = len(order), table.shape[1]
        rows = order.tolist()  # Python ints index faster than numpy scalars
        # per step, filled as rewards are asked; arrays only in history()
        chosen, got, optimal = [-1] * n_steps, [0.0] * n_steps, [False] * n_steps
        t, answered = -1, True

        def step() -> np.ndarray | None:
            nonlocal t, answered
            if not answered:
                raise HiddenLabelError(
                    f"BanditEnvironment: the reward of step {t} was never asked; "
                    f"call env.reward(action) once per context."
                )
            t += 1
            if t >= n_steps:
                t = n_steps
                return None
            answered = False
            return X[rows[t]]

        def answer(action: int) -> float:
            nonlocal answered
            if t < 0 or t >= n_steps:
                raise HiddenLabelError("BanditEnvironment: no current context; iterate first.")
            if answered:
                raise HiddenLabelError(
                    f"BanditEnvironment: step {t} already revealed the reward of action "
                    f"{int(chosen[t])}; the bandit setting shows one reward per context."
                )
            if not (
                (type(action) is int or isinstance(action, int | np.integer))
                and 0 <= action < n_actions
            ):
                raise InvalidParameterError(
                    f"BanditEnvironment.reward: action must be an int in [0, "
                    f"{n_actions}). Got {action!r}."
                )
            row = rows[t]
            r = float(table[row, action])
            answered = True
            chosen[t], got[t], optimal[t] = int(action), r, bool(r >= best[row])
            return r

        def history() -> dict[str, np.ndarray]:
            if t < n_steps:
                raise HiddenLabelError(
                    "BanditEnvironment.history: the run is not finished; evaluation data is "
                    "revealed only after the last context."
                )
            return {
                "actions": np.array(chosen, dtype=np.int64),
                "rewards": np.array(got, dtype=np.float64),
                "optimal": np.array(optimal, dtype=bool),
                "reward_table": table[order],
            }

        object.__setattr__(self, "_step", step)
        object.__setattr__(self, "_answer", answer)
        object.__setattr__(self, "_history", history)
        object.__setattr__(self, "n_actions", int(table.shape[1]))
        object.__setattr__(self, "n_features", int(X.shape[1]))
        object.__setattr__(self, "n_steps", len(order))

    def __getattr__(self, name: str) -> Any:
        if name in _HIDDEN:
            raise HiddenLabelError(
                f"BanditEnvironment hides {name!r}: a bandit learner may only see contexts "
                f"and the reward of the action it chose (env.reward(action))."
            )
        raise AttributeError(f"'BanditEnvironment' object has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("BanditEnvironment is read-only.")

    def __reduce__(self) -> Any:
        raise HiddenLabelError("BanditEnvironment cannot be pickled or copied: it hides labels.")

    def __iter__(self) -> Iterator[tuple[int, np.ndarray]]:
        t = 0
        while (x := self._step()) is not None:
            yield t, x
            t += 1

    def __len__(self) -> int:
        return self.n_steps

    def reward(self, action: int) -> float:
        """The reward of ``action`` for the current context; once per context."""
        return self._answer(action)

    def history(self) -> dict[str, np.ndarray]:
        """Per step: chosen ``actions``, their ``rewards``, ``optimal`` flags and the full
        ``reward_table`` row (T, K) of every step's context; only after the run."""
        return self._history()
